"""Each cell's series over the experiments, one panel per cell, arms in the palette's
colours, change points marked where the new segment starts."""

from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display; must precede pyplot
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ...render.figures import to_svg  # noqa: E402
from ...render.layout import DIM_TITLES, format_dim  # noqa: E402
from ...render.names import display_name  # noqa: E402
from ...render.palette import MUTED, SERIES  # noqa: E402
from .history import History  # noqa: E402


def _titles(h: History, cells: list[str]) -> dict[str, str]:
    """A panel's title: the dimensions that vary between the cells (the id is too long)."""
    dims = h.sides[0].cells.set_index("cell_id")["dims"].to_dict()
    keys = [
        k for k in dims[cells[0]] if k not in ("link", "workload") and len({repr(dims[c].get(k)) for c in cells}) > 1
    ]
    return {c: ", ".join(f"{DIM_TITLES.get(k, k)} {format_dim(k, dims[c].get(k))}" for k in keys) or c for c in cells}


def history_figure(h: History) -> "plt.Figure":
    cells = list(dict.fromkeys(s.cell_id for s in h.series))
    titles = _titles(h, cells)
    arms = list(dict.fromkeys(s.arm for s in h.series))
    ncols = min(3, len(cells))
    nrows = -(-len(cells) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(1.5 + 3.6 * ncols, 0.8 + 2.6 * nrows), squeeze=False)
    x = np.arange(len(h.sides))
    for i, cell in enumerate(cells):
        ax = axes[i // ncols][i % ncols]
        for s in (s for s in h.series if s.cell_id == cell):
            color = SERIES[arms.index(s.arm) % len(SERIES)]
            ax.plot(x, s.means, marker="o", ms=3.5, lw=1.2, color=color, label=display_name(s.arm))
            for cp in s.change_points:
                ax.axvline(cp.index - 0.5, color=color, ls="--", lw=1.0, alpha=0.8)
                ax.annotate(
                    f"{cp.change_pct:+.0f}%",
                    (cp.index - 0.5, 1.0),
                    xycoords=("data", "axes fraction"),
                    fontsize=7,
                    color=color,
                    ha="left",
                    va="top",
                )
        ax.set_title(titles[cell], fontsize=8)
        ax.set_xticks(x)
        ax.set_xticklabels(h.labels(), fontsize=6, rotation=45, ha="right")
        ax.tick_params(labelsize=7)
        ax.set_ylabel(f"{h.metric.title or h.metric.name} ({h.metric.unit})", fontsize=7)
        ax.grid(axis="y", color=MUTED, alpha=0.3, lw=0.5)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    for j in range(len(cells), nrows * ncols):
        axes[j // ncols][j % ncols].set_axis_off()
    axes[0][0].legend(fontsize=7, frameon=False)
    fig.tight_layout(pad=0.5)
    # the test, correction and permutations above the panels (saved with bbox_inches="tight")
    note = "\n".join(textwrap.fill(t, int(fig.get_figwidth() * 20)) for t in (h.method(), h.warning()) if t)
    fig.text(0.01, 1.0, note, fontsize=6, color=MUTED, ha="left", va="bottom")
    return fig


def history_svg(h: History, element_id: str = "history") -> str:
    return to_svg(history_figure(h), element_id)


def save_history_figure(h: History, path: str | Path) -> Path:
    """SVG, PNG or PDF by the file's suffix."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig = history_figure(h)
    fig.savefig(path, bbox_inches="tight", dpi=150)
    plt.close(fig)
    return path
