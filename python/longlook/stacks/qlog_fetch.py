"""The fetch JSON of `endpoint fetch` for one run of a client that prints no timings (ngtcp2's
and tquic's example clients), from its qlog.

The qlog (times in ms from the client's first packet) has every STREAM frame: request i goes on
bidirectional stream 4*i in the order of the URLs given, so a request starts with the first
frame sent on its stream, its first byte is the first frame received on it (the HEADERS frame),
and it ends with the frame carrying FIN. Body sizes are those of the files the client saved
(`--download`); the handshake ends with the server's HANDSHAKE_DONE frame. The clients are run
offering only h3, so a completed handshake means h3 was negotiated.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

from ..qlog.dialects import load_any


def _stream_frames(events: list[dict], name: str) -> list[tuple[float, dict]]:
    return [
        (float(e["time"]), f)
        for e in events
        if e.get("name") == name
        for f in (e.get("data") or {}).get("frames") or []
        if f.get("frame_type") == "stream"
    ]


def fetch_document(
    qlog: Path,
    *,
    url: str,
    mode: str,
    run_id: str,
    paths: list[str],
    download: Path,
    returncode: int,
    stderr: str,
    started_unix_ms: int,
) -> dict:
    doc = {
        "run_id": run_id,
        "url": url,
        "mode": mode,
        "protocol_requested": "h3",
        "protocol": None,
        "ok": False,
        "error": None,
        "started_unix_ms": started_unix_ms,
        "plt_ms": None,
        "handshake_ms": None,
        "ttfb_ms": None,
        "bytes": 0,
        "objects": [],
        "zero_rtt": {"attempted": False, "accepted": False},
        "local_addr": None,
        "goodput": [],
        "goodput_mbit": None,
        "stopped_early": False,
    }
    try:
        _, events = load_any(qlog)
    except (OSError, ValueError) as e:
        doc["error"] = f"no client qlog to time the run ({e}); {(stderr or '').strip()[-200:]}"
        return doc
    received = [
        (float(e["time"]), f)
        for e in events
        if e.get("name") == "transport:packet_received"
        for f in (e.get("data") or {}).get("frames") or []
    ]
    done = [t for t, f in received if f.get("frame_type") == "handshake_done"]
    if done:
        doc["handshake_ms"], doc["protocol"] = min(done), "h3"
    sent, got = _stream_frames(events, "transport:packet_sent"), _stream_frames(events, "transport:packet_received")
    objects = []
    for i, path in enumerate(paths):
        sid = 4 * i
        starts = [t for t, f in sent if f.get("stream_id") == sid]
        arrivals = [(t, f) for t, f in got if f.get("stream_id") == sid]
        fins = [t for t, f in arrivals if f.get("fin")]
        saved = download / PurePosixPath(urlsplit(path).path).name
        size = saved.stat().st_size if saved.is_file() else 0
        objects.append(
            {
                "path": path,
                "status": 200 if saved.is_file() and fins else None,
                "bytes": size,
                "start_ms": min(starts) if starts else None,
                "first_byte_ms": min(t for t, _ in arrivals) if arrivals else None,
                "end_ms": max(fins) if fins else None,
            }
        )
    doc["objects"] = objects
    doc["bytes"] = sum(o["bytes"] for o in objects)
    if objects:
        doc["ttfb_ms"] = objects[0]["first_byte_ms"]
    if mode == "bulk":
        total, last = 0, None
        for t, f in got:
            if f.get("stream_id") == 0:
                total += int(f.get("length") or 0)
                if last is None or t - last >= 10:
                    doc["goodput"].append([t, total])
                    last = t
    unfinished = [o["path"] for o in objects if o["end_ms"] is None]
    if unfinished or returncode != 0:
        doc["error"] = (
            f"unfinished: {', '.join(unfinished[:3])}"
            if unfinished
            else f"exit code {returncode}: {(stderr or '').strip()[-200:]}"
        )
        return doc
    doc["plt_ms"] = max(o["end_ms"] for o in objects)
    doc["goodput_mbit"] = doc["bytes"] * 8 / 1000 / doc["plt_ms"] if doc["plt_ms"] else None
    doc["ok"] = True
    return doc
