"""Bytes received per second of a run, per protocol, from its requests (pure): each
request's bytes spread evenly over its duration, so a segment that took 10 s shows as 10 s
of traffic, not a spike when it ended."""

from __future__ import annotations


def bytes_per_second(requests: list[dict]) -> dict[str, list[float]]:
    """protocol -> bytes in each second [k, k+1) of the run (requests with start_s, end_s,
    bytes, protocol; those lacking any are left out)."""
    done = [r for r in requests if r.get("end_s") is not None and r.get("start_s") is not None and r.get("protocol")]
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
