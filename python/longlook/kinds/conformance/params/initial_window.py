"""Initial window: the first congestion window the sender logs, against RFC 9002 §7.2
(QUIC: min(10 x max_datagram_size, max(14720, 2 x max_datagram_size))) or RFC 6928
(TCP: min(10 x MSS, max(2 x MSS, 14600))), max_datagram_size = the sender's at the start.
A QUIC sender's max_datagram_size at the start is not logged by every stack, and its first
packets may carry two sizes: its data size and a path-MTU size it already probes or uses
(s2n-quic: 1200 and a 1472-byte probe; ngtcp2: 1200, then 1444 within 20 packets). The
window is judged against each size it sent first and the closest is named in the detail."""

from __future__ import annotations

from .result import ParamResult, judged, not_measurable, within
from .trace import ConnTrace

PARAMETER = "initial_window"
UNIT = "bytes"
# one datagram either way: stacks round the window to whole packets of their own size
TOLERANCE = "within one max datagram of the reference"


def reference_bytes(max_datagram: float, tcp: bool = False) -> float:
    if tcp:
        return min(10 * max_datagram, max(2 * max_datagram, 14600))
    return min(10 * max_datagram, max(14720, 2 * max_datagram))


def bound(reference: float, tcp: bool = False, max_datagram: float | None = None) -> tuple[float, float]:
    """What conforms: within one max datagram of the reference; where the datagram size is
    not known (the summary across runs), a tenth of the reference, which is 10 datagrams
    for every size up to 1472 bytes (1460 for TCP)."""
    slack = max_datagram if max_datagram else reference / 10
    return reference - slack, reference + slack


def initial_window(tr: ConnTrace) -> ParamResult:
    cwnd = tr.metrics["cwnd"].dropna()
    if cwnd.empty:
        mdg = tr.max_datagram()
        return not_measurable(
            PARAMETER, UNIT, "the log has no congestion window", reference_bytes(mdg, tr.is_tcp), TOLERANCE
        )
    first = float(cwnd.iloc[0])
    logged = tr.info.get("initial_window_bytes")
    measured = float(logged) if logged else first
    sizes = _start_sizes(tr)
    mdg = min(sizes, key=lambda size: abs(measured - reference_bytes(size, tr.is_tcp)))
    ref = reference_bytes(mdg, tr.is_tcp)
    alternatives = f" (of {', '.join(f'{x:.0f}' for x in sizes)} B sent first)" if len(sizes) > 1 else ""
    return judged(
        PARAMETER,
        measured,
        ref,
        UNIT,
        within(measured, bound(ref, tr.is_tcp, mdg)),
        TOLERANCE,
        f"max datagram {mdg:.0f} B{alternatives}; first logged window {first:.0f} B",
    )


def _start_sizes(tr: ConnTrace) -> list[float]:
    """The max_datagram_size values the sender could have meant at its start."""
    if tr.is_tcp or tr.info.get("mtu"):
        return [tr.max_datagram()]
    return sorted({tr.max_datagram(), *tr.first_datagram_sizes()})
