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
    assert reread.plan([d], [r]) == [r]


def test_an_undecrypted_super_datagram_goes_in_as_its_segments():
    r = raw(SEGMENT * 3)
    plan = reread.plan([datagram(one(dcid=DCID, decrypted=False))], [r])
    assert [p.payload for p in plan] == [SEGMENT] * 3
    assert all(p.tos == 2 and p.sport == 5000 for p in plan)


def test_a_coalesced_datagram_with_an_unread_0rtt_packet_is_no_super_datagram():
    # an Initial, then a 0-RTT packet its client's key log gave no secret for: the 0-RTT
    # packet's header (its DCID at byte 6) sits where a segment of the Initial's size would
    initial = bytes([0xC0, 0, 0, 0, 1, 8]) + bytes.fromhex(DCID) + b"\x00" * 1121
    zero_rtt = bytes([0xD0, 0, 0, 0, 1, 8]) + bytes.fromhex(DCID) + b"\x00" * 131
    r = raw(initial + zero_rtt)
    d = datagram(Packet("Initial", dcid=DCID, version=1), Packet("0-RTT", dcid=DCID, version=1, decrypted=False))
    assert reread.plan([d], [r]) == [r]


def test_a_misfiled_packet_is_left_out():
    d = datagram(Packet(ONE_RTT, dcid="", key_phase=1, number=9, decrypted=False))
    assert reread.misfiled(d)
    assert reread.plan([d], [raw(SEGMENT)]) == []
    assert not reread.misfiled(replace(d, connection=None))  # tshark filed it nowhere: harmless


def test_split_and_left_out_stay_so():
    r = raw(SEGMENT * 2)
    assert reread.plan([datagram(one(dcid=DCID))], [r, r]) == [r, r]
    assert reread.plan([datagram(one(dcid=DCID, decrypted=False))], []) == []


def test_regroup_numbers_each_piece_as_the_capture_does():
    first = [[datagram(number=1)], [datagram(number=2)], [datagram(Packet(ONE_RTT, key_phase=1, number=4), number=3)]]
    plans = [[raw(b"a")], [raw(b"b"), raw(b"c")], []]
    again = [datagram(one(), number=n) for n in (1, 2, 3)]
    pieces = reread.regroup(first, plans, again)
    assert [[(d.number, d.segment) for d in ds] for ds in pieces] == [[(1, 0)], [(2, 1), (2, 2)], [(3, 0)]]
    left = pieces[2][0].packets[0]
    assert (left.key_phase, left.number) == (None, None)  # read with another connection's key


def test_zeros_after_the_long_packets_are_cut_off_when_tshark_read_a_1rtt_packet_there():
    # an Initial (no token, 20 bytes), then zeros to 1,200 bytes: tshark reads a 1-RTT packet
    initial = bytes([0xC0, 0, 0, 0, 1, 8]) + bytes.fromhex(DCID) + bytes([0, 0, 20]) + b"\x07" * 20
    r = raw(initial + bytes(1200 - len(initial)))
    d = datagram(Packet("Initial", dcid=DCID, version=1), Packet(ONE_RTT, key_phase=1, decrypted=False))
    assert [p.payload for p in reread.plan([d], [r])] == [initial]
    read = datagram(Packet("Initial", dcid=DCID, version=1), Packet(ONE_RTT, key_phase=0, number=3))
    assert reread.plan([read], [r]) == [r]  # nothing unread: left as it is


def test_notes_say_what_was_done():
    plans = [[raw(b"a"), raw(b"b")], [], [raw(b"c")]]
    assert reread.notes(plans, [raw(b"ab"), raw(b"x"), raw(b"c")]) == [
        "1 GSO super-datagram (a capture at the sender) read as their segments",
        "1 1-RTT datagram tshark filed under the wrong connection left out of decryption",
    ]


HOME, MOVED = ("198.18.5.1", 20000), ("198.18.5.1", 20001)
PORT = 443


def to_server(frm, *packets: Packet) -> Datagram:
    return Datagram(0, 0.0, *frm, "198.18.2.2", PORT, packets=packets, connection=0)


def to_client(to, *packets: Packet) -> Datagram:
    return Datagram(0, 0.0, "198.18.2.2", PORT, *to, packets=packets, connection=0)


def raws_of(ds: list[Datagram]) -> list[RawDatagram]:
    return [RawDatagram(1, 0, d.src, d.dst, 0, d.sport, d.dport, b"x") for d in ds]


def moving_client(*, second_opens_with: str = ONE_RTT, unread: bool = True) -> list[Datagram]:
    """A client with zero-length connection IDs: the server's 1-RTT packets to it carry none."""
    return [
        to_server(HOME, Packet("Initial", dcid=DCID, version=1)),
        to_client(HOME, Packet(ONE_RTT, dcid="")),
        to_server(HOME, Packet(ONE_RTT, dcid=DCID)),
        to_server(MOVED, Packet(second_opens_with, dcid=DCID, version=1 if second_opens_with != ONE_RTT else None)),
        to_client(MOVED, Packet(ONE_RTT, dcid="", decrypted=not unread)),
    ]


def test_a_client_that_moved_is_read_at_its_first_address_both_ways():
    ds = moving_client()
    back = reread.moved_back(ds, raws_of(ds), PORT)
    assert [(r.src, r.sport) for r in back if r.dport == PORT] == [HOME] * 3
    assert [(r.dst, r.dport) for r in back if r.sport == PORT] == [HOME] * 2
    assert "2 datagrams from and to a later address" in reread.moved_note(raws_of(ds), back)


def test_a_new_connection_from_a_new_port_is_no_move():
    # a second connection opens with an Initial: tshark follows it by its own connection IDs
    ds = moving_client(second_opens_with="Initial")
    assert reread.moved_back(ds, raws_of(ds), PORT) is None


def test_nothing_is_moved_back_when_tshark_read_it_all_or_nothing():
    ds = moving_client(unread=False)
    assert reread.moved_back(ds, raws_of(ds), PORT) is None
    # no key for the connection at all: reading it at one address would not help
    ds = [replace(d, packets=tuple(replace(p, decrypted=False) for p in d.packets)) for d in moving_client()]
    assert reread.moved_back(ds, raws_of(ds), PORT) is None


def test_regroup_keeps_the_captured_addresses():
    first = [[to_client(MOVED, Packet(ONE_RTT, dcid="", decrypted=False))]]
    again = [to_client(HOME, one())]
    d = reread.regroup(first, [[raw(b"a")]], again)[0][0]
    assert (d.dst, d.dport) == MOVED and d.packets[0].decrypted


def test_nothing_is_left_out_in_the_reading_that_cuts_a_padding():
    # a padding cut and a datagram that looked misfiled: tshark's key phase error from the
    # zeros made it look so, and the reading after the cut tells
    a, b, cut = raw(b"whole" + bytes(20)), raw(SEGMENT), raw(b"whole")
    assert reread.cuts_first([[cut], []], [[a], [b]]) == [[cut], [b]]
    assert reread.cuts_first([[a], []], [[a], [b]]) == [[a], []]  # no cut: left out as planned
