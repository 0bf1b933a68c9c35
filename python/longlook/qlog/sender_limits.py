"""What held a QUIC sender back, read from its qlog: its congestion window, the peer's flow
control, or neither (the application had nothing to send). For a download that stayed below
its path's rate with no party's CPU saturated (analyses/matrix/perf.py): the regime a slow
cell is in.

- **window**: for at least half of the transfer, as much was in flight as the congestion
  window allowed (within a margin of a few packets). `recovery:metrics_updated`'s
  `congestion_window` and `bytes_in_flight`, each value held until the next event (the
  share is of time, not of events, which come in bursts).
- **flow control**: the window was not full, and the sender said it was blocked by flow
  control (DATA_BLOCKED or STREAM_DATA_BLOCKED frames in its `transport:packet_sent`, RFC
  9000 §4.1: a sender SHOULD send them when it has data flow control keeps back).
- **application**: neither, where the log lists the frames each packet carried (so a
  BLOCKED frame would show); a stack that never sends BLOCKED frames (quinn only reads
  them) would hide flow control here, which the page's drill-down can tell.
- **flow control or application**: neither, and the log lists no frames (our endpoint's):
  the two cannot be told apart from it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from .reader import QlogFile

_METRICS = "recovery:metrics_updated"
_SENT = "transport:packet_sent"
BLOCKED = ("data_blocked", "stream_data_blocked")
# the window counts as full within this many bytes of it (a few packets the pacer or the
# next ACK has not let out yet), or within 10% of a large one
FULL_MARGIN_BYTES = 3600
FULL_SHARE = 0.9
# the window held the sender when it was full this share of the transfer's time
WINDOW_LIMITED = 0.5
MIN_SAMPLES = 3  # metrics events needed to say anything


@dataclass(frozen=True)
class SenderLimits:
    samples: int  # metrics events within the transfer
    window_full_share: float  # of the transfer's time, the window full
    blocked_frames: int  # DATA_BLOCKED + STREAM_DATA_BLOCKED sent
    frames_logged: bool  # the log lists the frames of the packets it sent

    @property
    def regime(self) -> str:
        """window, flow control, application, flow control or application; "" when the log has
        too few metrics to tell."""
        if self.samples < MIN_SAMPLES:
            return ""
        if self.window_full_share >= WINDOW_LIMITED:
            return "window"
        if self.blocked_frames:
            return "flow control"
        return "application" if self.frames_logged else "flow control or application"

    def as_dict(self) -> dict:
        return {**asdict(self), "regime": self.regime}


def _full(cwnd: float, in_flight: float) -> bool:
    return in_flight >= min(FULL_SHARE * cwnd, cwnd - FULL_MARGIN_BYTES)


def _sent_bytes(data: dict) -> float:
    """What a sent packet adds to the bytes in flight: its length, or nothing for a packet of
    ACK and padding frames only (not congestion controlled, RFC 9002 §2)."""
    frames = data.get("frames")
    if (
        isinstance(frames, list)
        and frames
        and all(isinstance(f, dict) and f.get("frame_type") in ("ack", "padding") for f in frames)
    ):
        return 0.0
    raw, header = data.get("raw") or {}, data.get("header") or {}
    return float(raw.get("length") or header.get("length") or 0)


def sender_limits(log: QlogFile) -> SenderLimits:
    """The sender's limits over its transfer: from its first metrics event with bytes in
    flight to the last packet it sent. A stack logs its metrics when they change on an ACK or
    a loss, rarely on each packet sent: between two metrics events the bytes in flight grow by
    each packet sent (else the share would be read at the moments just after ACKs freed the
    window, and a full window would look empty)."""
    sent = [e for e in log.events if e.get("name") == _SENT]
    frames_logged = any("frames" in (e.get("data") or {}) for e in sent)
    blocked = sum(
        1
        for e in sent
        for f in (e.get("data") or {}).get("frames") or []
        if isinstance(f, dict) and f.get("frame_type") in BLOCKED
    )
    timeline = sorted(
        (
            (float(e["time"]), e.get("name"), e.get("data") or {})
            for e in log.events
            if e.get("name") in (_METRICS, _SENT) and isinstance(e.get("data"), dict) and "time" in e
        ),
        key=lambda x: x[0],
    )
    points, cwnd, in_flight, samples = [], None, None, 0
    for t, kind, data in timeline:
        if kind == _METRICS:
            cwnd = data.get("congestion_window", cwnd)
            in_flight = data.get("bytes_in_flight", in_flight)
        elif in_flight is not None:
            in_flight = in_flight + _sent_bytes(data)
        # the transfer starts with the first bytes in flight
        if cwnd is None or in_flight is None or not (points or in_flight > 0):
            continue
        points.append((t, float(cwnd), float(in_flight)))
        samples += kind == _METRICS
    end = max((float(e["time"]) for e in sent), default=None)
    if not points or end is None:
        return SenderLimits(0, 0.0, blocked, frames_logged)
    points = [p for p in points if p[0] <= end]
    full = total = 0.0
    for (t, c, b), nxt in zip(points, [*points[1:], (end, 0.0, 0.0)]):
        dt = max(0.0, nxt[0] - t)
        total += dt
        full += dt if _full(c, b) else 0.0
    return SenderLimits(samples, full / total if total > 0 else 0.0, blocked, frames_logged)
