"""GSO super-datagrams split at the segment size their packets' connection IDs give away,
and nothing else split."""

from __future__ import annotations

import os

from longlook.wire import gso

DCID = bytes.fromhex("4aaaf2acab101f28")


def short(size: int) -> bytes:
    return bytes([0x41]) + DCID + os.urandom(size - 1 - len(DCID))


def long(size: int) -> bytes:
    return bytes([0xE1, 0, 0, 0, 1, len(DCID)]) + DCID + os.urandom(size - 6 - len(DCID))


def test_equal_segments_and_a_shorter_last_one():
    parts = [short(1200), short(1200), short(1200), short(310)]
    assert gso.split(b"".join(parts), DCID) == parts
    assert gso.segment_size(b"".join(parts), DCID) == 1200


def test_a_first_segment_of_coalesced_long_headers():
    parts = [long(1252), short(1252), long(1252)]
    assert gso.split(b"".join(parts), DCID) == parts


def test_one_datagram_stays_whole():
    one = short(1400)
    assert gso.split(one, DCID) == [one]


def test_a_dcid_in_the_ciphertext_at_the_wrong_offsets_splits_nothing():
    payload = short(1000)
    payload = payload[:500] + DCID + payload[500 + len(DCID) :]  # a chance match, no segment after it
    assert gso.split(payload, DCID) == [payload]


def test_short_connection_ids_are_not_trusted():
    parts = [short(100), short(100)]
    assert gso.split(b"".join(parts), DCID[:2]) == [b"".join(parts)]
