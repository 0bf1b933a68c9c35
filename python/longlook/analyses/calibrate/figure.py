"""Fig. 2's picture: one stacked bar per configuration, handshake / wait / receive."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display; must precede pyplot
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from ...render.palette import MUTED, SERIES  # noqa: E402

# every bar here is QUIC, so the phases take the palette's non-protocol colours
PHASE_STYLE = (
    ("handshake_ms", "handshake", MUTED),
    ("wait_ms", "wait (TTFB − handshake)", SERIES[4]),
    ("receive_ms", "receive (PLT − TTFB)", SERIES[2]),
)


def split_figure(means: pd.DataFrame, labels: list[str], title: str) -> "plt.Figure":
    """`means` as split.phase_means returns it; `labels` name its rows in order."""
    fig, ax = plt.subplots(figsize=(1.6 + 1.3 * len(means), 3.6))
    bottom = [0.0] * len(means)
    x = list(range(len(means)))
    for column, name, color in PHASE_STYLE:
        heights = [float(v) / 1000.0 for v in means[column]]
        ax.bar(x, heights, bottom=bottom, color=color, width=0.6, label=name)
        bottom = [b + h for b, h in zip(bottom, heights)]
    for i, (total, sd) in enumerate(zip(bottom, means["plt_sd"])):
        ax.errorbar(i, total, yerr=float(sd) / 1000.0 if pd.notna(sd) else 0.0, color="black", capsize=3, linewidth=0.8)
    ax.set_xticks(x, labels)
    ax.set_ylabel("time (s)")
    ax.set_title(title, fontsize=9)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.legend(fontsize=7, frameon=False, loc="upper right")
    fig.tight_layout()
    return fig


def save(fig: "plt.Figure", path: Path) -> Path:
    with plt.rc_context({"svg.fonttype": "none", "svg.hashsalt": "longlook"}):
        fig.savefig(path, bbox_inches="tight")
    plt.close(fig)
    return path
