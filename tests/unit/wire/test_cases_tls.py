"""The cases about the handshake's TLS and QUIC versions, on hand-made captures: resumption,
zerortt, retry, keyupdate, chacha20, v2. Each passes when its feature happened and fails,
saying what was missing, when it did not."""

from __future__ import annotations

from longlook.wire.cases import chacha20, keyupdate, resumption, retry, v2, zerortt
from longlook.wire.model import EARLY_DATA, PRE_SHARED_KEY, V1, V2

from .synth import (
    DONE,
    FINISHED,
    ack,
    c,
    capture,
    client_hello,
    completed,
    crypto,
    ee,
    handshake,
    hello,
    initial,
    one,
    retry as retry_packet,
    s,
    server_hello,
    stream,
    zero_rtt,
)


def resumed(accepted: bool = True, conn: int = 1) -> list:
    """A second connection offering a PSK; the server accepts it (no Certificate) or not."""
    if accepted:
        return hello(
            conn, ch=client_hello(PRE_SHARED_KEY), sh=server_hello(PRE_SHARED_KEY), server_msgs=(ee(), FINISHED)
        )
    return hello(conn, ch=client_hello(PRE_SHARED_KEY))


def test_resumption_passes_when_the_second_connection_resumes():
    r = resumption.check(capture(*completed(conn=0), *resumed()))
    assert r.verdict == "passed"
    assert "connection 2 resumed the session" in r.evidence and "at #6" in r.evidence


def test_resumption_fails_when_the_server_turns_the_psk_down():
    r = resumption.check(capture(*completed(conn=0), *resumed(accepted=False)))
    assert r.verdict == "failed"
    assert "turns it down and the server sends a Certificate at #7: a full handshake" in r.evidence


def test_resumption_fails_when_the_second_client_hello_offers_no_psk():
    r = resumption.check(capture(*completed(conn=0), *completed(conn=1)))
    assert r.verdict == "failed" and "offers no pre_shared_key" in r.evidence


def test_resumption_fails_on_one_connection():
    r = resumption.check(capture(*completed()))
    assert (r.verdict, r.evidence) == ("failed", "one connection: no second one to resume a session")


def test_resumption_is_not_measurable_when_the_certificate_could_hide():
    hidden = hello(1, ch=client_hello(PRE_SHARED_KEY), sh=server_hello(PRE_SHARED_KEY))
    hidden[1] = s(hidden[1].packets[0], handshake(decrypted=False), conn=1)
    r = resumption.check(capture(*completed(conn=0), *hidden))
    assert r.verdict == "not measurable"


def early(accepted: bool = True, streams=(0,), decrypted: bool = True) -> list:
    """A resumed connection whose client sends 0-RTT packets on `streams`."""
    return [
        c(initial(crypto(client_hello(PRE_SHARED_KEY, EARLY_DATA))), conn=1),
        c(zero_rtt(*(stream(i, 30, fin=True) for i in streams), decrypted=decrypted), conn=1),
        s(
            initial(crypto(server_hello(PRE_SHARED_KEY))),
            handshake(crypto(ee(*([EARLY_DATA] if accepted else [])), FINISHED)),
            conn=1,
        ),
    ]


def test_zerortt_passes_when_the_server_accepts_the_early_requests():
    r = zerortt.check(capture(*completed(conn=0), *early()))
    assert r.verdict == "passed"
    assert "1 0-RTT packet from the client (from #7) with STREAM frames on streams 0" in r.evidence
    assert "early_data in its EncryptedExtensions at #8" in r.evidence


def test_zerortt_fails_when_the_server_refuses():
    r = zerortt.check(capture(*completed(conn=0), *early(accepted=False)))
    assert r.verdict == "failed" and "the server refused them" in r.evidence


def test_zerortt_fails_without_0rtt_packets():
    r = zerortt.check(capture(*completed(conn=0), *resumed()))
    assert (r.verdict, r.evidence) == ("failed", "no 0-RTT packet from the client in 2 connections")


def test_zerortt_fails_when_0rtt_carries_no_request():
    r = zerortt.check(capture(*completed(conn=0), *early(streams=(2, 6))))
    assert r.verdict == "failed" and "only on unidirectional streams 2, 6: no request" in r.evidence


def test_zerortt_is_not_measurable_without_the_early_secret():
    r = zerortt.check(capture(*completed(conn=0), *early(decrypted=False)))
    assert r.verdict == "not measurable" and "CLIENT_EARLY_TRAFFIC_SECRET" in r.evidence


def with_retry(token_back: str) -> list:
    return [
        c(initial(crypto(client_hello()))),
        s(retry_packet("ab" * 20)),
        c(initial(crypto(client_hello()), token=token_back)),
        *completed()[1:],
    ]


def test_retry_passes_when_the_client_returns_the_token_and_the_handshake_completes():
    r = retry.check(capture(*with_retry("ab" * 20)))
    assert r.verdict == "passed"
    assert r.evidence.startswith("Retry at #2, its token (20 bytes) in the client's Initial at #3; HANDSHAKE_DONE")


def test_retry_fails_when_the_client_ignores_the_token():
    r = retry.check(capture(*with_retry("")))
    assert (r.verdict, r.evidence) == ("failed", "the client's Initial at #3 after the Retry at #2 carries no token")


def test_retry_fails_without_a_retry():
    assert retry.check(capture(*completed())).evidence == "no Retry packet from the server"


def undecrypted_after_retry(keylog_randoms: frozenset[str]):
    """A Retry answered by a ClientHello tshark did not read (a new one, or one whose keys the
    key log lacks): nothing protected decrypted, the key log naming `keylog_randoms`."""
    from dataclasses import replace

    from longlook.wire.model import TlsMessage

    first = TlsMessage(1, cipher_suites=(0x1301,), extensions=(43, 51), random="13b2" * 16)
    datagrams = [
        c(initial(crypto(first))),
        s(retry_packet("ab" * 20)),
        c(initial(token="ab" * 20)),  # its CRYPTO read as a retransmission: no message in it
        s(initial(crypto(server_hello())), handshake(decrypted=False)),
        c(handshake(decrypted=False)),
    ]
    return replace(capture(*datagrams), keylog_randoms=keylog_randoms)


def test_retry_fails_when_the_client_answers_it_with_a_new_client_hello():
    r = retry.check(undecrypted_after_retry(frozenset({"7b83" * 16})))
    assert r.verdict == "failed" and "sent a new ClientHello" in r.evidence, r
    assert "7b837b83…" in r.evidence and "13b213b2…" in r.evidence and "17.2.5.2" in r.evidence


def test_retry_is_not_measurable_when_the_key_log_names_the_same_client_hello_or_is_missing():
    for randoms in (frozenset({"13b2" * 16}), frozenset()):
        assert retry.check(undecrypted_after_retry(randoms)).verdict == "not measurable"


def updated(client: bool = True, server: bool = True) -> list:
    return [
        *completed(),
        c(one(stream(0, 10, fin=True), kp=int(client))),
        s(one(stream(0, 100, fin=True), kp=int(server))),
        c(one(ack(), kp=int(client))),
    ]


def test_keyupdate_passes_when_the_client_updates_and_the_server_follows():
    r = keyupdate.check(capture(*updated()))
    assert r.verdict == "passed"
    assert r.evidence == (
        "the client updated its keys at #6 and the server followed at #7; 1 key update from the client in all, "
        "every packet decrypted"
    )


def test_keyupdate_fails_when_the_server_never_follows():
    r = keyupdate.check(capture(*updated(server=False)))
    assert (r.verdict, r.evidence) == ("failed", "the client updated its keys at #6; the server never followed")


def test_keyupdate_fails_when_nobody_updates():
    r = keyupdate.check(capture(*updated(client=False, server=False)))
    assert (r.verdict, r.evidence) == ("failed", "no 1-RTT packet in key phase 1 from the client (3 in key phase 0)")


def test_keyupdate_fails_when_the_server_started_it_and_the_client_only_followed():
    # quinn and quic-go update on their own after some packets: a server's update the client
    # answers shows nothing of the client starting one
    dgs = [*completed(), s(one(stream(0, 100), kp=1)), c(one(ack(), kp=1)), s(one(stream(0, 100, fin=True), kp=1))]
    r = keyupdate.check(capture(*dgs))
    assert (r.verdict, r.evidence) == (
        "failed",
        "the server started the key update at #6 and the client only followed at #7; "
        "the client started none of its own",
    )


def test_keyupdate_passes_on_the_clients_own_update_after_one_the_server_started():
    dgs = [
        *completed(),
        s(one(stream(0, 100), kp=1, pn=3)),
        c(one(ack(), kp=1, pn=3)),
        c(one(ack(), kp=0, pn=4)),
        s(one(stream(0, 100, fin=True), kp=0, pn=4)),
    ]
    r = keyupdate.check(capture(*dgs))
    assert r.verdict == "passed"
    assert r.evidence.startswith("the client updated its keys at #8 (its update 2, after 1 the server started)")


def test_keyupdate_a_late_packet_in_the_old_phase_is_no_update():
    # the client's packet 2 (old keys) reordered behind its packet 3 (new keys): the server's
    # first new-phase packet still came after the client's, and the late one starts nothing
    dgs = [
        *completed(),
        c(one(ack(), kp=1, pn=3)),
        c(one(ack(), kp=0, pn=2)),
        s(one(stream(0, 100, fin=True), kp=1, pn=3)),
    ]
    r = keyupdate.check(capture(*dgs))
    assert r.verdict == "passed"
    assert r.evidence.startswith("the client updated its keys at #6 and the server followed at #8")


def test_keyupdate_is_not_measurable_when_phase_1_is_not_decrypted():
    r = keyupdate.check(capture(*updated(server=False), s(one(kp=1, decrypted=False))))
    assert r.verdict == "not measurable" and "none decrypted" in r.evidence


def test_chacha20_passes_when_the_server_hello_chooses_it():
    r = chacha20.check(capture(*completed(sh=server_hello(suite=0x1303))))
    assert r.verdict == "passed"
    assert r.evidence.startswith("the ServerHello at #2 chose TLS_CHACHA20_POLY1305_SHA256 (0x1303); HANDSHAKE_DONE")


def test_chacha20_fails_on_aes():
    r = chacha20.check(capture(*completed()))
    assert r.verdict == "failed"
    assert r.evidence == (
        "the ServerHello at #2 chose TLS_AES_128_GCM_SHA256 (0x1301); the client offered 0x1301, 0x1302, 0x1303"
    )


def test_chacha20_fails_when_the_handshake_does_not_complete():
    r = chacha20.check(capture(*hello(sh=server_hello(suite=0x1303))))
    assert r.verdict == "failed" and "no HANDSHAKE_DONE" in r.evidence


def test_v2_passes_when_the_connection_moves_to_v2():
    r = v2.check(capture(*completed(version=V2)))
    assert r.verdict == "passed" and "in v2 (0x6b3343cf); HANDSHAKE_DONE" in r.evidence


def test_v2_fails_on_v1():
    r = v2.check(capture(*completed(version=V1)))
    assert (r.verdict, r.evidence) == (
        "failed",
        "the server's Initial packets (from #2) are version 0x00000001, not v2 (0x6b3343cf)",
    )


def test_v2_fails_when_a_handshake_packet_stays_v1():
    mixed = completed(version=V2)
    mixed[2] = c(handshake(crypto(FINISHED), version=V1))
    r = v2.check(capture(*mixed))
    assert r.verdict == "failed" and "the client's Handshake packets (from #3) are version 0x00000001" in r.evidence


def test_v2_fails_when_the_handshake_does_not_complete():
    r = v2.check(capture(*hello(version=V2), c(handshake(crypto(FINISHED), version=V2))))
    assert r.verdict == "failed" and "no HANDSHAKE_DONE from the server" in r.evidence


def test_done_alone_is_no_handshake_in_v2():
    r = v2.check(capture(*hello(version=V2), s(one(DONE)), c(one(ack()))))
    assert r.verdict == "failed" and "no Handshake packet from the client" in r.evidence
