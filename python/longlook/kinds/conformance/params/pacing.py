"""Pacing: how the sender spaces its data packets, against RFC 9002 §7.7: a sender paces at
N x cwnd / smoothed_rtt (N = 1.25) and SHOULD limit bursts to the initial window (10
packets).

Measured: the 95th percentile of burst length, a burst being consecutive 1-RTT data
packets each sent within a fifth of the paced gap (size x srtt / (N x cwnd)) of the one
before. An unpaced, ack-clocked sender sends the packets an ACK frees back to back (and
more after an idle or a window jump); a paced one sends a few at a time. The median gap
over the paced gap is in the note. TCP: our server's log has no packets (a pcap would):
not measurable.
"""

from __future__ import annotations

import numpy as np

from .result import ParamResult, judged, not_measurable, within
from .trace import ConnTrace

PARAMETER = "pacing_burst_p95"
UNIT = "packets"
N = 1.25
REFERENCE = 10.0
TOLERANCE = "95% of bursts at most the initial window (10 packets)"
BURST_GAP = 0.2  # of the paced gap
MIN_PACKETS = 50


def bound(reference: float = REFERENCE, tcp: bool = False) -> tuple[float, float]:
    """What conforms: bursts (95th percentile) of at most the initial window."""
    return -np.inf, reference


def burst_lengths(close: np.ndarray) -> np.ndarray:
    """Lengths of runs of packets where close[i] says packet i+1 followed packet i at once."""
    lengths, run = [], 1
    for c in close:
        if c:
            run += 1
        else:
            lengths.append(run)
            run = 1
    lengths.append(run)
    return np.array(lengths)


def pacing(tr: ConnTrace) -> ParamResult:
    if tr.is_tcp:
        return not_measurable(PARAMETER, UNIT, "the TCP log has no per-packet times", REFERENCE, TOLERANCE)
    s = tr.sent
    s = s[(s["packet_type"].isin(["1rtt", "onertt"])) & s["ack_eliciting"] & (s["size"] >= 1000)]
    m = tr.metrics.dropna(subset=["cwnd", "srtt_ms"])
    if len(s) < MIN_PACKETS or m.empty:
        return not_measurable(
            PARAMETER,
            UNIT,
            f"fewer than {MIN_PACKETS} full-size data packets or no window and RTT in the log",
            REFERENCE,
            TOLERANCE,
        )
    t = s["t_ms"].to_numpy()
    start = t[0] + tr.first_rtt_ms()  # the first flight is the initial window, sent at once
    keep = t[1:] > start
    gaps, t1, size = np.diff(t)[keep], t[1:][keep], s["size"].to_numpy()[1:][keep]
    if gaps.size < MIN_PACKETS:
        return not_measurable(PARAMETER, UNIT, "too few data packets after the first round trip", REFERENCE, TOLERANCE)
    idx = np.searchsorted(m["t_ms"].to_numpy(), t1, side="right") - 1
    idx = np.clip(idx, 0, len(m) - 1)
    paced_gap = size * m["srtt_ms"].to_numpy()[idx] / (N * m["cwnd"].to_numpy()[idx])
    bursts = burst_lengths(gaps < BURST_GAP * paced_gap)
    p95 = float(np.percentile(bursts, 95))
    ratio = gaps / paced_gap
    return judged(
        PARAMETER,
        p95,
        REFERENCE,
        UNIT,
        within(p95, bound(REFERENCE)),
        TOLERANCE,
        f"{gaps.size} gaps, {bursts.size} bursts, largest {bursts.max()}; "
        f"median gap / paced gap {np.median(ratio[ratio < 10]) if (ratio < 10).any() else float('nan'):.2f}",
    )
