"""What several cases read the same way: who sent a datagram, the capture's connections,
whether a handshake completed, and when a capture cannot show a case at all.

One rule runs through the cases: a case fails on what the capture shows, never on what it
cannot. When the frame a case looks for is missing but some packets of that sender were not
decrypted, the frame may be in them, so the case is "not measurable", not "failed"."""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import Callable, Iterator

from ..model import (
    CONNECTION_CLOSE,
    CONNECTION_CLOSE_APP,
    CRYPTO,
    HANDSHAKE,
    HANDSHAKE_DONE,
    INITIAL,
    ONE_RTT,
    ZERO_RTT,
    Capture,
    Datagram,
    Frame,
    Packet,
    TlsMessage,
)
from .result import CaseResult, failed, not_measurable, passed

CLIENT, SERVER = "client", "server"
PROTECTED = (ZERO_RTT, HANDSHAKE, ONE_RTT)  # packets only a key log opens


def sender(capture: Capture, d: Datagram) -> str | None:
    if capture.from_server(d):
        return SERVER
    if capture.from_client(d):
        return CLIENT
    return None


def packets(capture: Capture, by: str | None = None, *types: str) -> Iterator[tuple[Datagram, Packet]]:
    """Each (datagram, packet) sent by `by` (either side if None) of the given packet types (any if none)."""
    for d in capture.datagrams:
        if by is not None and sender(capture, d) != by:
            continue
        for p in d.packets:
            if not types or p.type in types:
                yield d, p


def frames(capture: Capture, by: str | None, *frame_types: int) -> Iterator[tuple[Datagram, Packet, Frame]]:
    """Each decrypted frame of these types sent by `by`, with its packet and datagram."""
    for d, p in packets(capture, by):
        for f in p.frames:
            if f.type in frame_types:
                yield d, p, f


def tls(capture: Capture, by: str, message_type: int) -> Iterator[tuple[Datagram, TlsMessage]]:
    """Each TLS handshake message of this type `by` sent in CRYPTO frames."""
    for d, _, f in frames(capture, by, CRYPTO):
        for m in f.tls:
            if m.type == message_type:
                yield d, m


def hidden(capture: Capture, by: str, *types: str) -> int:
    """How many packets `by` sent that were not decrypted (of these types, or any protected)."""
    return sum(not p.decrypted for _, p in packets(capture, by, *(types or PROTECTED)))


def connections(capture: Capture) -> list[Capture]:
    """The capture cut into its QUIC connections (tshark's numbering), in order of their first
    datagram; a datagram tshark placed in none stays with the one before it."""
    groups: dict[int | None, list[Datagram]] = {}
    current = None
    for d in capture.datagrams:
        if d.connection is not None:
            current = d.connection
        groups.setdefault(current, []).append(d)
    return [replace(capture, datagrams=tuple(ds)) for ds in groups.values()]


def started(capture: Capture) -> list[Capture]:
    """The connections a client opened: those with an Initial packet from the client."""
    return [c for c in connections(capture) if any(True for _ in packets(c, CLIENT, INITIAL))]


def first(it: Iterator):
    return next(iter(it), None)


# an application close's error as RFC 9114 §8.1 and RFC 9204 §6 name it
H3_ERRORS = {
    0x100: "H3_NO_ERROR",
    0x101: "H3_GENERAL_PROTOCOL_ERROR",
    0x102: "H3_INTERNAL_ERROR",
    0x103: "H3_STREAM_CREATION_ERROR",
    0x104: "H3_CLOSED_CRITICAL_STREAM",
    0x105: "H3_FRAME_UNEXPECTED",
    0x106: "H3_FRAME_ERROR",
    0x107: "H3_EXCESSIVE_LOAD",
    0x108: "H3_ID_ERROR",
    0x109: "H3_SETTINGS_ERROR",
    0x10A: "H3_MISSING_SETTINGS",
    0x10B: "H3_REQUEST_REJECTED",
    0x10C: "H3_REQUEST_CANCELLED",
    0x10D: "H3_REQUEST_INCOMPLETE",
    0x10E: "H3_MESSAGE_ERROR",
    0x10F: "H3_CONNECT_ERROR",
    0x110: "H3_VERSION_FALLBACK",
    0x200: "QPACK_DECOMPRESSION_FAILED",
    0x201: "QPACK_ENCODER_STREAM_ERROR",
    0x202: "QPACK_DECODER_STREAM_ERROR",
}


def closing(capture: Capture) -> str:
    """Who closed the connection first, where, and with which error ('' if nobody did)."""
    for d in capture.datagrams:
        for p in d.packets:
            for f in p.frames:
                if f.type in (CONNECTION_CLOSE, CONNECTION_CLOSE_APP):
                    who = sender(capture, d) or "someone"
                    code = "" if f.error is None else f", error 0x{f.error:x}"
                    if f.type == CONNECTION_CLOSE and f.error is not None and 0x100 <= f.error < 0x200:
                        code += f": TLS alert {f.error - 0x100}"  # a crypto error (RFC 9001 4.8)
                    if f.type == CONNECTION_CLOSE_APP and f.error in H3_ERRORS:
                        code += f": {H3_ERRORS[f.error]}"
                    kind = "application " if f.type == CONNECTION_CLOSE_APP else ""
                    return f"; the {who} closed it ({kind}CONNECTION_CLOSE in {a(p.type)} packet at {d.where}{code})"
    return ""


def completion(conn: Capture) -> CaseResult:
    """Did this connection's handshake complete? The server confirms it with HANDSHAKE_DONE
    (RFC 9001 4.1.2), and both sides then send 1-RTT packets the other could open."""
    if first(packets(conn, SERVER)) is None:
        d = first(d for d, _ in packets(conn, CLIENT, INITIAL))
        where = f" at {d.where}" if d else ""
        return failed(f"the server never answered the client's Initial{where}")
    done = first(d for d, p, _ in frames(conn, SERVER, HANDSHAKE_DONE))
    if done is None:
        why = "no HANDSHAKE_DONE from the server"
        if hidden(conn, SERVER, ONE_RTT):
            return not_measurable(f"{why}, but {hidden(conn, SERVER, ONE_RTT)} of its 1-RTT packets were not decrypted")
        return failed(why + closing(conn))
    ones = {by: sum(p.decrypted for _, p in packets(conn, by, ONE_RTT)) for by in (CLIENT, SERVER)}
    if not ones[CLIENT]:
        return failed(f"HANDSHAKE_DONE from the server at {done.where}, but no 1-RTT packet from the client")
    return passed(
        f"HANDSHAKE_DONE from the server at {done.where}; 1-RTT both ways "
        f"({ones[CLIENT]} packets from the client, {ones[SERVER]} from the server)"
    )


def unmeasurable(capture: Capture) -> str | None:
    """Why the capture cannot show any case, or None: no QUIC, or nothing decrypted."""
    quic = [p for d in capture.datagrams for p in d.packets]
    if not quic:
        return f"no QUIC packet to or from port {capture.server_port} in the capture"
    protected = [p for p in quic if p.type in PROTECTED]
    if protected and not any(p.decrypted for p in protected):
        return (
            f"none of its {len(protected)} Handshake, 0-RTT and 1-RTT packets could be decrypted "
            "(no TLS key log, or not this capture's)"
        )
    return None


Check = Callable[[Capture], CaseResult]


def measurable(check: Check) -> Check:
    """A case's check, answering "not measurable" before it looks when the capture cannot show
    any case: a capture without QUIC or without keys must never pass."""

    @functools.wraps(check)
    def guarded(capture: Capture) -> CaseResult:
        why = unmeasurable(capture)
        return not_measurable(why) if why else check(capture)

    return guarded


def a(word: str) -> str:
    """The word with its indefinite article: "an Initial", "a Handshake", "a 1-RTT"."""
    return ("an " if word[0] in "AEIOU8" else "a ") + word


def count(n: int, what: str) -> str:
    """`1 packet`, `2 packets`."""
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


def streams(ids) -> str:
    """Stream IDs for a sentence: `0, 4, 8` (at most six, then how many more)."""
    ids = sorted(set(ids))
    shown = ", ".join(str(i) for i in ids[:6])
    return shown + (f" and {len(ids) - 6} more" if len(ids) > 6 else "")
