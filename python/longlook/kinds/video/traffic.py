"""Bytes received per second of a run, per protocol, from its requests (pure): each
request's bytes spread evenly over its duration, so a segment that took 10 s shows as 10 s
of traffic, not a spike when it ended."""

from __future__ import annotations

import math


def bytes_per_second(requests: list[dict]) -> dict[str, list[float]]:
    """protocol -> bytes in each second [k, k+1) of the run (requests with start_s, end_s,
    bytes, protocol; those lacking any are left out). Records from a table carry NaN, not
    None, where a request never finished or its protocol was never seen."""
    done = [
        r
        for r in requests
        if _number(r.get("end_s"))
        and _number(r.get("start_s"))
        and isinstance(r.get("protocol"), str)
        and r["protocol"]
    ]
    if not done:
        return {}
    n = int(max(r["end_s"] for r in done)) + 1
    out: dict[str, list[float]] = {}
    for r in done:
        bins = out.setdefault(r["protocol"], [0.0] * n)
        t0, t1 = r["start_s"], max(r["end_s"], r["start_s"] + 1e-6)
        for k in range(int(t0), min(int(t1) + 1, n)):
            overlap = min(t1, k + 1) - max(t0, k)
            if overlap > 0:
                bins[k] += r["bytes"] * overlap / (t1 - t0)
    return out


def _number(v) -> bool:
    return isinstance(v, (int, float)) and math.isfinite(v)
