"""What goes into tshark's second reading of a capture (reread.py): GSO segments apart,
a misfiled packet left out and put back unread, and every piece numbered as the capture is."""

from __future__ import annotations

from dataclasses import replace

from longlook.wire import reread
from longlook.wire.model import ONE_RTT, Datagram, Packet
from longlook.wire.pcap import RawDatagram

from .synth import one

DCID = "4aaaf2acab101f28"
SEGMENT = bytes([0x41]) + bytes.fromhex(DCID) + b"\x00" * 91


def raw(payload: bytes) -> RawDatagram:
    return RawDatagram(1, 0, "127.0.0.1", "127.0.0.1", 2, 5000, 443, payload)


def datagram(*packets: Packet, number: int = 1, connection: int | None = 0) -> Datagram:
    return Datagram(number, 0.0, "127.0.0.1", 5000, "127.0.0.1", 443, packets=packets, connection=connection)


def test_a_decrypted_datagram_goes_in_as_it_is():
    d, r = datagram(one(dcid=DCID)), raw(SEGMENT)
    assert reread.plan([d], [r], r) == [r]


def test_an_undecrypted_super_datagram_goes_in_as_its_segments():
    r = raw(SEGMENT * 3)
    plan = reread.plan([datagram(one(dcid=DCID, decrypted=False))], [r], r)
    assert [p.payload for p in plan] == [SEGMENT] * 3
    assert all(p.tos == 2 and p.sport == 5000 for p in plan)


def test_a_coalesced_datagram_with_an_unread_0rtt_packet_is_no_super_datagram():
    # an Initial, then a 0-RTT packet its client's key log gave no secret for: the 0-RTT
    # packet's header (its DCID at byte 6) sits where a segment of the Initial's size would
    initial = bytes([0xC0, 0, 0, 0, 1, 8]) + bytes.fromhex(DCID) + b"\x00" * 1121
    zero_rtt = bytes([0xD0, 0, 0, 0, 1, 8]) + bytes.fromhex(DCID) + b"\x00" * 131
    r = raw(initial + zero_rtt)
    d = datagram(Packet("Initial", dcid=DCID, version=1), Packet("0-RTT", dcid=DCID, version=1, decrypted=False))
    assert reread.plan([d], [r], r) == [r]


def test_a_misfiled_packet_is_left_out():
    d = datagram(Packet(ONE_RTT, dcid="", key_phase=1, number=9, decrypted=False))
    assert reread.misfiled(d)
    assert reread.plan([d], [raw(SEGMENT)], raw(SEGMENT)) == []
    assert not reread.misfiled(replace(d, connection=None))  # tshark filed it nowhere: harmless


def test_split_and_left_out_stay_so():
    r = raw(SEGMENT * 2)
    assert reread.plan([datagram(one(dcid=DCID))], [r, r], r) == [r, r]
    assert reread.plan([datagram(one(dcid=DCID, decrypted=False))], [], r) == []


def test_regroup_numbers_each_piece_as_the_capture_does():
    first = [[datagram(number=1)], [datagram(number=2)], [datagram(Packet(ONE_RTT, key_phase=1, number=4), number=3)]]
    plans = [[raw(b"a")], [raw(b"b"), raw(b"c")], []]
    again = [datagram(one(), number=n) for n in (1, 2, 3)]
    pieces = reread.regroup(first, plans, again)
    assert [[(d.number, d.segment) for d in ds] for ds in pieces] == [[(1, 0)], [(2, 1), (2, 2)], [(3, 0)]]
    left = pieces[2][0].packets[0]
    assert (left.key_phase, left.number) == (None, None)  # read with another connection's key


def test_notes_say_what_was_done():
    plans = [[raw(b"a"), raw(b"b")], [], [raw(b"c")]]
    assert reread.notes(plans) == [
        "1 GSO super-datagram (a capture at the sender) read as their segments",
        "1 1-RTT datagram tshark filed under the wrong connection left out of decryption",
    ]
