"""How the fixtures here were made from real runs' server logs (kept so they can be remade):
only the events the conformance extractors read, frames reduced to their types, up to
`--until-ms` of the connection; JSON-SEQ as our reader reads it.

    python tests/data/conformance/trim.py SRC OUT [--until-ms 1500]
"""

from __future__ import annotations

import argparse
import json

KEEP = ("transport:packet_sent", "transport:packet_received", "recovery:metrics_updated",
        "recovery:congestion_state_updated", "recovery:packet_lost", "transport:parameters_set",
        "longlook:congestion_control", "longlook:tcp_info_summary")
METRICS = ("congestion_window", "ssthresh", "smoothed_rtt", "latest_rtt", "min_rtt", "bytes_in_flight")


def slim(e: dict) -> dict:
    d = dict(e.get("data") or {})
    if e["name"] in ("transport:packet_sent", "transport:packet_received"):
        d = {"header": {"packet_type": (d.get("header") or {}).get("packet_type")},
             "raw": {"length": (d.get("raw") or {}).get("length")},
             **({"frames": [{"frame_type": f.get("frame_type")} for f in d["frames"] if isinstance(f, dict)]}
                if d.get("frames") else {})}
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
    events = [slim(e) for e in recs[1:] if e.get("name") in KEEP and float(e.get("time", 0)) <= a.until_ms]
    with open(a.out, "wb") as f:
        for r in [header, *events]:
            f.write(b"\x1e" + json.dumps(r, separators=(",", ":")).encode() + b"\n")


if __name__ == "__main__":
    main()
