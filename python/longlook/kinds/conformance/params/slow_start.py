"""Slow-start exit: how far the round-trip time had risen over its minimum when the sender
left slow start, against HyStart++ (RFC 9406 §4.2), which leaves slow start once the RTT of
a round rises by eta = clamp(min_rtt / 8, 4 ms, 16 ms).

The exit is the first transition out of SlowStart (the log's, or derived from its metrics),
else the first ssthresh set. An exit by loss on a path whose RTT never rose by eta (a
shallow buffer) is what HyStart++ does too; one that came only after the RTT had risen well
past eta (a deep buffer filled) deviates: HyStart++ would have left earlier. BBR's Startup
ends on a bandwidth plateau, not by HyStart++: not measurable.
"""

from __future__ import annotations

import numpy as np

from .result import ParamResult, judged, not_measurable, within
from .trace import ConnTrace

PARAMETER = "slow_start_exit_rtt_rise"
UNIT = "ms"
TOLERANCE = "RTT rise at the exit at most 2 x eta + 5 ms (sampling, one round of lag)"
GROWTH_STATES = ("SlowStart",)


def bound(eta: float, tcp: bool = False) -> tuple[float, float]:
    """What conforms: an RTT rise of at most 2 x eta + 5 ms at the exit (its reference is eta)."""
    return -np.inf, 2 * eta + 5.0


def eta_ms(min_rtt_ms: float) -> float:
    return float(np.clip(min_rtt_ms / 8.0, 4.0, 16.0))


def exit_time(tr: ConnTrace) -> tuple[float, str] | None:
    s = tr.states
    seen_ss = False
    for r in s.itertuples():
        if r.new in GROWTH_STATES:
            seen_ss = True
        elif seen_ss and r.old in GROWTH_STATES and r.new not in ("ApplicationLimited",):
            return float(r.t_ms), str(r.trigger or r.new)
    ss = tr.metrics.dropna(subset=["ssthresh"])
    if not ss.empty:
        return float(ss["t_ms"].iloc[0]), "ssthresh_set"
    return None


def slow_start_exit(tr: ConnTrace, cc: str = "cubic") -> ParamResult:
    if cc.startswith("bbr"):
        return not_measurable(PARAMETER, UNIT, f"{cc} leaves Startup on a bandwidth plateau, not by HyStart++")
    found = exit_time(tr)
    min_rtt = tr.min_rtt_ms()
    if min_rtt is None:
        return not_measurable(PARAMETER, UNIT, "no RTT sample in the log")
    eta = eta_ms(min_rtt)
    if found is None:
        return not_measurable(PARAMETER, UNIT, "the sender never left slow start", eta, TOLERANCE)
    t, how = found
    m = tr.metrics
    rtt = m[(m["t_ms"] <= t)]["latest_rtt_ms"].dropna()
    rtt = rtt[rtt > 0]
    if rtt.empty:
        return not_measurable(PARAMETER, UNIT, "no RTT sample before the exit", eta, TOLERANCE)
    # the RTT of the last round before the exit: samples of the last min-RTT before it
    last_round = m[(m["t_ms"] <= t) & (m["t_ms"] >= t - min_rtt)]["latest_rtt_ms"].dropna()
    rise = float((last_round.max() if len(last_round) else rtt.iloc[-1]) - min_rtt)
    loss_before = bool((tr.losses <= t).any() and (tr.losses >= t - 2 * min_rtt).any())
    return judged(
        PARAMETER,
        max(rise, 0.0),
        eta,
        UNIT,
        within(max(rise, 0.0), bound(eta)),
        TOLERANCE,
        f"left slow start at {t:.0f} ms ({how}{', a loss just before' if loss_before else ''}); "
        f"min RTT {min_rtt:.1f} ms",
    )
