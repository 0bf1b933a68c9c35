"""v2: the connection moved to QUIC version 2 (RFC 9369, 0x6b3343cf) and completed in it.
A client may open in v1 and let compatible version negotiation (RFC 9368) move it, so its
first Initial may be v1, and so may a server's Initial sent before it switched (one without
CRYPTO data). The server must send Initial packets in v2, its and the client's Handshake
packets must all be v2, and the handshake must complete."""

from __future__ import annotations

from ..model import HANDSHAKE, INITIAL, V2, Capture
from . import view
from .result import CaseResult, failed, passed


def _versions(capture: Capture, by: str, kind: str) -> tuple[set[int], object]:
    found = list(view.packets(capture, by, kind))
    return {p.version for _, p in found}, (found[0][0] if found else None)


@view.measurable
def check(capture: Capture) -> CaseResult:
    conns = view.started(capture)
    if not conns:
        return failed("no Initial packet from a client")
    conn = conns[0]
    for by, kind in ((view.SERVER, INITIAL), (view.SERVER, HANDSHAKE), (view.CLIENT, HANDSHAKE)):
        versions, where = _versions(conn, by, kind)
        if not versions:
            return failed(f"no {kind} packet from the {by}")
        if V2 not in versions or (kind == HANDSHAKE and versions != {V2}):
            shown = ", ".join(f"0x{v:08x}" for v in sorted(v for v in versions if v is not None))
            return failed(f"the {by}'s {kind} packets (from {where.where}) are version {shown}, not v2 (0x{V2:08x})")
    done = view.completion(conn)
    if not done.passed:
        return done
    return passed(f"the server's Initial and both sides' Handshake packets in v2 (0x{V2:08x}); {done.evidence}")
