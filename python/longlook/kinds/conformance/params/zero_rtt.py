"""0-RTT support (Marx et al., EPIQ'20): on a resumed connection, did the client send its
request as 0-RTT, and did the server accept it. From the client's fetch document
(`zero_rtt: {attempted, accepted}`, docs/interfaces.md). A stack whose client in longlook
cannot resume a session is said so, not guessed."""

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
    return {"value": 1.0 if z.get("accepted") else 0.0,
            "label": "sent, accepted" if z.get("accepted") else "sent, rejected by the server"}
