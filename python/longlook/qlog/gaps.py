"""The longest silence a receiver met: the largest gap between consecutive packets it
received, from its own qlog (`transport:packet_received`, ms from the log's start). A path
that changed under a connection (a NAT rebinding, a handover) shows as such a gap: the
packets in flight to the old path lost, the sender's loss detection, the new path's
validation. It is the stall the receiver's application met, whatever caused it."""

from __future__ import annotations

from dataclasses import dataclass

from .reader import QlogFile


@dataclass(frozen=True)
class Gap:
    ms: float  # the gap's length
    from_ms: float  # the last packet before it (ms on the log's clock)
    packets: int  # packets received in all


def longest_receive_gap(log: QlogFile) -> Gap | None:
    """The largest gap between packets received; None with fewer than two."""
    times = sorted(
        float(e["time"]) for e in log.named("transport:packet_received") if isinstance(e.get("time"), (int, float))
    )
    if len(times) < 2:
        return None
    i = max(range(len(times) - 1), key=lambda k: times[k + 1] - times[k])
    return Gap(round(times[i + 1] - times[i], 3), round(times[i], 3), len(times))
