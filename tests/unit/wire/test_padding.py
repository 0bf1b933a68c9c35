"""Zero bytes after a datagram's long-header packets (wire/padding.py): found by the packets'
own lengths, in both versions' header layouts, and never inside a packet."""

from __future__ import annotations

from longlook.wire.padding import V2, cut, long_packets_end

DCID = bytes.fromhex("0102030405060708")


def long_packet(first: int, body: bytes, *, version: int = 1, token: bytes | None = b"") -> bytes:
    header = bytes([first]) + version.to_bytes(4, "big") + bytes([len(DCID)]) + DCID + bytes([0])
    if token is not None:  # an Initial's token length and token
        header += bytes([len(token)]) + token
    return header + bytes([0x40 | (len(body) >> 8), len(body) & 0xFF]) + body  # a 2-byte length


INITIAL = long_packet(0xC0, b"\x11" * 90, token=b"\xaa" * 5)
HANDSHAKE = long_packet(0xE0, b"\x22" * 300, token=None)


def test_zeros_after_coalesced_packets_are_cut_off():
    payload = INITIAL + HANDSHAKE + bytes(400)
    assert long_packets_end(payload) == len(INITIAL) + len(HANDSHAKE)
    assert cut(payload) == INITIAL + HANDSHAKE


def test_a_packet_whose_ciphertext_ends_in_zeros_keeps_them():
    ends_in_zeros = long_packet(0xE0, b"\x22" * 290 + bytes(10), token=None)
    assert cut(INITIAL + ends_in_zeros) is None


def test_a_1rtt_packet_after_the_long_ones_is_no_padding():
    assert cut(INITIAL + bytes([0x41]) + DCID + b"\x33" * 40) is None
    assert cut(bytes([0x41]) + DCID + bytes(40)) is None  # a short header runs to the end


def test_v2_swaps_the_initial_and_retry_types():
    initial_v2 = long_packet(0xD0, b"\x11" * 90, version=V2, token=b"")  # type 0b01: Initial
    assert cut(initial_v2 + bytes(100)) == initial_v2
    retry_v2 = bytes([0xC0]) + V2.to_bytes(4, "big") + bytes([0, 0]) + b"\x44" * 40  # type 0b00: Retry
    assert long_packets_end(retry_v2) is None


def test_what_does_not_parse_is_left_alone():
    assert long_packets_end(INITIAL[:20]) is None  # its length runs past the datagram
    retry_v1 = bytes([0xF0, 0, 0, 0, 1, 0, 0]) + b"\x44" * 40
    assert long_packets_end(retry_v1) is None
    version_negotiation = bytes([0x80, 0, 0, 0, 0, 0, 0]) + bytes(8)
    assert cut(version_negotiation) is None
