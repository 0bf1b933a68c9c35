"""chacha20: the handshake completed with TLS_CHACHA20_POLY1305_SHA256 (0x1303). The cipher
suite is the server's choice, read from its ServerHello; every connection's must be it."""

from __future__ import annotations

from ..model import CIPHER_SUITES, CLIENT_HELLO, SERVER_HELLO, Capture
from . import view
from .result import CaseResult, failed, passed

CHACHA20 = 0x1303


def _name(suite: int | None) -> str:
    return "none" if suite is None else f"{CIPHER_SUITES.get(suite, 'unknown')} (0x{suite:04x})"


@view.measurable
def check(capture: Capture) -> CaseResult:
    conns = view.started(capture)
    hellos = [(c, view.first(view.tls(c, view.SERVER, SERVER_HELLO))) for c in conns]
    if not any(h for _, h in hellos):
        return failed("no ServerHello from the server")
    for conn, hello in hellos:
        if hello is None:
            continue
        d, m = hello
        if m.cipher_suite != CHACHA20:
            offer = view.first(view.tls(conn, view.CLIENT, CLIENT_HELLO))
            offered = ", ".join(f"0x{s:04x}" for s in offer[1].cipher_suites) if offer else "unknown"
            return failed(f"the ServerHello at {d.where} chose {_name(m.cipher_suite)}; the client offered {offered}")
    conn, (d, m) = next((c, h) for c, h in hellos if h)
    done = view.completion(conn)
    if not done.passed:
        return done
    return passed(f"the ServerHello at {d.where} chose {_name(m.cipher_suite)}; {done.evidence}")
