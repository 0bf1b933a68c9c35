"""retry: the server sent a Retry, the client's next Initial carried the Retry's token (RFC
9000 8.1.2: that token is how the client proves its address), and the handshake then
completed. The Retry's token is read from the Retry packet itself, so a client that sends a
token from elsewhere (a NEW_TOKEN) does not pass.

A client must answer a Retry with the ClientHello it sent before (RFC 9000 17.2.5.2). One that
sends a new one instead leaves a capture whose key log names a client random no ClientHello
before the Retry had; tshark reads the second ClientHello as a retransmission of the first and
decrypts nothing. That capture fails with both randoms, where any other undecryptable one is
"not measurable"."""

from __future__ import annotations

from ..model import CLIENT_HELLO, INITIAL, RETRY, Capture
from . import view
from .result import CaseResult, failed, not_measurable, passed


def check(capture: Capture) -> CaseResult:
    why = view.unmeasurable(capture)
    if why is None:
        return _check(capture)
    changed = _new_hello_after_retry(capture)
    return failed(changed) if changed else not_measurable(why)


def _new_hello_after_retry(capture: Capture) -> str | None:
    """Why the client's handshake after a Retry was not the ClientHello it sent before, or None
    (no Retry, no key log, or a key log naming that ClientHello)."""
    retry = view.first(view.packets(capture, view.SERVER, RETRY))
    hellos = [(d, m) for d, m in view.tls(capture, view.CLIENT, CLIENT_HELLO) if m.random]
    if retry is None or not hellos or not capture.keylog_randoms:
        return None
    if any(m.random in capture.keylog_randoms for _, m in hellos):
        return None
    d, m = hellos[0]
    keys = ", ".join(sorted(r[:8] + "…" for r in capture.keylog_randoms))
    return (
        f"after the Retry at {retry[0].where} the client sent a new ClientHello: the key log's secrets are "
        f"for client random {keys}, the ClientHello at {d.where} had {m.random[:8]}… (RFC 9000 17.2.5.2: "
        "a client MUST use the same one)"
    )


def _check(capture: Capture) -> CaseResult:
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
