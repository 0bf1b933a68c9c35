"""cwnd over time for QUIC and TCP on one plot (Kakhki Fig. 5), with loss events and state
changes marked: dots = loss events (QUIC loss batches; TCP retransmission counter
increments), ticks on the state strip below = state entries, coloured by state.
"""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ...qlog import QlogFile  # noqa: E402
from .trace import StateTrace  # noqa: E402

from ...render.palette import MUTED, PROTOCOL_COLORS, STATE_COLORS  # noqa: E402


def cwnd_series(log: QlogFile) -> tuple[list[float], list[float]]:
    """(time in s, cwnd in KB) from recovery:metrics_updated."""
    t, w = [], []
    for e in log.named("recovery:metrics_updated"):
        cw = (e.get("data") or {}).get("congestion_window")
        if cw is not None:
            t.append(e["time"] / 1000)
            w.append(cw / 1000)
    return t, w


def loss_times_s(log: QlogFile) -> list[float]:
    if log.protocol != "TCP":
        return [e["time"] / 1000 for e in log.named("recovery:packet_lost")]
    out, prev = [], 0
    for e in log.named("recovery:metrics_updated"):
        tr = (e.get("data") or {}).get("total_retrans")
        if tr is not None and tr > prev:
            out.append(e["time"] / 1000)
            prev = tr
    return out


def _value_at(ts: list[float], ws: list[float], x: float) -> float:
    v = ws[0] if ws else 0.0
    for t, w in zip(ts, ws):
        if t > x:
            break
        v = w
    return v


def cwnd_figure(logs: list[tuple[str, QlogFile]], title: str = "") -> "plt.Figure":
    """`logs` = [(label, log), ...], typically one QUIC and one TCP run of the same cell."""
    fig, (ax, strip) = plt.subplots(2, 1, figsize=(8, 3.8), sharex=True, gridspec_kw={"height_ratios": [5, 1.2]})
    for i, (label, log) in enumerate(logs):
        color = PROTOCOL_COLORS.get(log.protocol, f"C{i}")
        ts, ws = cwnd_series(log)
        if not ts:
            continue
        ax.step(ts, ws, where="post", color=color, lw=1.2, label=f"{label} cwnd")
        lt = loss_times_s(log)
        if lt:
            ax.plot(
                lt,
                [_value_at(ts, ws, x) for x in lt],
                "o",
                ms=3.5,
                mfc="none",
                mec=color,
                label=f"{label} loss events ({len(lt)})",
            )
        trace = StateTrace.from_qlog(log, label)
        ends = trace.times_ms[1:] + [trace.end_ms]
        for s, a, b in zip(trace.states, trace.times_ms, ends):
            strip.broken_barh([(a / 1000, max(b - a, 0.5) / 1000)], (i - 0.4, 0.8), color=STATE_COLORS.get(s, MUTED))
    strip.set_yticks(range(len(logs)), [label for label, _ in logs], fontsize=8)
    strip.set_xlabel("time (s)")
    ax.set_ylabel("cwnd (KB)")
    if title:
        ax.set_title(title, fontsize=10)
    if ax.get_legend_handles_labels()[0]:  # no cwnd in any log: no legend (not an empty one)
        ax.legend(fontsize=7, loc="upper left")
    seen = {s for _, log in logs for s in StateTrace.from_qlog(log, "").states}
    handles = [plt.Rectangle((0, 0), 1, 1, color=STATE_COLORS.get(s, "#555")) for s in sorted(seen)]
    strip.legend(
        handles,
        sorted(seen),
        fontsize=6,
        ncol=min(6, max(1, len(seen))),
        loc="upper center",
        bbox_to_anchor=(0.5, -0.9),
        frameon=False,
    )
    fig.tight_layout()
    return fig


def cwnd_figure_svg(logs: list[tuple[str, QlogFile]], title: str = "") -> str:
    fig = cwnd_figure(logs, title)
    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    plt.close(fig)
    svg = buf.getvalue()
    start = svg.find("<svg")
    return svg[start:] if start >= 0 else svg
