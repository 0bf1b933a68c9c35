"""The cases about a connection and its streams, on hand-made captures: handshake, transfer,
multiplexing, http3. Each passes when its feature happened and fails, saying what was
missing, when it did not."""

from __future__ import annotations

from longlook.wire.cases import handshake, http3, multiplexing, transfer

from .synth import CLIENT, DONE, c, capture, close, completed, hello, initial, one, s, stream


def test_handshake_passes_on_a_completed_handshake():
    r = handshake.check(capture(*completed()))
    assert r.verdict == "passed"
    assert "HANDSHAKE_DONE from the server at #4" in r.evidence


def test_handshake_fails_when_the_client_closes_before_handshake_done():
    r = handshake.check(capture(*hello(), c(one(close(0x12A)))))
    assert r.verdict == "failed"
    assert "no HANDSHAKE_DONE from the server" in r.evidence
    assert "the client closed it" in r.evidence and "TLS alert 42" in r.evidence


def test_handshake_fails_when_the_server_never_answers():
    r = handshake.check(capture(c(initial()), c(initial())))
    assert (r.verdict, r.evidence) == ("failed", "the server never answered the client's Initial at #1")


def test_handshake_fails_on_two_connections():
    r = handshake.check(capture(*completed(conn=0), *completed(conn=1)))
    assert r.verdict == "failed" and "2 connections (starting at #1, #6)" in r.evidence


def test_handshake_fails_without_1rtt_from_the_client():
    r = handshake.check(capture(*hello(), s(one(DONE))))
    assert r.verdict == "failed" and "no 1-RTT packet from the client" in r.evidence


def test_handshake_is_not_measurable_when_the_servers_1rtt_packets_are_not_decrypted():
    r = handshake.check(capture(*hello(), s(one(decrypted=False)), c(one(stream(0)))))
    assert r.verdict == "not measurable" and "not decrypted" in r.evidence


def page(*, fin: bool = True) -> list:
    """Two requests, both answered; `fin=False`: the second response never ends."""
    return [
        *completed(),
        c(one(stream(0, 40, fin=True), stream(4, 40, fin=True))),
        s(one(stream(0, 1000, fin=True))),
        s(one(stream(4, 1000, fin=fin))),
    ]


def test_transfer_passes_when_every_request_is_answered_and_ended():
    r = transfer.check(capture(*page()))
    assert r.verdict == "passed"
    assert "2 request streams (0, 4)" in r.evidence and "2,000 bytes" in r.evidence


def test_transfer_fails_on_a_response_without_fin():
    r = transfer.check(capture(*page(fin=False)))
    assert (r.verdict, r.evidence) == ("failed", "stream 4: 1,000 bytes from the server and no FIN")


def test_transfer_fails_on_a_request_nobody_answered():
    r = transfer.check(capture(*completed(), c(one(stream(0, 40, fin=True)))))
    assert r.verdict == "failed" and "stream 0: no data from the server" in r.evidence


def test_transfer_fails_without_requests():
    r = transfer.check(capture(*completed()))
    assert r.verdict == "failed" and "no request stream" in r.evidence


def test_transfer_is_not_measurable_when_the_missing_fin_may_be_hidden():
    r = transfer.check(capture(*page(fin=False), s(one(decrypted=False))))
    assert r.verdict == "not measurable"


def test_multiplexing_passes_with_two_requests_in_flight():
    r = multiplexing.check(capture(*page()))
    assert r.verdict == "passed" and "2 request streams in flight at once (0, 4 at #6)" in r.evidence


def test_multiplexing_fails_on_requests_one_at_a_time():
    sequential = [
        *completed(),
        c(one(stream(0, 40, fin=True))),
        s(one(stream(0, 1000, fin=True))),
        c(one(stream(4, 40, fin=True))),
        s(one(stream(4, 1000, fin=True))),
    ]
    r = multiplexing.check(capture(*sequential))
    assert r.verdict == "failed" and "one at a time" in r.evidence


def test_multiplexing_fails_on_a_single_request():
    r = multiplexing.check(capture(*completed(), c(one(stream(0, 40, fin=True))), s(one(stream(0, 9, fin=True)))))
    assert r.verdict == "failed" and "only one request stream" in r.evidence


def test_http3_passes_with_settings_and_headers_both_ways():
    both = [*completed(), c(one(stream(2)), h3=[4]), s(one(stream(3)), h3=[4]), c(one(stream(0)), h3=[1])]
    r = http3.check(capture(*both, s(one(stream(0)), h3=[1, 0])))
    assert r.verdict == "passed" and "the server's HEADERS at #9" in r.evidence


def test_http3_fails_when_the_client_sends_none():
    r = http3.check(capture(*completed(), s(one(stream(3)), h3=[4]), c(one(stream(0)))))
    assert r.verdict == "failed"
    assert r.evidence == "no SETTINGS from the client; no HEADERS from the client; no HEADERS from the server"


def test_http3_names_the_datagram_of_each_frame():
    r = http3.check(capture(*completed(), c(one(), h3=[4, 1]), s(one(), h3=[4, 1], to=CLIENT), s(one(DONE))))
    assert "the client's SETTINGS at #6, the client's HEADERS at #6" in r.evidence
