"""Stream scheduling of a multiplexed page (Marx et al., EPIQ'20 §4.3): how a server shares
one connection between the responses of a page's objects, requested together.

Per response: the interval from its first to its last byte, from the server's log (its
packet_sent STREAM frames on client-initiated bidirectional streams, stream_id % 4 == 0)
or, where the server's log lists no frames (our endpoint: quinn logs none), from the
client's per-object first and last byte. `concurrency` is the sum of the intervals over
their union's span: 1 when each response is sent whole before the next (sequential), the
number of objects when all are sent side by side (round-robin). What is seen is the pair's
behaviour: a client that asks for one object at a time makes any server look sequential.
"""

from __future__ import annotations

SEQUENTIAL_MAX = 1.5  # concurrency up to this: one response at a time
ROUND_ROBIN_SHARE = 0.5  # concurrency of at least this share of the objects: all side by side
MIN_OBJECTS = 2


def concurrency(intervals: list[tuple[float, float]]) -> float:
    spans = [(a, b) for a, b in intervals if b >= a]
    if len(spans) < MIN_OBJECTS:
        return float("nan")
    total = max(b for _, b in spans) - min(a for a, _ in spans)
    if total <= 0:
        return float("nan")
    return sum(b - a for a, b in spans) / total


def scheduling_label(c: float, objects: int) -> str:
    if c != c:
        return "not measurable"
    if c <= SEQUENTIAL_MAX:
        return "sequential"
    if c >= ROUND_ROBIN_SHARE * objects:
        return "round-robin"
    return "partly interleaved"


def stream_intervals(stream_sent: list[tuple[float, int, float]]) -> list[tuple[float, float]]:
    """(first, last) send time per request stream, from (t_ms, stream_id, length) of STREAM
    frames sent."""
    spans: dict[int, list[float]] = {}
    for t, sid, length in stream_sent:
        if isinstance(sid, int) and sid % 4 == 0 and length:
            s = spans.setdefault(sid, [t, t])
            s[0], s[1] = min(s[0], t), max(s[1], t)
    return [(a, b) for a, b in spans.values()]


def object_intervals(document: dict) -> list[tuple[float, float]]:
    """(first byte, last byte) per object of a fetch's JSON document (not the page itself)."""
    objs = [o for o in (document.get("objects") or []) if isinstance(o, dict)]
    objs = [o for o in objs if not str(o.get("path", "")).endswith(".html")]
    out = []
    for o in objs:
        a, b = o.get("first_byte_ms"), o.get("end_ms")
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            out.append((float(a), float(b)))
    return out


def scheduling(stream_sent: list, document: dict | None) -> dict | None:
    """{value: concurrency, label, source} of one page load, or None when neither the
    server's log nor the client's document shows the objects."""
    spans, source = stream_intervals(stream_sent), "server log (STREAM frames)"
    if len(spans) < MIN_OBJECTS:
        spans, source = object_intervals(document or {}), "client (per-object first/last byte)"
    if len(spans) < MIN_OBJECTS:
        return None
    c = concurrency(spans)
    return {"value": c, "label": scheduling_label(c, len(spans)), "source": source, "objects": len(spans)}
