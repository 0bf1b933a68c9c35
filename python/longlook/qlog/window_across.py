"""A QUIC server's congestion window across a change of its peer's address, read from any
stack's qlog (RFC 9000 §9.4: an endpoint resets its congestion controller on a new address,
and may keep it when only the port changed). Our endpoint says when it makes a controller
(qlog.controllers); the other stacks do not, so the change is read from what every stack
logs: the first PATH_CHALLENGE the server sent (it has seen the new address), and its
`recovery:metrics_updated` windows around it.

What the windows can say, and nothing more:
- a controller per path: where the log names the path of each window (gm-quic's, whose paths
  each have their own controller), a window on a path first seen at the change is a new
  controller, with its first window;
- reset: the window went back to the stack's initial window (the log's first, within a band
  for a new path's smaller datagrams: quic-go starts a path at 32 x 1200 bytes where its
  first path had 32 x 1280) within the horizon;
- reduced: it fell, but not to the initial window (a loss response: packets the NAT sent to
  a dead binding are lost), with how many reductions (those within a millisecond count once)
  and the lowest window against the one before;
- kept: it did not fall.
A window that was near the initial one already cannot show a reset: said so."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from .reader import QlogFile

_METRICS = "recovery:metrics_updated"
_SENT = "transport:packet_sent"

# the window in effect this long before the challenge is the one before the change: the
# server may reset on the first packet from the new address, just before it challenges
LEAD_MS = 20.0
# how long after the challenge a reset or a reduction counts as the change's: a path validates
# within a round trip or two, and later reductions are the transfer's own
HORIZON_MS = 500.0
# a reset lands here, as a fraction of the log's first window
INITIAL_BAND = (0.85, 1.05)
# a window below this many times the initial one before the change cannot show a reset
DISTINGUISHABLE = 1.5


@dataclass(frozen=True)
class WindowAcross:
    challenge_ms: float  # the server's first PATH_CHALLENGE (the log's clock)
    initial: int  # the log's first window (bytes)
    before: int | None  # the window in effect LEAD_MS before the challenge
    outcome: str  # "new controller", "reset", "reduced", "kept", "indistinct"
    lowest: int | None  # the lowest window within the horizon (new controller: its first)
    lowest_at_ms: float | None  # when, from the challenge
    reductions: int  # reductions within the horizon (one per millisecond)

    def as_dict(self) -> dict:
        return asdict(self)


def _path_key(value) -> str | None:
    """A log's path name without its state marks (gm-quic writes `a<->b` and `a---b`)."""
    if not isinstance(value, str) or not value:
        return None
    return value.replace("<->", " ").replace("---", " ")


def _challenge_ms(log: QlogFile) -> float | None:
    for e in log.events:
        if e.get("name") != _SENT or not isinstance(e.get("time"), (int, float)):
            continue
        frames = (e.get("data") or {}).get("frames") or []
        if any(isinstance(f, dict) and f.get("frame_type") == "path_challenge" for f in frames):
            return float(e["time"])
    return None


def _windows(log: QlogFile) -> list[tuple[float, int, str | None]]:
    out = []
    for e in log.events:
        data = e.get("data") or {}
        if e.get("name") == _METRICS and isinstance(e.get("time"), (int, float)):
            w = data.get("congestion_window")
            if isinstance(w, (int, float)) and not isinstance(w, bool):
                out.append((float(e["time"]), int(w), _path_key(e.get("path"))))
    return out


def window_across(log: QlogFile) -> WindowAcross | None:
    """The server's window across the change its first PATH_CHALLENGE shows; None when it
    sent none (nothing changed, or the stack logs no frames) or logged no window."""
    at = _challenge_ms(log)
    windows = _windows(log)
    if at is None or not windows:
        return None
    initial = windows[0][1]
    start, end = at - LEAD_MS, at + HORIZON_MS
    earlier = [w for w in windows if w[0] <= start]
    before = earlier[-1] if earlier else None
    seen = {w[2] for w in earlier}
    new_path = [w for w in windows if start < w[0] <= end and w[2] is not None and w[2] not in seen]
    if new_path and None not in seen:
        t, first, _ = new_path[0]
        return WindowAcross(at, initial, before[1] if before else None, "new controller", first, t - at, 0)
    same = [w for w in windows if start < w[0] <= end and (before is None or w[2] == before[2])]
    low, high = INITIAL_BAND
    reductions, last, lowest, reset = 0, before[1] if before else None, None, False
    last_cut_ms = None
    for t, w, _ in same:
        if last is not None and w < last:  # a cut (growing back through the band is not one)
            if last_cut_ms is None or t - last_cut_ms > 1.0:
                reductions += 1
            last_cut_ms = t
            reset = reset or low * initial <= w <= high * initial
        if lowest is None or w < lowest[1]:
            lowest = (t, w)
        last = w
    prior = before[1] if before else None
    if lowest is None or prior is None or lowest[1] >= prior:
        return WindowAcross(at, initial, prior, "kept", None, None, 0)
    if prior < DISTINGUISHABLE * initial:
        outcome = "indistinct"
    else:
        outcome = "reset" if reset else "reduced"
    return WindowAcross(at, initial, prior, outcome, lowest[1], lowest[0] - at, reductions)
