"""Zero bytes after a datagram's coalesced long-header packets.

A sender may fill a datagram that carries an Initial to 1,200 bytes with zeros after its
last packet (quiche's server does) rather than with PADDING frames inside it. Zeros are no
QUIC packet (a first byte without the fixed bit, RFC 9000 17.3), and a receiver drops them.
tshark 4.0 reads them as a 1-RTT packet: it removes header protection from zeros, reads a
key phase bit that is set half the time, takes it for a key update, and from then on fails
to decrypt every 1-RTT packet of that sender. Cut off, the rest reads as the wire's.

Boundaries come from the long headers' own lengths (RFC 9000 17.2, RFC 9369 3), never from
where the zeros begin: a packet's ciphertext may end in zero bytes."""

from __future__ import annotations

from . import varint

V2 = 0x6B3343CF
# the Initial's and the Retry's long packet type bits, by version (RFC 9369 3.2 swaps them)
INITIAL = {V2: 0b01}
RETRY = {V2: 0b00}


def long_packets_end(payload: bytes) -> int | None:
    """Where the long-header packets a datagram begins with end; None when a header does not
    parse, or a packet runs to the datagram's end by itself (Retry, Version Negotiation)."""
    at = 0
    while at < len(payload) and payload[at] & 0x80:
        if at + 7 > len(payload):
            return None
        version = int.from_bytes(payload[at + 1 : at + 5], "big")
        kind = (payload[at] >> 4) & 0b11
        if version == 0 or kind == RETRY.get(version, 0b11):
            return None
        p = at + 6 + payload[at + 5]  # past the DCID
        if p >= len(payload):
            return None
        p += 1 + payload[p]  # past the SCID
        if kind == INITIAL.get(version, 0b00):
            token = varint.read(payload, p)
            if token is None:
                return None
            p = token[1] + token[0]
        length = varint.read(payload, p)
        if length is None or length[1] + length[0] > len(payload):
            return None
        at = length[1] + length[0]
    return at


def cut(payload: bytes) -> bytes | None:
    """The datagram without the zeros after its long-header packets; None when it has none
    there (or begins with a short header, which runs to its end)."""
    end = long_packets_end(payload)
    if not end or end == len(payload) or any(payload[end:]):
        return None
    return payload[:end]
