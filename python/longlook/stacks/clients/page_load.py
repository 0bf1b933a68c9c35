"""One page load as the browser reported it over the DevTools protocol, turned into the
project's fetch JSON (docs/interfaces.md) and the facts a HAR is built from.

All CDP network timestamps share one monotonic clock in seconds (`timestamp`,
`timing.requestTime`, `loadingFinished.timestamp`); the page's Navigation Timing entry is in
ms from navigation start. We map the first onto the second through the main document's
request send time (`timing.sendStart` in CDP is `requestStart` in Navigation Timing), so
every time in the fetch JSON is ms from navigation start, as the paper's PLT is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

# Requests the browser makes on its own, not the page's content.
BROWSER_CHROME_PATHS = ("/favicon.ico",)


@dataclass
class Request:
    """What the DevTools events said about one request."""

    id: str
    url: str
    method: str = "GET"
    resource_type: str = ""
    issued_s: float = 0.0  # requestWillBeSent.timestamp
    wall_s: float = 0.0  # requestWillBeSent.wallTime (epoch seconds)
    request_headers: dict = field(default_factory=dict)
    status: int | None = None
    status_text: str = ""
    protocol: str | None = None  # "h3", "h2", "http/1.1" as Chromium reports it
    # why Chromium used that protocol (Network.Response.alternateProtocolUsage): e.g.
    # "alternativeJobWonRace", "mainJobWonRace", "broken", "mappingMissing"
    protocol_reason: str | None = None
    response_headers: dict = field(default_factory=dict)
    mime_type: str = ""
    timing: dict | None = None  # Network.ResourceTiming
    remote_ip: str | None = None
    remote_port: int | None = None
    connection_id: str | None = None
    body_bytes: int = 0  # decoded bytes (sum of dataReceived.dataLength)
    encoded_bytes: int | None = None  # loadingFinished.encodedDataLength (headers + framing)
    finished_s: float | None = None
    failed: str | None = None  # loadingFailed.errorText
    last_data_s: float | None = None  # the last dataReceived.timestamp

    @property
    def done(self) -> bool:
        return self.finished_s is not None or self.failed is not None

    @property
    def path(self) -> str:
        parts = urlsplit(self.url)
        return parts.path + (f"?{parts.query}" if parts.query else "")

    @property
    def first_byte_s(self) -> float | None:
        t = self.timing
        if not t or t.get("receiveHeadersEnd", -1) < 0:
            return None
        return t["requestTime"] + t["receiveHeadersEnd"] / 1000


class NetworkLog:
    """Collects Network.* and Page.* events of one page (one DevTools session)."""

    def __init__(self) -> None:
        self.requests: dict[str, Request] = {}
        self.order: list[str] = []
        self.load_event_s: float | None = None
        self.dom_content_s: float | None = None
        self.document_id: str | None = None

    def on_event(self, method: str, p: dict) -> None:
        handler = getattr(self, "_" + method.replace(".", "_"), None)
        if handler is not None:
            handler(p)

    def _Network_requestWillBeSent(self, p: dict) -> None:
        rid = p["requestId"]
        if rid in self.requests:  # a redirect reuses the id; keep the last hop
            self.order.remove(rid)
        req = p["request"]
        self.requests[rid] = Request(
            id=rid,
            url=req["url"],
            method=req.get("method", "GET"),
            resource_type=p.get("type", ""),
            issued_s=p["timestamp"],
            wall_s=p.get("wallTime", 0.0),
            request_headers=dict(req.get("headers") or {}),
        )
        self.order.append(rid)
        if p.get("type") == "Document" and self.document_id is None:
            self.document_id = rid

    def _Network_responseReceived(self, p: dict) -> None:
        r = self.requests.get(p["requestId"])
        if r is None:
            return
        resp = p["response"]
        r.status = resp.get("status")
        r.status_text = resp.get("statusText", "")
        r.protocol = resp.get("protocol")
        r.protocol_reason = resp.get("alternateProtocolUsage")
        r.response_headers = dict(resp.get("headers") or {})
        r.mime_type = resp.get("mimeType", "")
        r.timing = resp.get("timing")
        r.remote_ip = resp.get("remoteIPAddress")
        r.remote_port = resp.get("remotePort")
        r.connection_id = str(resp["connectionId"]) if "connectionId" in resp else None

    def _Network_dataReceived(self, p: dict) -> None:
        r = self.requests.get(p["requestId"])
        if r is not None:
            r.body_bytes += p.get("dataLength", 0)
            r.last_data_s = p.get("timestamp", r.last_data_s)

    def _Network_loadingFinished(self, p: dict) -> None:
        r = self.requests.get(p["requestId"])
        if r is not None:
            r.finished_s = p["timestamp"]
            r.encoded_bytes = p.get("encodedDataLength")

    def _Network_loadingFailed(self, p: dict) -> None:
        r = self.requests.get(p["requestId"])
        if r is not None:
            r.finished_s = p["timestamp"]
            r.failed = p.get("errorText") or "failed"

    def _Page_loadEventFired(self, p: dict) -> None:
        if self.document_id is not None:  # ignore about:blank's load before ours
            self.load_event_s = p["timestamp"]

    def _Page_domContentEventFired(self, p: dict) -> None:
        if self.document_id is not None:
            self.dom_content_s = p["timestamp"]

    # ---- views ----------------------------------------------------------------------

    @property
    def document(self) -> Request | None:
        return self.requests.get(self.document_id) if self.document_id else None

    def page_requests(self) -> list[Request]:
        """The page's own requests in the order they were issued, the document first."""
        return [
            self.requests[i]
            for i in self.order
            if urlsplit(self.requests[i].url).path not in BROWSER_CHROME_PATHS
            and not self.requests[i].url.startswith(("data:", "about:"))
        ]

    def complete(self) -> bool:
        """The load event has fired and every request issued so far has ended."""
        return self.load_event_s is not None and all(r.done for r in self.page_requests())


def protocol_label(requests: list[Request]) -> str | None:
    """The run's protocol from what the browser reported object by object: the one protocol
    all responses used, "mixed" if they differ, None if nothing was received."""
    seen = {r.protocol for r in requests if r.protocol}
    if not seen:
        return None
    return seen.pop() if len(seen) == 1 else "mixed"


def origin_s(log: NetworkLog, navigation: dict | None) -> float:
    """Navigation start on the CDP monotonic clock (seconds)."""
    doc = log.document
    if doc is None:
        return min((r.issued_s for r in log.requests.values()), default=0.0)
    t = doc.timing
    if navigation and t and t.get("sendStart", -1) >= 0 and navigation.get("requestStart"):
        mapped = t["requestTime"] + (t["sendStart"] - navigation["requestStart"]) / 1000
        if mapped <= doc.issued_s + 0.001:  # sanity: navigation starts before the request
            return mapped
    return doc.issued_s


def fetch_document(
    log: NetworkLog,
    *,
    run_id: str,
    url: str,
    mode: str,
    protocol_requested: str,
    navigation: dict | None,
    time_origin_unix_ms: float | None,
    error: str | None,
) -> dict:
    """The fetch JSON of docs/interfaces.md, with times in ms from navigation start, plus
    `last_object_ms` and each object's `protocol` with Chromium's reason for it."""
    t0 = origin_s(log, navigation)
    ms = lambda s: None if s is None else round((s - t0) * 1000, 3)  # noqa: E731
    requests = log.page_requests()
    objects = [
        {
            "path": r.path,
            "status": r.status,
            "bytes": r.body_bytes,
            "protocol": r.protocol,
            "protocol_reason": r.protocol_reason,
            "start_ms": ms(r.issued_s),
            "first_byte_ms": ms(r.first_byte_s),
            "end_ms": ms(r.finished_s),
            **({"error": r.failed} if r.failed else {}),
        }
        for r in requests
    ]
    protocol = protocol_label(requests)
    if error is None:
        error = _page_error(log, requests)
    plt = navigation.get("loadEventStart") if navigation else None
    if not plt and log.load_event_s is not None:
        plt = ms(log.load_event_s)
    ends = [o["end_ms"] for o in objects if o["end_ms"] is not None]
    doc = log.document
    total = sum(o["bytes"] for o in objects)
    return {
        "run_id": run_id,
        "url": url,
        "mode": mode,
        "protocol_requested": protocol_requested,
        "protocol": protocol,
        "ok": error is None,
        "error": error,
        "started_unix_ms": time_origin_unix_ms,
        "plt_ms": round(plt, 3) if plt else None,
        "last_object_ms": max(ends) if ends else None,
        "handshake_ms": _handshake_ms(doc),
        "ttfb_ms": ms(doc.first_byte_s) if doc else None,
        "bytes": total,
        "objects": objects,
        "zero_rtt": {"attempted": False, "accepted": False},
        "local_addr": None,  # not exposed by the DevTools protocol
        "goodput": [],
        "goodput_mbit": round(total * 8 / plt / 1000, 3) if plt else None,
        "navigation_timing": navigation,
    }


def _handshake_ms(doc: Request | None) -> float | None:
    t = doc.timing if doc else None
    if not t or t.get("connectStart", -1) < 0 or t.get("connectEnd", -1) < 0:
        return None
    return round(t["connectEnd"] - t["connectStart"], 3)


def _page_error(log: NetworkLog, requests: list[Request]) -> str | None:
    if log.document is None:
        return "the browser issued no request for the page"
    for r in requests:
        if r.failed:
            return f"{r.path}: {r.failed}"
        if r.status is not None and r.status >= 400:
            return f"{r.path}: HTTP {r.status}"
        if not r.done:
            return f"{r.path}: not finished"
    if log.load_event_s is None:
        return "the load event did not fire"
    return None


def bulk_document(
    log: NetworkLog,
    *,
    run_id: str,
    url: str,
    protocol_requested: str,
    time_origin_unix_ms: float | None,
    error: str | None,
) -> dict:
    """The fetch JSON of one bulk object the page fetch()ed from its own origin (the
    driver's bulk mode). The page opened the connection, so the object's time is its
    request's (issued to last byte) plus that connection's set-up (the page's connectStart
    to connectEnd): the time a download on a new connection takes, as the native clients
    measure it. The protocol is the object's and the page's together ("mixed" if they
    differ)."""
    doc = log.document
    obj = next((r for r in log.page_requests() if r.url == url and r.id != log.document_id), None)
    handshake = _handshake_ms(doc)
    end_s = obj.finished_s if obj is not None else None
    failed = obj.failed if obj is not None else None
    if failed == "net::ERR_ABORTED" and _whole(obj):
        # Chromium reports a fetch() whose body a reader took to its end as aborted
        # (loadingFailed, net::ERR_ABORTED) after the last byte: every byte of the stated
        # length arrived, so it is complete, and it ended with its last data (the log, and
        # the HAR built from it, keep what Chromium reported)
        failed, end_s = None, obj.last_data_s or obj.finished_s
    if error is None:
        if doc is None:
            error = "the browser issued no request for the page the object is fetched from"
        elif obj is None:
            error = f"the page issued no request for {urlsplit(url).path}"
        elif failed:
            error = f"{obj.path}: {failed}"
        elif obj.status is not None and obj.status >= 400:
            error = f"{obj.path}: HTTP {obj.status}"
        elif not obj.done:
            error = f"{obj.path}: not finished"
    duration = None
    if error is None and obj is not None and end_s is not None:
        duration = (end_s - obj.issued_s) * 1000 + (handshake or 0.0)
    first = obj.first_byte_s if obj is not None else None
    total = obj.body_bytes if obj is not None else 0
    return {
        "run_id": run_id,
        "url": url,
        "mode": "bulk",
        "protocol_requested": protocol_requested,
        "protocol": protocol_label([r for r in (doc, obj) if r is not None]),
        "ok": error is None,
        "error": error,
        "started_unix_ms": time_origin_unix_ms,
        "plt_ms": round(duration, 3) if duration else None,
        "last_object_ms": round(duration, 3) if duration else None,
        "handshake_ms": handshake,
        "ttfb_ms": round((first - obj.issued_s) * 1000 + (handshake or 0.0), 3) if first and obj else None,
        "bytes": total,
        "objects": [
            {
                "path": obj.path,
                "status": obj.status,
                "bytes": obj.body_bytes,
                "protocol": obj.protocol,
                "protocol_reason": obj.protocol_reason,
            }
        ]
        if obj is not None
        else [],
        "zero_rtt": {"attempted": False, "accepted": False},
        "local_addr": None,
        "goodput": [],
        "goodput_mbit": round(total * 8 / duration / 1000, 3) if duration else None,
        "navigation_timing": None,
    }


def _whole(r: Request) -> bool:
    """Every byte of the response's stated length arrived."""
    length = {k.lower(): v for k, v in r.response_headers.items()}.get("content-length")
    try:
        return length is not None and r.body_bytes >= int(length) > 0
    except ValueError:
        return False
