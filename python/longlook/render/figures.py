"""Matplotlib figures rendered to inline SVG (every page is one self-contained file), and the
report's small multiples of each cell's distributions."""

from __future__ import annotations

import io
import re
from typing import Any, Sequence

import matplotlib

matplotlib.use("Agg")  # no display; must precede pyplot
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from .names import display_name  # noqa: E402
from .palette import SERIES as ARM_COLORS  # noqa: E402


def to_svg(fig: "plt.Figure", element_id: str) -> str:
    """The figure as an <svg> element (no XML prolog), text kept as text, with an id."""
    buf = io.StringIO()
    with plt.rc_context({"svg.fonttype": "none", "svg.hashsalt": "longlook"}):
        fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    svg = buf.getvalue()
    svg = svg[svg.index("<svg") :]
    return re.sub(r"^<svg", f'<svg id="{element_id}" class="figure"', svg, count=1)


def distribution_grid(
    panels: Sequence[Sequence[dict[str, Any] | None]],
    arms: Sequence[str],
    row_titles: Sequence[str],
    col_titles: Sequence[str],
    element_id: str,
    metric_label: str = "PLT (ms)",
) -> str:
    """Small multiples laid out like the heatmap: one panel per cell, a box and the points
    for each arm. `panels[r][c]` is None (no such cell) or {arm: array of values}."""
    nrows, ncols = len(panels), max(len(r) for r in panels)
    fig, axes = plt.subplots(nrows, ncols, figsize=(1.0 + 1.55 * ncols, 0.6 + 1.55 * nrows), squeeze=False)
    rng = np.random.default_rng(0)  # jitter only; fixed so the report is reproducible
    for r in range(nrows):
        for c in range(ncols):
            ax = axes[r][c]
            panel = panels[r][c] if c < len(panels[r]) else None
            ax.tick_params(labelsize=7)
            for side in ("top", "right"):
                ax.spines[side].set_visible(False)
            if panel is None:
                ax.set_axis_off()
                continue
            data = [np.asarray(panel.get(a, []), dtype=float) for a in arms]
            present = [i for i, d in enumerate(data) if len(d)]
            if present:
                ax.boxplot(
                    [data[i] for i in present],
                    positions=[i + 1 for i in present],
                    widths=0.55,
                    showfliers=False,
                    medianprops={"color": "black"},
                    boxprops={"linewidth": 0.8},
                    whiskerprops={"linewidth": 0.8},
                    capprops={"linewidth": 0.8},
                )
            for i, d in enumerate(data):
                if len(d):
                    ax.scatter(
                        i + 1 + rng.uniform(-0.18, 0.18, len(d)),
                        d,
                        s=7,
                        alpha=0.75,
                        color=ARM_COLORS[i % len(ARM_COLORS)],
                        linewidths=0,
                        zorder=3,
                    )
            ax.set_xticks(range(1, len(arms) + 1))
            ax.set_xticklabels([display_name(a) for a in arms], fontsize=7)
            ax.set_xlim(0.4, len(arms) + 0.6)
            if c == 0:
                ax.set_ylabel(f"{row_titles[r]}\n{metric_label}" if row_titles[r] else metric_label, fontsize=7)
            if r == 0 and col_titles[c]:
                ax.set_title(col_titles[c], fontsize=8)
    fig.tight_layout(pad=0.4, w_pad=0.6, h_pad=0.6)
    return to_svg(fig, element_id)
