"""How the fixtures here were made from real runs' server logs (kept so they can be remade):
only the events the conformance extractors read, frames reduced to the fields they read, up
to `--until-ms` of the connection (set-up and close events whatever their time); JSON-SEQ
as our reader reads it.

    python tests/data/conformance/trim.py SRC OUT [--until-ms 1500]
"""

from __future__ import annotations

import argparse
import json

KEEP = (
    "transport:packet_sent",
    "transport:packet_received",
    "recovery:metrics_updated",
    "recovery:congestion_state_updated",
    "recovery:packet_lost",
    "transport:parameters_set",
    "longlook:congestion_control",
    "longlook:tcp_info_summary",
    "transport:frames_processed",
    "longlook:connection_stats",
)
METRICS = ("congestion_window", "ssthresh", "smoothed_rtt", "latest_rtt", "min_rtt", "bytes_in_flight")


# frame fields the extractors read (stream scheduling, window growth, ack delay)
FRAME_FIELDS = ("frame_type", "stream_id", "length", "maximum", "ack_delay")
# kept whatever their time (set once, or written at the connection's close)
ALWAYS = ("transport:parameters_set", "longlook:congestion_control", "longlook:connection_stats")


def _frame(f: dict) -> dict:
    return {k: f[k] for k in FRAME_FIELDS if k in f}


def slim(e: dict) -> dict:
    d = dict(e.get("data") or {})
    if e["name"] in ("transport:packet_sent", "transport:packet_received"):
        d = {
            "header": {"packet_type": (d.get("header") or {}).get("packet_type")},
            "raw": {"length": (d.get("raw") or {}).get("length")},
            **({"frames": [_frame(f) for f in d["frames"] if isinstance(f, dict)]} if d.get("frames") else {}),
        }
    elif e["name"] == "recovery:metrics_updated":
        d = {k: v for k, v in d.items() if k in METRICS}
    return {"time": round(float(e["time"]), 3), "name": e["name"], "data": d}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("out")
    ap.add_argument("--until-ms", type=float, default=1500.0)
    a = ap.parse_args()
    raw = open(a.src, "rb").read().split(b"\x1e")
    recs = [json.loads(r) for r in raw if r.strip()]
    header = recs[0]
    events = [
        slim(e)
        for e in recs[1:]
        if e.get("name") in KEEP and (float(e.get("time", 0)) <= a.until_ms or e["name"] in ALWAYS)
    ]
    with open(a.out, "wb") as f:
        for r in [header, *events]:
            f.write(b"\x1e" + json.dumps(r, separators=(",", ":")).encode() + b"\n")


if __name__ == "__main__":
    main()
