"""The chacha20 interop case for the Rust-crate adapters of msquic, s2n-quic and gm-quic:
how each adapter asks its client (the flag at the end of the fetch's arguments, nothing else
changed), and gm-quic, whose library cannot offer ChaCha20 alone, declaring so. Whether the
client then offers ChaCha20 alone is the wire's to say (the matrix's chacha20 case)."""

from __future__ import annotations

from pathlib import Path

import pytest

from longlook.stacks.base import CLIENT_CASES, ClientCall
from longlook.stacks.registry import STACKS, resolve, stack_class

ASKED = ("msquic", "s2n-quic")  # their clients take `--chacha20`


def fetch_call(stack, tmp_path: Path) -> ClientCall:
    """A fetch as the runner makes it: the adapter's client call, its key log added."""
    call = stack.client_argv(
        url="https://198.18.2.2:4433/index.html",
        mode="page",
        ca=tmp_path / "cert.pem",
        run_id="r1",
        out=tmp_path / "fetch.json",
        qlog_dir=tmp_path / "qlog",
        timeout_s=30.0,
        cc=stack.ccs[0],
    )
    return stack.with_keylog(call, tmp_path / "keys.log") or call


@pytest.mark.parametrize("name", ASKED)
def test_its_client_is_asked_for_chacha20_by_a_fetch_flag(name, tmp_path):
    stack = resolve(name)
    assert "chacha20" in stack.client_cases and "chacha20" not in stack.unsupported_as_client
    call = fetch_call(stack, tmp_path)
    calls = stack.case_calls("chacha20", call, tmp_path / "state")
    assert calls.warmup is None
    argv = calls.measured.argv
    assert argv[:2] == [str(stack.binary), "fetch"] and argv[-1] == "--chacha20"
    assert argv[:-1] == call.argv and calls.measured.env == call.env  # the fetch otherwise unchanged
    assert not (tmp_path / "state").exists()  # no session state: one connection


@pytest.mark.parametrize("name", ASKED)
def test_other_cases_are_not_asked_of_it(name, tmp_path):
    stack = resolve(name)
    call = fetch_call(stack, tmp_path)
    for case in (*CLIENT_CASES, "handshake"):
        if case not in stack.client_cases:
            assert stack.case_calls(case, call, tmp_path) is None, case


def test_gm_quic_declares_its_client_cannot_offer_chacha20_alone(tmp_path):
    gm = resolve("gm-quic")
    assert "chacha20" not in gm.client_cases
    why = gm.unsupported_as_client["chacha20"]
    assert "AES_128_GCM" in why and "Initial" in why
    assert gm.case_calls("chacha20", fetch_call(gm, tmp_path), tmp_path) is None


@pytest.mark.parametrize("name", list(STACKS))
def test_a_case_is_either_asked_or_declared_unsupported_never_both(name):
    for version in stack_class(name).versions:  # a release may differ from another (ngtcp2's)
        stack = stack_class(name)(version)
        assert set(stack.client_cases) <= set(CLIENT_CASES), stack.spec
        assert not set(stack.client_cases) & set(stack.unsupported_as_client), stack.spec
