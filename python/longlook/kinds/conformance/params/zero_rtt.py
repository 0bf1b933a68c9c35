"""0-RTT support (Marx et al., EPIQ'20), both sides, from the fetch document of a resumed
connection (a warm-up connection for a session ticket, then one sending its request as
0-RTT; `zero_rtt: {attempted, accepted, tickets, early_data_tickets}`, docs/interfaces.md).

- The server's side, for every stack: our client resumes against the stack's server. It
  accepts 0-RTT, rejects it (refuses the early data, or its tickets allow none), or sends no
  session ticket at all.
- The client's side: where the stack's own client in longlook can resume (today ours), did
  it send its request as 0-RTT; any other stack's client is not measurable, and said so.

Where the document times its first request and its handshake, an accepted 0-RTT whose
request still went out after the handshake (a client that waits for it, or a path so short
the handshake wins) is said so: it saved no round trip."""

from __future__ import annotations

NAN = float("nan")
CLIENT_CANNOT_RESUME = "not measurable: its client in longlook keeps no session ticket"
NOT_REPORTED = "not reported by the client"
LATE = "accepted, but the request went out after the handshake"
# the server's side
ACCEPTS = "accepts 0-RTT"
REFUSES = "rejects 0-RTT (refused the early data)"
NO_EARLY_DATA = "rejects 0-RTT (its session tickets allow no early data)"
NO_TICKET = "sends no session ticket"
CLOSES = "accepts 0-RTT, then closes the connection"
CLOSES_REJECTED = "rejects 0-RTT, then closes the connection"
NO_COUNTS = "no 0-RTT ticket (none sent, or none allowing early data)"  # a client without ticket counts
UNUSED_TICKET = "not measurable: our client did not use the ticket allowing early data"


def zero_rtt(document: dict | None, client_resumes: bool) -> dict:
    """The client's side. {value, label}: value 1 accepted, 0 sent and rejected or not sent,
    NaN unknown."""
    if not client_resumes:
        return {"value": NAN, "label": CLIENT_CANNOT_RESUME}
    z = (document or {}).get("zero_rtt")
    if not isinstance(z, dict):
        return {"value": NAN, "label": NOT_REPORTED}
    if not z.get("attempted"):
        return {"value": 0.0, "label": "not sent (no ticket or no early data)"}
    if not z.get("accepted"):
        return {"value": 0.0, "label": "sent, rejected by the server"}
    if _request_after_handshake(document):
        return {"value": 1.0, "label": LATE}
    return {"value": 1.0, "label": "sent, accepted"}


def server_zero_rtt(document: dict | None) -> dict | None:
    """The server's side, from our client's resumed connection to it. {value, label, note}:
    value 1 accepted, 0 not (or its request went unanswered), NaN unknown; the note gives the
    warm-up's ticket counts. None: nothing was measured (the fetch failed otherwise than by
    the server closing the 0-RTT connection)."""
    if not document:
        return None
    z = document.get("zero_rtt")
    if not isinstance(z, dict):
        return {"value": NAN, "label": NOT_REPORTED, "note": ""}
    tickets, early = z.get("tickets"), z.get("early_data_tickets")
    note = (
        f"warm-up: {tickets} session ticket(s), {early} allowing early data"
        if isinstance(tickets, int) and isinstance(early, int)
        else ""
    )
    if document.get("ok") is False:
        if not (z.get("attempted") and closed_by_peer(document.get("error"))):
            return None
        return {
            "value": 0.0,
            "label": CLOSES if z.get("accepted") else CLOSES_REJECTED,
            "note": "; ".join(filter(None, [note, f"our client: {document.get('error')}"])),
        }
    if not z.get("attempted"):
        if not note:
            return {"value": 0.0, "label": NO_COUNTS, "note": note}
        if early > 0:  # a usable ticket, not used: nothing is known of the server's 0-RTT
            return {"value": NAN, "label": UNUSED_TICKET, "note": note}
        return {"value": 0.0, "label": NO_TICKET if tickets == 0 else NO_EARLY_DATA, "note": note}
    if not z.get("accepted"):
        return {"value": 0.0, "label": REFUSES, "note": note}
    return {"value": 1.0, "label": LATE if _request_after_handshake(document) else ACCEPTS, "note": note}


def closed_by_peer(error: str | None) -> bool:
    """Our client's error is the server closing the connection (quinn's ConnectionError:
    "aborted by peer: ..." for a transport close, "closed by peer: ..." for an application
    close), not a timeout or a path failure."""
    return isinstance(error, str) and ("aborted by peer" in error or "closed by peer" in error)


def _request_after_handshake(document: dict) -> bool:
    """The first request started at or after the handshake completed (both from t0)."""
    objects = document.get("objects") or []
    hs = document.get("handshake_ms")
    start = objects[0].get("start_ms") if objects and isinstance(objects[0], dict) else None
    return isinstance(hs, (int, float)) and hs > 0 and isinstance(start, (int, float)) and start >= hs
