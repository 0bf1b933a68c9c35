"""Rules every case keeps: registered once by its name; "not measurable", never "passed",
on a capture without QUIC or without keys; and failed on a completed handshake that shows
none of the features the cases look for, so no case passes by default."""

from __future__ import annotations

import pytest

from longlook.errors import LonglookError
from longlook.wire.cases import CASES, check
from longlook.wire.model import Capture

from .synth import c, capture, completed, handshake, hello, initial, one, s

NAMES = [
    "handshake", "transfer", "multiplexing", "resumption", "zerortt", "retry", "keyupdate", "chacha20", "http3",
    "v2", "ecn", "rebind-port", "rebind-addr", "connection-migration",
]  # fmt: skip


def test_every_interop_case_is_registered_by_its_name():
    assert list(CASES) == NAMES


def test_an_unknown_case_is_one_clear_error():
    with pytest.raises(LonglookError, match="unknown interop case 'hanshake'") as e:
        check("hanshake", capture(*completed()))
    assert "handshake" in e.value.hint


@pytest.mark.parametrize("case", NAMES)
def test_no_quic_is_not_measurable(case):
    r = check(case, Capture((), 443))
    assert (r.verdict, r.evidence) == ("not measurable", "no QUIC packet to or from port 443 in the capture")


@pytest.mark.parametrize("case", NAMES)
def test_no_keys_is_not_measurable(case):
    locked = [
        c(initial()),
        s(initial(), handshake(decrypted=False)),
        c(handshake(decrypted=False)),
        s(one(decrypted=False)),
        c(one(decrypted=False)),
    ]
    r = check(case, capture(*locked))
    assert r.verdict == "not measurable"
    assert "none of its 4 Handshake, 0-RTT and 1-RTT packets could be decrypted" in r.evidence


@pytest.mark.parametrize("case", NAMES[1:])
def test_a_bare_handshake_passes_no_other_case(case):
    r = check(case, capture(*completed()))
    assert r.verdict == "failed", r.evidence
    assert r.evidence


def test_initials_alone_are_measurable_and_fail_the_handshake():
    r = check("handshake", capture(*hello()[:1]))
    assert r.verdict == "failed"
