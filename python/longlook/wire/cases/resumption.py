"""resumption: a later connection resumed the first one's TLS session. Its ClientHello
offers a pre_shared_key, the ServerHello accepts it (RFC 8446 4.2.11: the server echoes the
extension), and the server sends no Certificate: a resumed handshake authenticates by the
PSK. A ClientHello with a PSK the server turned down is a full handshake, hence a failure."""

from __future__ import annotations

from ..model import CERTIFICATE, CLIENT_HELLO, HANDSHAKE, PRE_SHARED_KEY, SERVER_HELLO, Capture
from . import view
from .result import CaseResult, failed, not_measurable, passed


def judge(n: int, conn: Capture) -> CaseResult:
    """Was connection number `n` (from 1) a resumption?"""
    name = f"connection {n}"
    hello = view.first(view.tls(conn, view.CLIENT, CLIENT_HELLO))
    if hello is None:
        return failed(f"{name}: no ClientHello seen")
    if PRE_SHARED_KEY not in hello[1].extensions:
        return failed(f"{name}'s ClientHello at {hello[0].where} offers no pre_shared_key: a full handshake")
    reply = view.first(view.tls(conn, view.SERVER, SERVER_HELLO))
    if reply is None:
        return failed(f"{name}'s ClientHello at {hello[0].where} offers a pre_shared_key; no ServerHello came back")
    cert = view.first(view.tls(conn, view.SERVER, CERTIFICATE))
    if PRE_SHARED_KEY not in reply[1].extensions or cert is not None:
        sent = f" and the server sends a Certificate at {cert[0].where}" if cert else ""
        return failed(
            f"{name}'s ClientHello at {hello[0].where} offers a pre_shared_key; the ServerHello at "
            f"{reply[0].where} {'accepts' if PRE_SHARED_KEY in reply[1].extensions else 'turns it down'}{sent}"
            + (": a full handshake" if cert else "")
        )
    if not any(p.decrypted for _, p in view.packets(conn, view.SERVER, HANDSHAKE)):
        return not_measurable(
            f"{name} resumed in its ServerHello, but the server's Handshake packets were not decrypted"
        )
    return passed(
        f"{name} resumed the session: pre_shared_key in its ClientHello at {hello[0].where} and "
        f"the ServerHello at {reply[0].where}, no Certificate from the server"
    )


@view.measurable
def check(capture: Capture) -> CaseResult:
    conns = view.started(capture)
    if len(conns) < 2:
        return failed(f"{'one connection' if conns else 'no connection'}: no second one to resume a session")
    verdicts = [judge(n, c) for n, c in enumerate(conns[1:], start=2)]
    return next((v for v in verdicts if v.passed), verdicts[0])
