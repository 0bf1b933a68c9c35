"""handshake: one connection, and its handshake completed (the server's HANDSHAKE_DONE,
1-RTT packets both ways). A second connection would mean the client gave up on the first
or resumed a session, which other cases look for."""

from __future__ import annotations

from ..model import Capture
from . import view
from .result import CaseResult, failed


@view.measurable
def check(capture: Capture) -> CaseResult:
    conns = view.started(capture)
    if not conns:
        return failed("no Initial packet from a client")
    if len(conns) > 1:
        at = ", ".join(c.datagrams[0].where for c in conns)
        return failed(f"{len(conns)} connections (starting at {at}); one handshake was expected")
    return view.completion(conns[0])
