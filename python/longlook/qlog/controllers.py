"""A QUIC sender's congestion controller across a path change, from its own qlog. Our
endpoint logs `longlook:congestion_control` each time quinn makes a controller for the
connection: once at its start, and again for a new path when the peer's address changed
(RFC 9000 §9.4: an endpoint resets its congestion controller on a new address, and may keep it
when only the port changed). The window just before the new controller and its first window
show the reset; a single controller means the state was kept across whatever moved. Other
stacks log no such event: nothing is said of them."""

from __future__ import annotations

from dataclasses import dataclass

from .reader import QlogFile

_MADE = "longlook:congestion_control"
_METRICS = "recovery:metrics_updated"


@dataclass(frozen=True)
class ControllerChange:
    t_ms: float  # when the new controller was made (ms on the log's clock)
    cwnd_before: int | None  # the old controller's last window (bytes)
    cwnd_after: int | None  # the new one's first window


def controllers(log: QlogFile) -> tuple[int, list[ControllerChange]] | None:
    """How many controllers the connection had, and each change after the first; None when
    the log does not say (not our endpoint's). Read in file order, which is the order they
    were logged in: the old controller's last window can carry the new one's timestamp."""
    made, changes = 0, []
    last: int | None = None
    pending: tuple[float, int | None] | None = None  # a change waiting for its first window
    for e in log.events:
        if e.get("name") == _MADE and isinstance(e.get("time"), (int, float)):
            made += 1
            if made > 1:
                pending = (round(float(e["time"]), 3), last)
        elif e.get("name") == _METRICS and isinstance((e.get("data") or {}).get("congestion_window"), int):
            last = int(e["data"]["congestion_window"])
            if pending is not None:
                changes.append(ControllerChange(pending[0], pending[1], last))
                pending = None
    if pending is not None:
        changes.append(ControllerChange(pending[0], pending[1], None))
    return (made, changes) if made else None
