"""Kakhki Fig. 4 (throughput of each flow over time, measured at the router) and Fig. 5
(congestion window of each flow over time, from the server's logs), as inline SVG."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from ...render.figures import to_svg  # noqa: E402
from ...render.palette import MUTED, flow_colors  # noqa: E402


def _axes(title: str, ylabel: str):
    fig, ax = plt.subplots(figsize=(7.2, 2.6))
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("time (s)", fontsize=8)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.tick_params(labelsize=7)
    return fig, ax


def timeline_svg(
    timeline: pd.DataFrame, flows: list[str], title: str, element_id: str, capacity_mbit: float | None = None
) -> str:
    fig, ax = _axes(title, "throughput (Mbit/s)")
    colors = flow_colors(flows)
    for f in flows:
        d = timeline[timeline["flow"] == f]
        if d.empty:
            continue
        # repeat the last value at the end of its bin, so the last bin is drawn too
        width = float(d["t_s"].diff().min()) if len(d) > 1 else 1.0
        t = list(d["t_s"]) + [float(d["t_s"].iloc[-1]) + width]
        ax.step(t, list(d["mbit"]) + [d["mbit"].iloc[-1]], where="post", label=f, color=colors[f], linewidth=1.1)
    if capacity_mbit:
        ax.axhline(capacity_mbit, color=MUTED, linewidth=0.8, linestyle=":", label="link rate")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7, frameon=False, ncol=len(flows) + 1, loc="upper right")
    return to_svg(fig, element_id)


def cwnd_svg(
    cwnd: pd.DataFrame, flows: list[str], title: str, element_id: str, zoom: tuple[float, float] | None = None
) -> str:
    """`zoom` = (t0, t1): only that span (Fig. 5b, how fast each window grows)."""
    fig, ax = _axes(title, "cong. window (KB)")
    colors = flow_colors(flows)
    if zoom:
        cwnd = cwnd[(cwnd["t_s"] >= zoom[0]) & (cwnd["t_s"] <= zoom[1])]
        ax.set_xlim(*zoom)
    for f in flows:
        d = cwnd[cwnd["flow"] == f]
        if len(d):
            ax.step(d["t_s"], d["cwnd_bytes"] / 1000, where="post", label=f, color=colors[f], linewidth=0.9)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7, frameon=False, ncol=len(flows), loc="upper right")
    return to_svg(fig, element_id)
