"""The cases on captures recorded on loopback (tests/data/captures, SOURCE.md there): every
case has a capture where its feature happened, which it passes, and one where it did not,
which it fails. Real stacks: our endpoint (quinn), aioquic (client and server). Rebinding
and migration were recorded by a client that moves to a new socket mid-connection
(127.0.0.1 -> a new port, or 127.0.0.2), which the server sees as a NAT would show it."""

from __future__ import annotations

import functools
import shutil

import pytest

from longlook.wire.cases import CASES
from longlook.wire.model import Capture
from longlook.wire.tshark import read_capture

from .captures import CAPTURES, PORT, recorded

pytestmark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed")


@functools.cache
def read(name: str, keys: bool = True) -> Capture:
    return read_capture(CAPTURES / f"{name}.pcapng", CAPTURES / f"{name}.keylog" if keys else None, PORT)


def test_every_case_has_a_passing_and_a_failing_recording():
    names = set(recorded())
    assert {f"{case}-{v}" for case in CASES for v in ("pass", "fail")} == names


@pytest.mark.parametrize("name", recorded())
def test_a_recording_gets_its_verdict(name):
    case, expected = name.rsplit("-", 1)
    r = CASES[case](read(name))
    assert r.verdict == {"pass": "passed", "fail": "failed"}[expected], r.evidence
    assert r.evidence


@pytest.mark.parametrize(
    "name, case, verdict, says",
    [
        # our endpoint reuses its socket for the 0-RTT connection: after tshark's second
        # reading (reread.py) the measured connection decrypts whole
        ("zerortt-pass", "transfer", "passed", "over 2 connections"),
        ("zerortt-pass", "resumption", "passed", "connection 2 resumed"),
        # resuming, aioquic's control and QPACK streams leave in 0-RTT, but no request
        ("resumption-pass", "zerortt", "failed", "only on unidirectional streams"),
        # aioquic neither marks ECT nor counts marks
        ("keyupdate-pass", "ecn", "failed", "the client marked none"),
        ("handshake-fail", "handshake", "failed", "TLS alert 51"),
        ("transfer-fail", "transfer", "failed", "and no FIN"),
        ("rebind-addr-fail", "rebind-addr", "failed", "the client's address never changed"),
        ("connection-migration-fail", "rebind-port", "passed", "PATH_RESPONSE"),
    ],
)
def test_what_else_a_recording_shows(name, case, verdict, says):
    r = CASES[case](read(name))
    assert r.verdict == verdict and says in r.evidence, r.evidence


@pytest.mark.parametrize("case", list(CASES))
def test_without_its_key_log_a_recording_is_not_measurable(case):
    r = CASES[case](read("handshake-pass", keys=False))
    assert r.verdict == "not measurable" and "could be decrypted" in r.evidence


def test_gso_super_datagrams_are_read_as_their_segments():
    c = read("handshake-pass")
    assert any("GSO super-datagram" in n for n in c.notes)
    assert all(p.decrypted for d in c.datagrams for p in d.packets)
    assert any(d.segment for d in c.datagrams)


def test_a_late_packet_of_the_first_connection_is_kept_unread():
    c = read("zerortt-pass")
    assert any("filed under the wrong connection" in n for n in c.notes)
    second = [p for d in c.datagrams if d.connection == 1 for p in d.packets if p.type == "1-RTT"]
    assert sum(not p.decrypted for p in second) == 1


def test_a_moved_paths_evidence_says_what_the_server_sent_before_validating_it():
    """RFC 9000 §8.2.1/§9.3: at most three times what it received from the new address until
    the client's PATH_RESPONSE; our endpoint's server sent 1.8x after the address change."""
    r = CASES["rebind-addr"](read("rebind-addr-pass"))
    assert "before validation it sent 2,526 bytes there for 1,399 received (1.8x, within 3x)" in r.evidence
    assert read("rebind-addr-pass").datagrams[0].size == 1200  # a client Initial's UDP payload


def test_a_client_with_zero_length_ids_is_followed_across_its_move():
    # a testbed run (SOURCE.md): quic-go's client, whose packets to it carry no connection ID,
    # rebound by linkem's NAT; tshark alone leaves what the server sent to the new port unread
    c = read_capture(CAPTURES / "zero-length-cid-rebind.pcapng", CAPTURES / "zero-length-cid-rebind.keylog", 4441)
    assert any("read at its first" in n for n in c.notes)
    assert all(p.decrypted for d in c.datagrams for p in d.packets)
    r = CASES["rebind-port"](c)
    assert r.verdict == "passed" and "198.18.5.1:20001" in r.evidence, r.evidence
    moved = [d for d in c.datagrams if d.sport == 4441 and d.dport == 20001]
    assert moved and all(not p.dcid for d in moved for p in d.packets)  # addresses and IDs as captured


def test_zeros_after_a_datagram_s_packets_do_not_stop_decryption():
    # a testbed run (SOURCE.md): quiche's Retry server pads the datagrams of its first flight
    # with zeros after its packets; tshark alone reads them as a 1-RTT packet with a key phase
    # flip and then decrypts none of the server's 1-RTT packets to quic-go's client
    c = read_capture(CAPTURES / "quiche-retry-zero-padding.pcapng", CAPTURES / "quiche-retry-zero-padding.keylog", 4443)
    assert any("zero padding" in n for n in c.notes), c.notes
    assert all(p.decrypted for d in c.datagrams for p in d.packets)
    r = CASES["retry"](c)
    assert r.verdict == "passed" and "HANDSHAKE_DONE from the server at #13" in r.evidence, r.evidence


def test_an_http3_failure_names_the_grease_the_server_refused_and_its_close():
    # a testbed run (SOURCE.md): quiche's client puts two reserved frame types before its
    # HEADERS; kwik's server (flupke) closes with H3_FRAME_UNEXPECTED instead of ignoring them
    c = read_capture(
        CAPTURES / "http3-grease-frame-unexpected.pcapng", CAPTURES / "http3-grease-frame-unexpected.keylog", 4446
    )
    r = CASES["http3"](c)
    assert r.verdict == "failed", r.evidence
    assert "the client sent reserved frame types (0x4adfcf6f4cfe7e5, 0x3a67672e85b726c) at #8" in r.evidence
    assert "the server closed it (application CONNECTION_CLOSE" in r.evidence
    assert "error 0x105: H3_FRAME_UNEXPECTED" in r.evidence, r.evidence
