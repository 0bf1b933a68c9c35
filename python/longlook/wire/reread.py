"""When tshark's first reading of a capture is not the wire's, the datagrams are written out
again (pcap.py) for a second reading, and this module says what goes into that file.

- A GSO super-datagram (gso.py) goes in as its segments: tshark then decrypts each. Only a
  datagram tshark read as an undecrypted 1-RTT packet can be one: coalesced long-header
  packets carry their lengths (an Initial with a 0-RTT packet after it is not split).
- A 1-RTT packet tshark could neither decrypt nor read a connection ID from, yet filed under
  a connection, is left out. This happens when a client opens a second connection from the
  same address and port (a 0-RTT run: warm-up, then the measured connection) and a late
  packet of the first arrives after the second's Initial: tshark 4.0 files it under the
  second connection, removes its header protection with the wrong key, reads a key phase
  flip, and from then on fails to decrypt the second connection's 1-RTT packets. Without
  it tshark reads the rest right; the packet itself stays in the capture as read the first
  time (not decrypted).
- Zero bytes after a datagram's long-header packets (padding.py) are cut off: tshark reads
  them as a 1-RTT packet and can take a key update from them.
- A client whose packets to it carry an empty connection ID (quic-go's and Chromium's clients
  choose zero-length IDs) and that moved mid-connection (a NAT rebinding, a migration): tshark
  follows such a connection by its addresses, so it cannot decrypt what the server sent to the
  new one. The reading puts every datagram from and to a later address of the client at the
  first (`moved_back`); only the packets' contents are taken from it, never the addresses.

Every datagram keeps the capture's frame number (and its segment's number), so evidence
names it as Wireshark does."""

from __future__ import annotations

import dataclasses

from . import gso, padding
from .model import ONE_RTT, Datagram
from .pcap import RawDatagram


def misfiled(d: Datagram) -> bool:
    return (
        d.connection is not None
        and bool(d.packets)
        and all(p.type == ONE_RTT and not p.decrypted and not p.dcid for p in d.packets)
    )


def plan(pieces: list[Datagram], current: list[RawDatagram]) -> list[RawDatagram]:
    """What of a captured datagram goes into the next reading, given how the last one read
    it (`pieces`, from `current`): its GSO segments, itself without zeros after its packets,
    itself, or nothing (a misfiled packet).
    A datagram split or left out stays so; a second reading may name a connection ID the
    first did not know, and so find segments the first could not."""
    if len(current) != 1:
        return current
    d = pieces[0]
    if misfiled(d):
        return []
    hidden = [p for p in d.packets if not p.decrypted]
    if any(p.type == ONE_RTT for p in hidden) and (kept := padding.cut(current[0].payload)) is not None:
        return [dataclasses.replace(current[0], payload=kept)]  # zeros tshark took for a packet
    # only a short header runs to the datagram's end, so only an unread 1-RTT packet can be
    # a GSO buffer's segments read as one; an unread long-header packet (a 0-RTT packet
    # without the early secret, coalesced after an Initial) has its length and is one packet
    if not hidden or any(p.type != ONE_RTT for p in hidden) or not d.packets[0].dcid:
        return current
    whole = current[0]
    return [dataclasses.replace(whole, payload=p) for p in gso.split(whole.payload, bytes.fromhex(d.packets[0].dcid))]


def _is_cut(new: list[RawDatagram], current: list[RawDatagram]) -> bool:
    return len(new) == len(current) == 1 and len(new[0].payload) < len(current[0].payload)


def cuts_first(new: list[list[RawDatagram]], current: list[list[RawDatagram]]) -> list[list[RawDatagram]]:
    """The next reading's plans, with no datagram left out while another one's padding is cut:
    tshark fails every later 1-RTT packet of a sender once it read a key update from zeros,
    and those packets would look misfiled. The reading after the cut tells them apart."""
    if not any(_is_cut(n, c) for n, c in zip(new, current)):
        return new
    return [c if not n and c else n for n, c in zip(new, current)]


Endpoint = tuple[str, int]


def _moves(datagrams: list[Datagram], server_port: int) -> dict[Endpoint, Endpoint]:
    """Each address and port the client moved to (its first datagram from there carries only
    1-RTT packets: a moved connection, not a new one, which opens with an Initial), and the
    first address of the connection it moved."""
    home: dict[Endpoint, Endpoint] = {}
    last = None
    for d in datagrams:
        if d.dport != server_port:
            continue
        here = (d.src, d.sport)
        if here not in home:
            moved = last is not None and bool(d.packets) and all(p.type == ONE_RTT for p in d.packets)
            home[here] = home[last] if moved else here
        last = here
    return {e: h for e, h in home.items() if e != h}


def moved_back(datagrams: list[Datagram], raws: list[RawDatagram], server_port: int) -> list[RawDatagram] | None:
    """The capture (one raw datagram per datagram) with the client's later addresses put at
    its first, when the server's packets to a later one are unread 1-RTT packets with an empty
    connection ID while those to the first were read; None when nothing needs it."""
    moves = _moves(datagrams, server_port)

    def unread_to_moved(d: Datagram) -> bool:
        to_moved = d.sport == server_port and (d.dst, d.dport) in moves
        return to_moved and any(p.type == ONE_RTT and not p.decrypted and not p.dcid for p in d.packets)

    def read_at_home(d: Datagram) -> bool:  # tshark had the keys: it read the connection before it moved
        to_home = d.sport == server_port and (d.dst, d.dport) in moves.values()
        return to_home and any(p.type == ONE_RTT and p.decrypted for p in d.packets)

    if not any(unread_to_moved(d) for d in datagrams) or not any(read_at_home(d) for d in datagrams):
        return None
    out = []
    for r in raws:
        if r.dport == server_port and (r.src, r.sport) in moves:
            src, sport = moves[(r.src, r.sport)]
            r = dataclasses.replace(r, src=src, sport=sport)
        elif r.sport == server_port and (r.dst, r.dport) in moves:
            dst, dport = moves[(r.dst, r.dport)]
            r = dataclasses.replace(r, dst=dst, dport=dport)
        out.append(r)
    return out


def moved_note(before: list[RawDatagram], after: list[RawDatagram]) -> str:
    n = sum(a != b for a, b in zip(before, after))
    return (
        f"{_n(n, 'datagram')} from and to a later address of the client read at its first (an empty "
        "connection ID: tshark follows such a connection by its addresses); each keeps its own addresses"
    )


def _unread(d: Datagram) -> Datagram:
    return dataclasses.replace(d, packets=tuple(dataclasses.replace(p, key_phase=None, number=None) for p in d.packets))


def regroup(last: list[list[Datagram]], plans: list[list[RawDatagram]], again: list[Datagram]) -> list[list[Datagram]]:
    """Each captured datagram's reading: the pieces of the new reading written from its plan,
    numbered as the capture is, or (left out) as the last reading saw it."""
    out, it = [], iter(again)
    for pieces, p in zip(last, plans):
        if not p:  # its header was unprotected with another connection's key: no bit of it is known
            out.append([_unread(d) for d in pieces])
            continue
        # the capture's own number and addresses (a reading may have put a moved client's back)
        first = pieces[0]
        at = {"number": first.number, "src": first.src, "sport": first.sport, "dst": first.dst, "dport": first.dport}
        out.append([dataclasses.replace(next(it), **at, segment=i + 1 if len(p) > 1 else 0) for i in range(len(p))])
    return out


def notes(plans: list[list[RawDatagram]], raws: list[RawDatagram]) -> list[str]:
    said = []
    if cut := sum(len(p) == 1 and len(p[0].payload) < len(r.payload) for p, r in zip(plans, raws)):
        said.append(f"{_n(cut, 'datagram')}' zero padding after their packets left out of decryption")
    if split := sum(len(p) > 1 for p in plans):
        said.append(f"{_n(split, 'GSO super-datagram')} (a capture at the sender) read as their segments")
    if left := sum(not p for p in plans):
        said.append(f"{_n(left, '1-RTT datagram')} tshark filed under the wrong connection left out of decryption")
    return said


def _n(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")
