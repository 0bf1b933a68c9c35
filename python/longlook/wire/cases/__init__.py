"""The interop cases, judged from a decrypted capture: one module per case, each a function
`check(capture) -> CaseResult`, registered here by the name the QUIC interop runner gives
it. What each checks, from which fields and why: its module's docstring, and
wire/README.md."""

from __future__ import annotations

from ..model import Capture
from . import (
    chacha20,
    connection_migration,
    ecn,
    handshake,
    http3,
    keyupdate,
    multiplexing,
    rebind_addr,
    rebind_port,
    resumption,
    retry,
    transfer,
    v2,
    zerortt,
)
from .result import FAILED, NOT_MEASURABLE, PASSED, CaseResult
from .view import Check

CASES: dict[str, Check] = {
    "handshake": handshake.check,
    "transfer": transfer.check,
    "multiplexing": multiplexing.check,
    "resumption": resumption.check,
    "zerortt": zerortt.check,
    "retry": retry.check,
    "keyupdate": keyupdate.check,
    "chacha20": chacha20.check,
    "http3": http3.check,
    "v2": v2.check,
    "ecn": ecn.check,
    "rebind-port": rebind_port.check,
    "rebind-addr": rebind_addr.check,
    "connection-migration": connection_migration.check,
}

__all__ = ["CASES", "FAILED", "NOT_MEASURABLE", "PASSED", "CaseResult", "check"]


def check(case: str, capture: Capture) -> CaseResult:
    """The verdict of one case (a name of CASES) on a capture."""
    from ...errors import LonglookError

    if case not in CASES:
        raise LonglookError(f"unknown interop case {case!r}", hint=f"one of: {', '.join(CASES)}")
    return CASES[case](capture)
