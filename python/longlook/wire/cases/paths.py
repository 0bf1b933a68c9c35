"""The client's paths as the server sees them, for rebind-port, rebind-addr and
connection-migration: where the client's datagrams came from, when that changed, and
whether the server validated the new path (RFC 9000 9.3: a PATH_CHALLENGE to the new
address, the client's PATH_RESPONSE echoing its data) and data continued over it; and what
of the stream was left behind on the old address, never to arrive.

The address is read at the capture point: a capture on the server's side of the NAT (the
testbed's router) sees the rebinding the server sees."""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Callable

from ..model import ACK, ACK_ECN, NEW_CONNECTION_ID, ONE_RTT, PATH_CHALLENGE, PATH_RESPONSE, Capture, Datagram
from . import view
from .result import FAILED, CaseResult, failed, not_measurable, passed

Endpoint = tuple[str, int]


def show(e: Endpoint) -> str:
    return f"[{e[0]}]:{e[1]}" if ":" in e[0] else f"{e[0]}:{e[1]}"


@dataclass(frozen=True)
class Change:
    at: Datagram  # the client's first datagram from the new address
    old: Endpoint
    new: Endpoint
    old_dcid: str  # the DCID the client's 1-RTT packets used on the old path ('' if none)
    new_dcid: str

    @property
    def port_changed(self) -> bool:
        return self.old[1] != self.new[1]

    @property
    def addr_changed(self) -> bool:
        return self.old[0] != self.new[0]

    def __str__(self) -> str:
        return f"the client moved from {show(self.old)} to {show(self.new)} at {self.at.where}"


def _dcid(d: Datagram) -> str:
    return next((p.dcid for p in d.packets if p.type == ONE_RTT), "")


def changes(conn: Capture) -> list[Change]:
    """Each time the client's datagrams came from an address and port not seen before."""
    client = [d for d in conn.datagrams if view.sender(conn, d) == view.CLIENT]
    found, last_dcid, current = [], {}, None
    for i, d in enumerate(client):
        here = (d.src, d.sport)
        if current is not None and here not in last_dcid:
            new = view.first(_dcid(e) for e in client[i:] if (e.src, e.sport) == here and _dcid(e)) or ""
            found.append(Change(d, current, here, last_dcid.get(current, ""), new))
        last_dcid[here] = _dcid(d) or last_dcid.get(here, "")
        current = here
    return found


def stayed(conn: Capture) -> str:
    d = view.first(d for d in conn.datagrams if view.sender(conn, d) == view.CLIENT)
    return f"the client's address and port stayed {show((d.src, d.sport))} throughout" if d else "no client datagram"


def validated(conn: Capture, change: Change) -> CaseResult:
    """Did the server challenge the new path, the client answer, and data continue over it?"""
    after = conn.datagrams[conn.datagrams.index(change.at) :]
    to_new = [d for d in after if view.sender(conn, d) == view.SERVER and (d.dst, d.dport) == change.new]
    challenges = [(d, f.data) for d in to_new for p in d.packets for f in p.frames if f.type == PATH_CHALLENGE]
    hidden = sum(not p.decrypted for d in to_new for p in d.packets)
    if not challenges:
        if hidden:
            return not_measurable(
                f"{change}; no PATH_CHALLENGE to it seen, but {hidden} server packets to it were not decrypted"
            )
        kept = _to_old(conn, change, after)
        went_on = (
            f": it kept sending to the old address ({view.count(kept, 'datagram')} after the move)" if kept else ""
        )
        if to_new:  # followed the client without validating the new address (RFC 9000 9.3)
            went_on = f": it sent {view.count(len(to_new), 'datagram')} there unvalidated"
        return failed(f"{change}, and the server sent no PATH_CHALLENGE to the new address{went_on}")
    response = from_new(conn, change, PATH_RESPONSE, {data for _, data in challenges})
    if response is None:
        return failed(
            f"{change}; the server's PATH_CHALLENGE at {challenges[0][0].where} got no PATH_RESPONSE from there"
        )
    data = view.first(d for d in to_new for p in d.packets for f in p.frames if f.is_stream and f.length)
    if data is None:
        if hidden:
            return not_measurable(
                f"{change}; no STREAM data to it seen, but {hidden} server packets to it were not decrypted"
            )
        kept = _to_old(conn, change, conn.datagrams[conn.datagrams.index(response) :])
        went_on = (
            f"; the server kept sending to the old address ({view.count(kept, 'datagram')} after it)" if kept else ""
        )
        return failed(
            f"{change}; the path was validated (PATH_RESPONSE at {response.where}), but no STREAM data went over "
            f"it{went_on}"
        )
    so_far = (
        f"{change}; PATH_CHALLENGE at {challenges[0][0].where}, PATH_RESPONSE at {response.where}, "
        f"STREAM data to the new address from {data.where}{amplification(conn, change, response)}"
    )
    # said, not judged: a capture cut short would show a hole its end would have filled; a run
    # that stalled on one fails by its own status (the matrix's `completed`)
    lost = stranded(conn, change)
    return passed(f"{so_far}; {lost}" if lost else so_far)


Span = tuple[int, int]


def _union(spans: list[Span]) -> list[Span]:
    out: list[Span] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _minus(spans: list[Span], cover: list[Span]) -> list[Span]:
    left = []
    for a, b in spans:
        for c, d in cover:
            if d <= a or c >= b:
                continue
            if c > a:
                left.append((a, c))
            a = max(a, d)
            if a >= b:
                break
        if a < b:
            left.append((a, b))
    return left


def _acked(conn: Capture) -> list[Span]:
    """The server's 1-RTT packet numbers the client acknowledged, as [low, high + 1) spans."""
    return _union([(a, b + 1) for _, _, f in view.frames(conn, view.CLIENT, ACK, ACK_ECN) for a, b in f.acked])


def _is_acked(number: int | None, acked: list[Span]) -> bool:
    """Whether `number` lies in one of the sorted, disjoint `acked` spans."""
    if number is None:
        return False
    i = bisect.bisect_right(acked, (number, float("inf"))) - 1
    return i >= 0 and acked[i][0] <= number < acked[i][1]


def stranded(conn: Capture, change: Change) -> str:
    """Stream data the server sent to the client's old address, which the client never
    acknowledged, and which the server never sent again elsewhere or in a packet the client
    acknowledged. Around a move such packets are lost: those still on their way when the NAT
    moved the binding, or the path went down, and those sent there afterwards. Unless sent
    again, their data leaves the stream a hole no later packet fills. '' when there is none,
    or when some server packet after the move was not decrypted (what it carried is unknown)."""
    start = conn.datagrams.index(change.at)
    later = [d for d in conn.datagrams[start:] if view.sender(conn, d) == view.SERVER]
    if any(not p.decrypted for d in later for p in d.packets):
        return ""
    acked = _acked(conn)
    lost: dict[int, list[Span]] = {}
    sent: dict[int, list[Span]] = {}
    for d in conn.datagrams:
        if view.sender(conn, d) != view.SERVER:
            continue
        to_old = (d.dst, d.dport) == change.old
        for p in d.packets:
            gone = to_old and p.type == ONE_RTT and not _is_acked(p.number, acked)
            for f in p.frames:
                if f.is_stream and f.length and f.stream_id is not None:
                    (lost if gone else sent).setdefault(f.stream_id, []).append((f.offset, f.offset + f.length))
    holes = {sid: _minus(_union(spans), _union(sent.get(sid, []))) for sid, spans in lost.items()}
    holes = {sid: h for sid, h in holes.items() if h}
    if not holes:
        return ""
    said = [
        f"stream {sid}: {sum(b - a for a, b in h):,} bytes (offsets {', '.join(f'{a:,}-{b:,}' for a, b in h[:3])}"
        + (f" and {len(h) - 3} more" if len(h) > 3 else "")
        + ")"
        for sid, h in sorted(holes.items())
    ]
    return f"{'; '.join(said)} went to the old address, unacknowledged, and were not sent again within the capture"


def _to_old(conn: Capture, change: Change, datagrams: list[Datagram]) -> int:
    """How many of `datagrams` the server sent to the client's old address."""
    return sum(view.sender(conn, d) == view.SERVER and (d.dst, d.dport) == change.old for d in datagrams)


def from_new(conn: Capture, change: Change, frame_type: int, data: set | None = None) -> Datagram | None:
    """The client's first datagram from the new address, at or after the move, with a frame of
    `frame_type` (whose data is one of `data`, if given)."""
    after = conn.datagrams[conn.datagrams.index(change.at) :]
    return view.first(
        d
        for d in after
        if view.sender(conn, d) == view.CLIENT and (d.src, d.sport) == change.new
        for p in d.packets
        for f in p.frames
        if f.type == frame_type and (data is None or f.data in data)
    )


def unvalidated_bytes(conn: Capture, change: Change, response: Datagram) -> tuple[int, int]:
    """(sent, received): the bytes the server sent to the new address before the path was
    validated (up to the client's PATH_RESPONSE from there), and those it had received from
    it: RFC 9000 §8.2.1 and §9.3 cap the first at three times the second."""
    i, j = conn.datagrams.index(change.at), conn.datagrams.index(response)
    window = conn.datagrams[i : j + 1]
    sent = sum(d.size for d in window if view.sender(conn, d) == view.SERVER and (d.dst, d.dport) == change.new)
    got = sum(d.size for d in window if view.sender(conn, d) == view.CLIENT and (d.src, d.sport) == change.new)
    return sent, got


def amplification(conn: Capture, change: Change, response: Datagram) -> str:
    """`unvalidated_bytes` said as evidence, '' when sizes are unknown."""
    sent, got = unvalidated_bytes(conn, change, response)
    if not got:
        return ""
    within = "within" if sent <= 3 * got else "over"
    return f"; before validation it sent {sent:,} bytes there for {got:,} received ({sent / got:.1f}x, {within} 3x)"


def issued(conn: Capture) -> set[str]:
    """The connection IDs the server issued in NEW_CONNECTION_ID frames."""
    return {f.cid for _, _, f in view.frames(conn, view.SERVER, NEW_CONNECTION_ID) if f.cid}


Extra = Callable[[Capture, Change, CaseResult], CaseResult]


def judge(capture: Capture, wanted: Callable[[Change], bool], what: str, extra: Extra | None = None) -> CaseResult:
    """The verdict on the first path change that is `wanted` (of the first connection that
    has one): validated, and whatever `extra` asks of it besides. `what` says why a change
    that is not wanted does not count."""
    verdicts = []
    for conn in view.started(capture) or [capture]:
        moves = changes(conn)
        fit = [c for c in moves if wanted(c)]
        if not fit:
            verdicts.append(failed(f"{what} ({moves[0]})" if moves else stayed(conn)))
            continue
        v = validated(conn, fit[0])
        if v.passed and extra is not None:
            v = extra(conn, fit[0], v)
        verdicts.append(v)
        if v.passed:
            return v
    return next((v for v in verdicts if v.verdict != FAILED), verdicts[0])
