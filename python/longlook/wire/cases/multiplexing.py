"""multiplexing: several request streams in flight at once on one connection. A stream is in
flight from the client's first STREAM frame on it until the server's FIN on it (or the end
of the capture); a client that waits for each response before the next request never has
two, however many it makes."""

from __future__ import annotations

from ..model import ONE_RTT, Capture
from . import view
from .requests import request_streams
from .result import CaseResult, failed, not_measurable, passed


@view.measurable
def check(capture: Capture) -> CaseResult:
    reqs = request_streams(capture)
    end = len(capture.datagrams)
    most, at, together = 0, None, []
    for s in reqs:  # at each stream's opening, count the streams of its connection then open
        open_now = [
            o
            for o in reqs
            if o.connection == s.connection
            and o.opened <= s.opened < (o.server_fin if o.server_fin is not None else end)
        ]
        if len(open_now) > most:
            most, at, together = len(open_now), s.opened, open_now
    if most >= 2:
        return passed(
            f"{most} request streams in flight at once ({view.streams(o.id for o in together)} "
            f"at {capture.datagrams[at].where}), of {len(reqs)} in all"
        )
    if len(reqs) < 2 and view.hidden(capture, view.CLIENT, ONE_RTT):
        return not_measurable(f"{len(reqs)} request stream seen, and some of the client's packets were not decrypted")
    if not reqs:
        return failed("no request stream: the client sent no STREAM frame on a bidirectional stream")
    if len(reqs) == 1:
        return failed(f"only one request stream ({reqs[0].name}): nothing to multiplex")
    return failed(f"{len(reqs)} request streams, one at a time: each opened after the server ended the one before")
