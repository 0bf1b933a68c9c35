"""Figures like Chaudhary Fig. 12: CCDF of the maximum cross-correlation of F with B and S,
CCDF of its lag, and the CDF of the Granger p-values of F -> B and F -> S: ours are the
shift-null p of each session (`session.GRANGER_P`), not the F-test's p the paper plots, so
the dashed alpha line reads "rejected before Holm over B and S"."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...render.figures import plt, to_svg
from ...render.palette import MUTED, SERIES

COLORS = {"B": SERIES[0], "S": SERIES[1]}
LABELS = {"B": "quality drop B", "S": "stall S"}


def _ecdf(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = np.sort(values[~np.isnan(values)])
    return x, np.arange(1, len(x) + 1) / max(len(x), 1)


def _step(ax, values, effect: str, ccdf: bool) -> None:
    x, y = _ecdf(np.asarray(values, dtype=float))
    if not len(x):
        return
    if ccdf:  # P(X >= x)
        y = 1 - y + 1 / len(x)
    ax.step(x, y, where="post", color=COLORS[effect], label=f"{LABELS[effect]} (n={len(x)})")


def fig12(results: pd.DataFrame, alpha: float = 0.05) -> "plt.Figure":
    """Four panels from `session.analyze_sessions` output."""
    fig, axes = plt.subplots(1, 4, figsize=(13, 3.0))
    panels = [
        ("corr", "max cross-correlation with F", True),
        ("lag", "lag of the maximum (s)", True),
        ("pB", "Granger shift-null p, F -> B", False),
        ("pS", "Granger shift-null p, F -> S", False),
    ]
    for ax, (what, xlabel, ccdf) in zip(axes, panels):
        if what == "corr":
            for e in ("B", "S"):
                _step(ax, results.get(f"corr_{e}", []), e, ccdf)
        elif what == "lag":
            for e in ("B", "S"):
                _step(ax, pd.to_numeric(results.get(f"lag_{e}_s", pd.Series(dtype=float)), errors="coerce"), e, ccdf)
        else:
            e = what[1]
            _step(ax, results.get(f"p_{e}", []), e, ccdf)
            ax.axvline(alpha, color=MUTED, linestyle="--", linewidth=0.8)
            ax.set_xlim(0, 1)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("CCDF" if ccdf else "CDF")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
        if ax.has_data():
            ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    return fig


def fig12_svg(results: pd.DataFrame, element_id: str = "fallback-fig12", alpha: float = 0.05) -> str:
    return to_svg(fig12(results, alpha), element_id)
