"""The longest silence a receiver met: the largest gap between consecutive packets it
received, from its own qlog (`transport:packet_received`, ms from the log's start). A path
that changed under a connection (a NAT rebinding, a handover) shows as such a gap: the
packets in flight to the old path lost, the sender's loss detection, the new path's
validation. It is the stall the receiver's application met, whatever caused it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .reader import RECORD_SEPARATOR, QlogFile

_RECEIVED = b'"name":"transport:packet_received"'
_TIME = re.compile(rb'"time":\s*([0-9.eE+-]+)')


@dataclass(frozen=True)
class Gap:
    ms: float  # the gap's length
    from_ms: float  # the last packet before it (ms on the log's clock)
    packets: int  # packets received in all


def longest_receive_gap(log: QlogFile) -> Gap | None:
    """The largest gap between packets received; None with fewer than two."""
    return _longest(
        [float(e["time"]) for e in log.named("transport:packet_received") if isinstance(e.get("time"), (int, float))]
    )


def longest_receive_gap_in(path: Path) -> Gap | None:
    """`longest_receive_gap` of a file, reading only the received packets' times (a 10 MB
    download's trace is 1.7 MB of JSON: parsing all of it cost 50-60 ms a run)."""
    times = []
    for record in Path(path).read_bytes().split(RECORD_SEPARATOR):
        if _RECEIVED in record and (m := _TIME.search(record)):
            try:
                times.append(float(m.group(1)))
            except ValueError:
                continue  # a record cut short
    return _longest(times)


def _longest(times: list[float]) -> Gap | None:
    times = sorted(times)
    if len(times) < 2:
        return None
    i = max(range(len(times) - 1), key=lambda k: times[k + 1] - times[k])
    return Gap(round(times[i + 1] - times[i], 3), round(times[i], 3), len(times))
