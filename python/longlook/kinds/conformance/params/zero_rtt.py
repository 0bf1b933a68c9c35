"""0-RTT support (Marx et al., EPIQ'20): on a resumed connection, did the client send its
request as 0-RTT, and did the server accept it. From the client's fetch document
(`zero_rtt: {attempted, accepted}`, docs/interfaces.md). A stack whose client in longlook
cannot resume a session is said so, not guessed. Where the document times its first request
and its handshake, an accepted 0-RTT whose request still went out after the handshake (a
client that waits for it, or a path so short the handshake wins) is said so: it saved no
round trip."""

from __future__ import annotations

NOT_SUPPORTED = "not supported by its client in longlook"


def zero_rtt(document: dict | None, client_resumes: bool) -> dict:
    """{value, label}: value 1 accepted, 0 sent and rejected or not sent, NaN unknown."""
    if not client_resumes:
        return {"value": float("nan"), "label": NOT_SUPPORTED}
    z = (document or {}).get("zero_rtt")
    if not isinstance(z, dict):
        return {"value": float("nan"), "label": "not reported by the client"}
    if not z.get("attempted"):
        return {"value": 0.0, "label": "not sent (no ticket or no early data)"}
    if not z.get("accepted"):
        return {"value": 0.0, "label": "sent, rejected by the server"}
    if _request_after_handshake(document):
        return {"value": 1.0, "label": "accepted, but the request went out after the handshake"}
    return {"value": 1.0, "label": "sent, accepted"}


def _request_after_handshake(document: dict) -> bool:
    """The first request started at or after the handshake completed (both from t0)."""
    objects = document.get("objects") or []
    hs = document.get("handshake_ms")
    start = objects[0].get("start_ms") if objects and isinstance(objects[0], dict) else None
    return isinstance(hs, (int, float)) and hs > 0 and isinstance(start, (int, float)) and start >= hs
