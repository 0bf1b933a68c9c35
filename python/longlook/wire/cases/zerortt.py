"""zerortt: the client sent requests in 0-RTT packets and the server took them. 0-RTT
packets from the client must carry STREAM frames on a request stream (client-initiated
bidirectional): an HTTP/3 client's control and QPACK streams (unidirectional) leave in 0-RTT
whenever it resumes, with no request among them. And the server's
EncryptedExtensions must carry early_data: that is how a TLS 1.3 server says it accepted the
early data (RFC 8446 4.2.10; RFC 9001 4.6.2). Without it the 0-RTT packets were dropped
unread and the requests had to be sent again in 1-RTT."""

from __future__ import annotations

from ..model import EARLY_DATA, ENCRYPTED_EXTENSIONS, ZERO_RTT, Capture
from . import view
from .result import CaseResult, failed, not_measurable, passed


def judge(conn: Capture) -> CaseResult:
    sent = list(view.packets(conn, view.CLIENT, ZERO_RTT))
    opened = [(d, p) for d, p in sent if p.decrypted]
    if not opened:
        return not_measurable(
            f"{view.count(len(sent), '0-RTT packet')} from the client (from {sent[0][0].where}), none decrypted "
            "(no CLIENT_EARLY_TRAFFIC_SECRET in the key log)"
        )
    ids = [f.stream_id for _, p in opened for f in p.frames if f.is_stream]
    if not any(i % 4 == 0 for i in ids):
        on = f"STREAM frames only on unidirectional streams {view.streams(ids)}" if ids else "no STREAM frame"
        sent_them = f"{view.count(len(opened), '0-RTT packet')} from the client (from {opened[0][0].where})"
        return failed(f"{sent_them} with {on}: no request")
    what = (
        f"{view.count(len(sent), '0-RTT packet')} from the client (from {sent[0][0].where}) with STREAM frames "
        f"on streams {view.streams(ids)}"
    )
    ee = view.first(view.tls(conn, view.SERVER, ENCRYPTED_EXTENSIONS))
    if ee is None:
        return not_measurable(
            f"{what}; the server's EncryptedExtensions was not seen (Handshake packets not decrypted?)"
        )
    if EARLY_DATA not in ee[1].extensions:
        return failed(f"{what}, but the server refused them: no early_data in its EncryptedExtensions at {ee[0].where}")
    return passed(f"{what}; the server accepted them: early_data in its EncryptedExtensions at {ee[0].where}")


@view.measurable
def check(capture: Capture) -> CaseResult:
    tried = [c for c in view.connections(capture) if view.first(view.packets(c, view.CLIENT, ZERO_RTT))]
    if not tried:
        n = len(view.started(capture))
        return failed(f"no 0-RTT packet from the client in {n} connection{'s' if n != 1 else ''}")
    verdicts = [judge(c) for c in tried]
    return next((v for v in verdicts if v.passed), verdicts[0])
