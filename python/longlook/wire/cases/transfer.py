"""transfer: every request stream carried data and ended. The client ended each request
with a FIN, and the server answered each with data and ended it with a FIN (RFC 9000 3.1:
the FIN marks the stream's final size, so a response without one did not complete)."""

from __future__ import annotations

from ..model import ONE_RTT, ZERO_RTT, Capture
from . import view
from .requests import request_streams
from .result import CaseResult, failed, not_measurable, passed


@view.measurable
def check(capture: Capture) -> CaseResult:
    reqs = request_streams(capture)
    if not reqs:
        if view.hidden(capture, view.CLIENT, ONE_RTT, ZERO_RTT):
            return not_measurable("no request stream seen, and some of the client's packets were not decrypted")
        return failed("no request stream: the client sent no STREAM frame on a bidirectional stream")
    problems = []
    for s in reqs:
        if not s.client_fin:
            problems.append(f"{s.name}: the client's request has no FIN")
        if not s.server_bytes:
            problems.append(f"{s.name}: no data from the server")
        elif s.server_fin is None:
            problems.append(f"{s.name}: {s.server_bytes:,} bytes from the server and no FIN")
    if problems:
        hidden = view.hidden(capture, view.SERVER, ONE_RTT)
        if hidden:
            return not_measurable(f"{problems[0]}, but {hidden} of the server's 1-RTT packets were not decrypted")
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        return failed("; ".join(problems[:3]) + more)
    total = sum(s.server_bytes for s in reqs)
    conns = len({s.connection for s in reqs})
    over = f" over {conns} connections" if conns > 1 else ""
    return passed(
        f"{len(reqs)} request streams{over} ({view.streams(s.id for s in reqs)}), each ended by the client, "
        f"answered with data and a FIN by the server ({total:,} bytes of stream data)"
    )
