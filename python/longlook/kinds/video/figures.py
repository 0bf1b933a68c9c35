"""A run's playback timeline like Chaudhary et al. Fig. 4-5: buffer level and the bitrate
being played over real time, stalls shaded, and bytes received per protocol per second."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from ...render.figures import to_svg  # noqa: E402
from .traffic import bytes_per_second  # noqa: E402

PROTOCOL_COLORS = {"h3": "#1f77b4", "h2": "#d62728"}


def timeline_svg(series: pd.DataFrame, requests: pd.DataFrame, title: str, element_id: str) -> str:
    """`series`: the run's rows (name, t_s, value); `requests`: its rows of the requests table."""
    fig, (ax1, ax3) = plt.subplots(2, 1, figsize=(7.2, 3.8), sharex=True, gridspec_kw={"height_ratios": [2, 1]})
    get = lambda name: series[series["name"] == name].sort_values("t_s")  # noqa: E731
    buf, rate, stalled = get("buffer_s"), get("bitrate_mbit"), get("stalled")
    ax1.plot(buf["t_s"], buf["value"], color="#555555", linewidth=1.0, label="buffer (s)")
    ax1.set_ylabel("buffer (s)", fontsize=8)
    ax2 = ax1.twinx()
    ax2.step(rate["t_s"], rate["value"], where="post", color="#2ca02c", linewidth=1.2, label="bitrate played")
    ax2.set_ylabel("bitrate (Mbit/s)", fontsize=8)
    for t, v in zip(stalled["t_s"], stalled["value"]):
        if v:
            ax1.axvspan(t - 0.5, t + 0.5, color="#d62728", alpha=0.15, linewidth=0)
    ax1.set_title(title + " (stalls shaded)", fontsize=9)
    per = bytes_per_second(requests.to_dict("records")) if not requests.empty else {}
    bottom = None
    for proto, values in sorted(per.items()):
        kb = [v / 1000 for v in values]
        ax3.bar(
            [k + 0.5 for k in range(len(kb))],
            kb,
            width=1.0,
            bottom=bottom,
            label=proto,
            color=PROTOCOL_COLORS.get(proto, "#999999"),
        )
        bottom = kb if bottom is None else [a + b for a, b in zip(bottom, kb)]
    if per:
        ax3.legend(fontsize=7, frameon=False, loc="upper right")
    ax3.set_ylabel("KB / s", fontsize=8)
    ax3.set_xlabel("time since the run started (s)", fontsize=8)
    for ax in (ax1, ax2, ax3):
        ax.tick_params(labelsize=7)
    return to_svg(fig, element_id)
