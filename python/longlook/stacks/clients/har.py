"""HAR 1.2 (http://www.softwareishard.com/blog/har-12-spec/) from a page load's DevTools
events, and a structural check of a HAR.

Timings follow Chrome DevTools' own HAR export: dns, connect (which includes ssl), send,
wait and receive from the response's ResourceTiming; `blocked` is whatever remains of the
entry's wall time (queueing, and gaps between phases), so the phases sum to `time` exactly
and `time` is the request's issue-to-finish duration. The protocol Chromium reported is kept
in `response.httpVersion` and, verbatim, in the custom field `_protocol`; Chromium's reason for
it (`alternateProtocolUsage`) in `_alternateProtocolUsage`.
"""

from __future__ import annotations

from datetime import datetime, timezone

from .page_load import NetworkLog, Request, origin_s

HTTP_VERSIONS = {"h3": "HTTP/3", "h2": "HTTP/2", "http/1.1": "HTTP/1.1", "http/1.0": "HTTP/1.0"}
PAGE_ID = "page_1"
TOLERANCE_MS = 0.01  # rounding of the phases to 3 decimals


def _iso(unix_s: float) -> str:
    return datetime.fromtimestamp(unix_s, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _span(timing: dict, start: str, end: str) -> float:
    a, b = timing.get(start, -1), timing.get(end, -1)
    return max(0.0, b - a) if a >= 0 and b >= 0 else -1.0


def entry_timings(r: Request) -> dict[str, float]:
    """HAR timings of one finished request (ms; -1 = does not apply)."""
    total = max(0.0, ((r.finished_s or r.issued_s) - r.issued_s) * 1000)
    t = r.timing
    if not t:  # no response (failed before headers): all of it was waiting
        return {
            "blocked": -1,
            "dns": -1,
            "connect": -1,
            "ssl": -1,
            "send": 0.0,
            "wait": round(total, 3),
            "receive": 0.0,
        }
    dns = _span(t, "dnsStart", "dnsEnd")
    connect = _span(t, "connectStart", "connectEnd")
    ssl = _span(t, "sslStart", "sslEnd")
    send = max(0.0, t.get("sendEnd", 0) - t.get("sendStart", 0))
    headers_end = (t["requestTime"] - r.issued_s) * 1000 + t.get("receiveHeadersEnd", 0)
    wait = max(0.0, t.get("receiveHeadersEnd", 0) - t.get("sendEnd", 0))
    receive = max(0.0, total - headers_end)
    phases = {"dns": dns, "connect": connect, "send": send, "wait": wait, "receive": receive}
    rounded = {k: (round(v, 3) if v >= 0 else -1) for k, v in phases.items()}
    known = sum(v for v in rounded.values() if v >= 0)
    blocked = round(max(0.0, round(total, 3) - known), 3)
    return {"blocked": blocked, **rounded, "ssl": round(ssl, 3) if ssl >= 0 else -1}


def entry_time(timings: dict[str, float]) -> float:
    """HAR `time`: the sum of the phases that apply (ssl is inside connect)."""
    return round(sum(v for k, v in timings.items() if k != "ssl" and v >= 0), 3)


def _headers(d: dict) -> list[dict]:
    return [{"name": k, "value": str(v)} for k, v in d.items()]


def _entry(r: Request, wall_offset_s: float) -> dict:
    timings = entry_timings(r)
    version = HTTP_VERSIONS.get(r.protocol or "", r.protocol or "")
    query = r.url.partition("?")[2]
    return {
        "pageref": PAGE_ID,
        "startedDateTime": _iso(r.issued_s + wall_offset_s),
        "time": entry_time(timings),
        "request": {
            "method": r.method,
            "url": r.url,
            "httpVersion": version,
            "cookies": [],
            "headers": _headers(r.request_headers),
            "queryString": [{"name": k, "value": v} for k, _, v in (p.partition("=") for p in query.split("&") if p)],
            "headersSize": -1,
            "bodySize": 0,
        },
        "response": {
            "status": r.status or 0,
            "statusText": r.status_text,
            "httpVersion": version,
            "cookies": [],
            "headers": _headers(r.response_headers),
            "content": {"size": r.body_bytes, "mimeType": r.mime_type or "x-unknown"},
            "redirectURL": r.response_headers.get("location", ""),
            "headersSize": -1,
            "bodySize": r.body_bytes if r.status else -1,
            **({"_error": r.failed or "not finished"} if r.failed or not r.done else {}),
        },
        "cache": {},
        "timings": timings,
        **({"serverIPAddress": r.remote_ip} if r.remote_ip else {}),
        **({"connection": r.connection_id} if r.connection_id else {}),
        "_protocol": r.protocol,
        **({"_alternateProtocolUsage": r.protocol_reason} if r.protocol_reason else {}),
        "_transferSize": r.encoded_bytes,
    }


def build_har(
    log: NetworkLog, *, browser_version: str, creator_version: str, title: str, navigation: dict | None
) -> dict:
    """The HAR 1.2 document of one page load (every request the page made, including ones
    the browser adds such as /favicon.ico)."""
    doc = log.document
    # CDP's monotonic clock -> wall clock, through the document request's wallTime
    wall_offset_s = (doc.wall_s - doc.issued_s) if doc and doc.wall_s else 0.0
    t0 = origin_s(log, navigation)
    rel = lambda s: round((s - t0) * 1000, 3) if s is not None else -1  # noqa: E731
    on_load = navigation.get("loadEventStart") if navigation else None
    on_content = navigation.get("domContentLoadedEventStart") if navigation else None
    page = {
        "startedDateTime": _iso(t0 + wall_offset_s),
        "id": PAGE_ID,
        "title": title,
        "pageTimings": {
            "onContentLoad": round(on_content, 3) if on_content else rel(log.dom_content_s),
            "onLoad": round(on_load, 3) if on_load else rel(log.load_event_s),
        },
    }
    entries = [
        _entry(log.requests[i], wall_offset_s)
        for i in log.order
        if not log.requests[i].url.startswith(("data:", "about:"))
    ]
    return {
        "log": {
            "version": "1.2",
            "creator": {"name": "longlook", "version": creator_version},
            "browser": {"name": "Chromium", "version": browser_version},
            "pages": [page],
            "entries": entries,
        }
    }


# ---- validation ------------------------------------------------------------------------

_REQUIRED = {
    "log": ("version", "creator", "entries"),
    "creator": ("name", "version"),
    "page": ("startedDateTime", "id", "title", "pageTimings"),
    "entry": ("startedDateTime", "time", "request", "response", "cache", "timings"),
    "request": ("method", "url", "httpVersion", "cookies", "headers", "queryString", "headersSize", "bodySize"),
    "response": (
        "status",
        "statusText",
        "httpVersion",
        "cookies",
        "headers",
        "content",
        "redirectURL",
        "headersSize",
        "bodySize",
    ),
    "content": ("size", "mimeType"),
    "timings": ("send", "wait", "receive"),
}


def validate_har(har: dict) -> list[str]:
    """Problems with `har` as a HAR 1.2 document ([] = valid): required fields and their
    types, ISO 8601 dates, pagerefs that name a page, timings that are non-negative (or -1
    where optional) and that sum to the entry's `time`."""
    problems: list[str] = []

    def need(obj, kind: str, where: str) -> bool:
        if not isinstance(obj, dict):
            problems.append(f"{where}: must be an object")
            return False
        for key in _REQUIRED[kind]:
            if key not in obj:
                problems.append(f"{where}: missing {key}")
        return True

    log = har.get("log") if isinstance(har, dict) else None
    if not need(log, "log", "log"):
        return problems
    if log.get("version") != "1.2":
        problems.append(f"log.version: expected 1.2, got {log.get('version')!r}")
    need(log.get("creator"), "creator", "log.creator")
    page_ids = set()
    for i, page in enumerate(log.get("pages") or []):
        if need(page, "page", f"log.pages[{i}]"):
            page_ids.add(page.get("id"))
            _date(page.get("startedDateTime"), f"log.pages[{i}].startedDateTime", problems)
    if not isinstance(log.get("entries"), list):
        problems.append("log.entries: must be a list")
        return problems
    for i, e in enumerate(log["entries"]):
        where = f"log.entries[{i}]"
        if not need(e, "entry", where):
            continue
        _date(e.get("startedDateTime"), f"{where}.startedDateTime", problems)
        if "pageref" in e and e["pageref"] not in page_ids:
            problems.append(f"{where}.pageref: no page {e['pageref']!r}")
        if need(e.get("request"), "request", f"{where}.request"):
            for key in ("cookies", "headers", "queryString"):
                if not isinstance(e["request"].get(key), list):
                    problems.append(f"{where}.request.{key}: must be a list")
        if need(e.get("response"), "response", f"{where}.response"):
            if not isinstance(e["response"].get("status"), int):
                problems.append(f"{where}.response.status: must be an integer")
            need(e["response"].get("content"), "content", f"{where}.response.content")
        t = e.get("timings")
        if need(t, "timings", f"{where}.timings"):
            _check_timings(t, e.get("time"), where, problems)
    return problems


def _check_timings(t: dict, time: object, where: str, problems: list[str]) -> None:
    for key in ("send", "wait", "receive"):
        v = t.get(key)
        if not isinstance(v, (int, float)) or v < 0:
            problems.append(f"{where}.timings.{key}: must be a number >= 0, got {v!r}")
    for key in ("blocked", "dns", "connect", "ssl"):
        v = t.get(key, -1)
        if not isinstance(v, (int, float)) or (v < 0 and v != -1):
            problems.append(f"{where}.timings.{key}: must be >= 0 or -1, got {v!r}")
    if (
        isinstance(t.get("ssl"), (int, float))
        and t["ssl"] >= 0
        and t.get("connect", -1) >= 0
        and t["ssl"] > t["connect"] + TOLERANCE_MS
    ):
        problems.append(f"{where}.timings: ssl ({t['ssl']}) exceeds connect ({t['connect']}), which includes it")
    if not isinstance(time, (int, float)):
        problems.append(f"{where}.time: must be a number")
        return
    total = sum(
        v
        for k, v in t.items()
        if k in ("blocked", "dns", "connect", "send", "wait", "receive") and isinstance(v, (int, float)) and v >= 0
    )
    if abs(total - time) > TOLERANCE_MS * 6:
        problems.append(f"{where}.time: {time} but the timings sum to {total:.3f}")


def _date(value: object, where: str, problems: list[str]) -> None:
    try:
        datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        problems.append(f"{where}: not an ISO 8601 date: {value!r}")
