"""Initial window: the first congestion window the sender logs, against RFC 9002 §7.2
(QUIC: min(10 x max_datagram_size, max(14720, 2 x max_datagram_size))) or RFC 6928
(TCP: min(10 x MSS, max(2 x MSS, 14600))), max_datagram_size = the sender's at the start."""

from __future__ import annotations

from .result import ParamResult, judged, not_measurable
from .trace import ConnTrace

PARAMETER = "initial_window"
UNIT = "bytes"
# one datagram either way: stacks round the window to whole packets of their own size
TOLERANCE = "within one max datagram of the reference"


def reference_bytes(max_datagram: float, tcp: bool = False) -> float:
    if tcp:
        return min(10 * max_datagram, max(2 * max_datagram, 14600))
    return min(10 * max_datagram, max(14720, 2 * max_datagram))


def initial_window(tr: ConnTrace) -> ParamResult:
    mdg = tr.max_datagram()
    ref = reference_bytes(mdg, tr.is_tcp)
    cwnd = tr.metrics["cwnd"].dropna()
    if cwnd.empty:
        return not_measurable(PARAMETER, UNIT, "the log has no congestion window", ref, TOLERANCE)
    first = float(cwnd.iloc[0])
    logged = tr.info.get("initial_window_bytes")
    measured = float(logged) if logged else first
    return judged(PARAMETER, measured, ref, UNIT, abs(measured - ref) <= mdg, TOLERANCE,
                  f"max datagram {mdg:.0f} B; first logged window {first:.0f} B")
