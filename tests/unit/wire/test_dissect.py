"""tshark 4.0's JSON (`-T json --no-duplicate-keys`) read into datagrams: the shapes seen in
the recorded captures, cut down to the fields read (a key that repeats is a list)."""

from __future__ import annotations

from longlook.wire import dissect
from longlook.wire.model import HANDSHAKE, INITIAL, ONE_RTT, RETRY, VERSION_NEGOTIATION, ZERO_RTT, V2

FRAME = {"frame.number": "7", "frame.time_epoch": "1795924857.880887012"}
IP = {"ip.src": "127.0.0.1", "ip.dst": "127.0.0.2", "ip.dsfield": "0x02", "ip.dsfield_tree": {"ip.dsfield.ecn": "2"}}
UDP = {"udp.srcport": "50000", "udp.dstport": "443", "udp.payload": "40:00"}

CLIENT_HELLO_FRAME = {
    "quic.frame_type": "6",
    "quic.crypto.offset": "0",
    "tls": {
        "tls.handshake": {
            "tls.handshake.type": "1",
            "tls.handshake.ciphersuites": {"tls.handshake.ciphersuite": ["0x1302", "0x1301", "0x1303"]},
            "Extension: key_share (len=38)": {"tls.handshake.extension.type": "51"},
            "Extension: Reserved (GREASE) (len=0)": [
                {"tls.handshake.extension.type": "2570"},
                {"tls.handshake.extension.type": "6682"},
            ],
            "Extension: pre_shared_key (len=100)": {"tls.handshake.extension.type": "41"},
        }
    },
}
SERVER_FLIGHT = {
    "quic.frame_type": "6",
    "tls": {
        "tls.handshake": [
            {"tls.handshake.type": "8", "Extension: early_data (len=0)": {"tls.handshake.extension.type": "42"}},
            {"tls.handshake.type": "11", "tls.handshake.certificates_length": "371"},
        ]
    },
}


def layers(quic, **extra) -> dict:
    return {"frame": FRAME, "ip": IP, "udp": UDP, "quic": quic, **extra}


def long_header(packet_type: str, version: str = "0x00000001", frames=None, **fields) -> dict:
    q = {
        "QUIC Connection information": {"quic.connection.number": "3"},
        "quic.header_form": "1",
        **({"quic.long.packet_type": packet_type} if packet_type is not None else {}),
        "quic.version": version,
        "quic.dcid": "02:14:63:86",
        "quic.scid": "88:e9:6d:7b",
        **fields,
    }
    if frames is not None:
        q["quic.frame"] = frames
    return q


def short_header(frames=None, key_phase: str = "0") -> dict:
    q = {
        "quic.short": {
            "quic.header_form": "0",
            "quic.key_phase": key_phase,
            "quic.dcid": "4a:aa:f2:ac",
            "quic.packet_number": "5",
        }
    }
    if frames is not None:
        q["quic.frame"] = frames
    return q


def test_a_datagram_keeps_its_addresses_time_and_ecn():
    d = dissect.datagram(layers(long_header("0", frames=CLIENT_HELLO_FRAME)), t0=(1795924857, 0))
    assert (d.number, d.src, d.sport, d.dst, d.dport, d.ecn, d.connection) == (
        7,
        "127.0.0.1",
        50000,
        "127.0.0.2",
        443,
        2,
        3,
    )
    assert d.time == 0.880887012


def test_coalesced_packets_stay_apart_and_padding_is_no_packet():
    padding = {"_ws.expert": {"quic.coalesced_padding_data": ""}}
    quic = [long_header("0", frames=[CLIENT_HELLO_FRAME]), long_header("2", frames=[SERVER_FLIGHT]), padding]
    d = dissect.datagram(layers(quic), t0=(0, 0))
    assert [p.type for p in d.packets] == [INITIAL, HANDSHAKE]


def test_the_client_hello_keeps_its_offer_and_extensions():
    (p,) = dissect.datagram(layers(long_header("0", frames=CLIENT_HELLO_FRAME)), t0=(0, 0)).packets
    (m,) = p.frames[0].tls
    assert (m.type, m.cipher_suites) == (1, (0x1302, 0x1301, 0x1303))
    assert m.extensions == (51, 2570, 6682, 41)


def test_several_handshake_messages_in_one_crypto_frame():
    (p,) = dissect.datagram(layers(long_header("2", frames=SERVER_FLIGHT)), t0=(0, 0)).packets
    assert [(m.type, m.extensions) for m in p.frames[0].tls] == [(8, (42,)), (11, ())]


def test_v2_long_header_types_are_mapped():
    kinds = [
        dissect.packet(long_header(None, version="0x6b3343cf", **{"quic.long.packet_type_v2": t})).type for t in "0123"
    ]
    assert kinds == [RETRY, INITIAL, ZERO_RTT, HANDSHAKE]
    assert dissect.packet(long_header(None, version="0x6b3343cf", **{"quic.long.packet_type_v2": "1"})).version == V2


def test_version_negotiation_and_retry():
    assert dissect.packet(long_header("0", version="0x00000000")).type == VERSION_NEGOTIATION
    r = dissect.packet(long_header("3", **{"quic.retry_token": "ff:1a:be"}))
    assert (r.type, r.token, r.decrypted) == (RETRY, "ff1abe", True)
    i = dissect.packet(long_header("0", frames=[{"quic.frame_type": "0"}], **{"quic.token": "ff:1a:be"}))
    assert i.token == "ff1abe"


def test_a_short_header_packet_not_decrypted_has_no_frames():
    p = dissect.packet(short_header(key_phase="1"))
    assert (p.type, p.dcid, p.number, p.key_phase, p.decrypted, p.frames) == (ONE_RTT, "4aaaf2ac", 5, 1, False, ())


def test_key_phase_printed_as_true():
    assert dissect.packet(short_header([{"quic.frame_type": "1"}], key_phase="True")).key_phase == 1


def test_stream_frames_take_fin_from_the_type_bits():
    frames = [
        {"quic.frame_type": "11", "quic.stream.stream_id": "0", "quic.stream.length": "253"},
        {"quic.frame_type": "8", "quic.stream.stream_id": "4", "quic.stream_data": "01:02:03"},
    ]
    a, b = dissect.packet(short_header(frames)).frames
    assert (a.stream_id, a.fin, a.length, a.is_stream) == (0, True, 253, True)
    assert (b.stream_id, b.fin, b.length) == (4, False, 3)


def test_ack_ranges_and_ecn_counts():
    f = dissect.frame(
        {
            "quic.frame_type": "3",
            "quic.ack.largest_acknowledged": "20",
            "quic.ack.first_ack_range": "2",
            "quic.ack.gap": ["0", "3"],
            "quic.ack.ack_range": ["1", "0"],
            "quic.ack.ect0_count": "15",
            "quic.ack.ect1_count": "0",
            "quic.ack.ecn_ce_count": "1",
        }
    )
    # 18-20, then a gap of 1 (17) and 15-16, then a gap of 4 (11-14) and 10
    assert f.acked == ((18, 20), (15, 16), (10, 10))
    assert f.ecn == (15, 0, 1)


def test_path_frames_new_connection_ids_and_closes():
    assert dissect.frame({"quic.frame_type": "26", "quic.path_challenge.data": "aa:bb"}).data == "aabb"
    assert dissect.frame({"quic.frame_type": "27", "quic.path_response.data": "aa:bb"}).data == "aabb"
    assert dissect.frame({"quic.frame_type": "24", "quic.nci.connection_id": "dc:43"}).cid == "dc43"
    assert dissect.frame({"quic.frame_type": "28", "quic.cc.error_code": "298"}).error == 298
    assert dissect.frame({"quic.frame_type": "29", "quic.cc.error_code.app": "256"}).error == 256


def test_http3_frame_types_of_the_datagram():
    h3 = [
        {"http3.stream_type": "0", "http3.frame_type": "4"},
        {"http3.stream_type": "3"},
        {"http3.frame_type": ["1", "0", "485285101986476312"]},
    ]
    d = dissect.datagram(layers(short_header([{"quic.frame_type": "10"}]), http3=h3), t0=(0, 0))
    assert d.http3 == (4, 1, 0, 485285101986476312)


def test_ipv6_traffic_class_ecn():
    v6 = {
        "ipv6.src": "::1",
        "ipv6.dst": "::2",
        "ipv6.tclass": "0x00000001",
        "ipv6.tclass_tree": {"ipv6.tclass.ecn": "1"},
    }
    d = dissect.datagram({"frame": FRAME, "ipv6": v6, "udp": UDP, "quic": short_header()}, t0=(0, 0))
    assert (d.src, d.dst, d.ecn) == ("::1", "::2", 1)


def test_the_transport_parameters_are_kept_with_their_values():
    """As tshark 4.0 prints an EncryptedExtensions' quic_transport_parameters: one key per
    parameter, named after it; disable_active_migration has no value."""
    ee = {
        "quic.frame_type": "6",
        "tls": {
            "tls.handshake": {
                "tls.handshake.type": "8",
                "Extension: quic_transport_parameters (len=12)": {
                    "tls.handshake.extension.type": "57",
                    "Parameter: max_idle_timeout (len=4) 60000 ms": {
                        "tls.quic.parameter.type": "1",
                        "tls.quic.parameter.value": "80:00:ea:60",
                    },
                    "Parameter: disable_active_migration (len=0)": {"tls.quic.parameter.type": "12"},
                    "Parameter: active_connection_id_limit (len=1) 8": {
                        "tls.quic.parameter.type": "14",
                        "tls.quic.parameter.value": "08",
                    },
                },
            }
        },
    }
    (p,) = dissect.datagram(layers(long_header("2", frames=ee)), t0=(0, 0)).packets
    (m,) = p.frames[0].tls
    assert m.extensions == (57,)
    assert m.parameters == ((1, "8000ea60"), (12, ""), (14, "08"))
