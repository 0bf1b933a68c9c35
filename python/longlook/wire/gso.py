"""Splitting GSO super-datagrams back into the datagrams they stand for.

A stack that sends with UDP GSO (quinn, quic-go, ...) hands the kernel one buffer of several
equal-size segments; a capture taken at the sender (loopback, or the client's own interface)
records that buffer as one "datagram" of up to 64 KB, which tshark reads as one QUIC packet
and fails to decrypt. The wire (and the receiver) sees separate datagrams. The capture does
not record the segment size, but every segment starts a QUIC packet of the same connection:
a short header with the DCID at byte 1, or a long one with its length at byte 5 and the
DCID at byte 6. The size is the smallest offset at which that holds for every segment; with
a DCID of at least 4 bytes a chance match in ciphertext is negligible. The testbed's own
captures are taken at the router with offloads off, and hold no such buffers."""

from __future__ import annotations

MIN_DCID = 4  # shorter (or zero-length) DCIDs: no reliable boundary, the buffer stays whole
MIN_SEGMENT = 21  # a 1-byte header, the DCID, a packet number and a 16-byte AEAD tag at least


def _starts_packet(seg: bytes, dcid: bytes) -> bool:
    if seg[0] & 0x80 == 0:
        return seg[1 : 1 + len(dcid)] == dcid
    return len(seg) > 6 + len(dcid) and seg[5] == len(dcid) and seg[6 : 6 + len(dcid)] == dcid


def _fits(payload: bytes, dcid: bytes, size: int) -> bool:
    if size < MIN_SEGMENT or size >= len(payload):
        return False
    return all(_starts_packet(payload[off : off + size], dcid) for off in range(size, len(payload), size))


def segment_size(payload: bytes, dcid: bytes) -> int | None:
    """The GSO segment size of a UDP payload whose first QUIC packet has this DCID, or None
    when the payload is one datagram."""
    if len(dcid) < MIN_DCID:
        return None
    start = 1
    while (pos := payload.find(dcid, start)) != -1:
        for size in (pos - 1, pos - 6):  # a short header's DCID, a long header's
            if _fits(payload, dcid, size):
                return size
        start = pos + 1
    return None


def split(payload: bytes, dcid: bytes) -> list[bytes]:
    """The datagrams a UDP payload stands for: itself, or its GSO segments."""
    size = segment_size(payload, dcid)
    if size is None:
        return [payload]
    return [payload[off : off + size] for off in range(0, len(payload), size)]
