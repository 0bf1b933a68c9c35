"""retry: the server sent a Retry, the client's next Initial carried the Retry's token (RFC
9000 8.1.2: that token is how the client proves its address), and the handshake then
completed. The Retry's token is read from the Retry packet itself, so a client that sends a
token from elsewhere (a NEW_TOKEN) does not pass."""

from __future__ import annotations

from ..model import INITIAL, RETRY, Capture
from . import view
from .result import CaseResult, failed, passed


@view.measurable
def check(capture: Capture) -> CaseResult:
    index = {id(d): i for i, d in enumerate(capture.datagrams)}
    retries = [(d, p) for d, p in view.packets(capture, view.SERVER, RETRY)]
    if not retries:
        return failed("no Retry packet from the server")
    d, retry = retries[0]
    if not retry.token:
        return failed(f"the Retry at {d.where} carries no token")
    tokens = {p.token for _, p in retries}
    after = [(e, p) for e, p in view.packets(capture, view.CLIENT, INITIAL) if index[id(e)] > index[id(d)]]
    if not after:
        return failed(f"no Initial from the client after the Retry at {d.where}")
    used = view.first((e, p) for e, p in after if p.token in tokens)
    if used is None:
        got = after[0][1].token
        return failed(
            f"the client's Initial at {after[0][0].where} after the Retry at {d.where} carries "
            + (f"another token ({len(got) // 2} bytes)" if got else "no token")
        )
    conn = next(c for c in view.connections(capture) if any(x is used[0] for x in c.datagrams))
    done = view.completion(conn)
    if not done.passed:
        return done
    return passed(
        f"Retry at {d.where}, its token ({len(retry.token) // 2} bytes) in the client's Initial at "
        f"{used[0].where}; {done.evidence}"
    )
