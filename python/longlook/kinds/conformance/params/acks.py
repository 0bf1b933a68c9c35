"""ACK frequency: data packets the sender sent per acknowledging packet it received, over
the transfer (the receiver's behaviour, seen from the sender's log), against RFC 9000
§13.2.2: a receiver acknowledges at least every second ack-eliciting packet (2). The
ACK-frequency extension may legitimately raise it: a ratio above the tolerance is
reported as a deviation from the base specification, with the figure.
TCP: our server's log counts no incoming segments: not measurable."""

from __future__ import annotations

from .result import ParamResult, judged, not_measurable, within
from .trace import ConnTrace

PARAMETER = "packets_per_ack"
UNIT = "packets"
REFERENCE = 2.0
LOW, HIGH = 1.0, 2.5
TOLERANCE = f"{LOW:g}-{HIGH:g} data packets per ack"
MIN_PACKETS = 50


def bound(reference: float = REFERENCE, tcp: bool = False) -> tuple[float, float]:
    """What conforms: one ACK every packet to every 2.5 packets (a little slack over 2)."""
    return LOW, HIGH


def ack_frequency(tr: ConnTrace) -> ParamResult:
    if tr.is_tcp:
        return not_measurable(PARAMETER, UNIT, "the TCP log counts no incoming segments", REFERENCE, TOLERANCE)
    s, r = tr.sent, tr.received
    data = s[s["packet_type"].isin(["1rtt", "onertt"]) & s["ack_eliciting"]]
    if len(data) < MIN_PACKETS:
        return not_measurable(PARAMETER, UNIT, f"fewer than {MIN_PACKETS} data packets", REFERENCE, TOLERANCE)
    t0, t1 = data["t_ms"].iloc[0], data["t_ms"].iloc[-1]
    # the acks of the last data packets come a round trip after them
    rx = r[r["packet_type"].isin(["1rtt", "onertt"]) & (r["t_ms"] > t0) & (r["t_ms"] <= t1 + tr.first_rtt_ms())]
    known = rx["has_ack"].notna().any()
    acks = int(rx["has_ack"].fillna(False).astype(bool).sum()) if known else len(rx)
    if acks == 0:
        return not_measurable(PARAMETER, UNIT, "no acknowledging packet received", REFERENCE, TOLERANCE)
    ratio = len(data) / acks
    how = "packets with an ACK frame" if known else "all 1-RTT packets received (the log lists no frames)"
    return judged(
        PARAMETER, ratio, REFERENCE, UNIT, within(ratio, bound()), TOLERANCE, f"{len(data)} data packets, {acks} {how}"
    )
