"""Fairness measures: Jain's index and each flow's share against the share it should get."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ...core.kind import Metric

# what a run yields for the statistics
FAIRNESS_METRICS = (
    Metric("jain", "", "higher", "Jain's index"),
    Metric("jain_weighted", "", "higher", "Jain's index of throughput / weight"),
    Metric("total_mbit", "Mbit/s", "higher", "total throughput at the router"),
    # with `latency_probe_ms`: what a sparse flow beside them met (latency under load)
    Metric("probe_rtt_ms", "ms", "lower", "a sparse flow's RTT beside the flows, median"),
    Metric("probe_rtt_p95_ms", "ms", "lower", "a sparse flow's RTT beside the flows, 95th percentile"),
)


def jain_index(throughputs: Sequence[float]) -> float:
    """Jain's fairness index (sum x)^2 / (n * sum x^2): 1 = equal, 1/n = one flow takes all.
    NaN when there is nothing to judge (no flows, or none carried anything)."""
    x = np.asarray(throughputs, dtype=float)
    if x.size == 0 or not np.all(np.isfinite(x)) or np.any(x < 0):
        return float("nan")
    square_sum = float(np.sum(x * x))
    if square_sum == 0:
        return float("nan")
    return float(np.sum(x)) ** 2 / (x.size * square_sum)


def weighted_jain_index(throughputs: Sequence[float], weights: Sequence[float]) -> float:
    """Jain's index of throughput / weight: 1 when every flow gets exactly its expected share
    (a QUIC flow emulating N connections has weight N)."""
    x = np.asarray(throughputs, dtype=float)
    w = np.asarray(weights, dtype=float)
    if x.shape != w.shape or np.any(w <= 0):
        raise ValueError("one positive weight per throughput")
    return jain_index(x / w)


def expected_shares(weights: Sequence[float]) -> list[float]:
    """The fair split of a bottleneck: w_i / sum(w). One QUIC flow emulating N connections
    against M TCP flows: N/(M+N) for QUIC, 1/(M+N) for each TCP flow."""
    w = np.asarray(weights, dtype=float)
    if w.size == 0 or np.any(w <= 0):
        raise ValueError("weights must be positive")
    return list(w / w.sum())


def shares(throughputs: Sequence[float]) -> list[float]:
    """Each flow's fraction of what all flows together carried."""
    x = np.asarray(throughputs, dtype=float)
    total = float(x.sum())
    if total <= 0:
        return [float("nan")] * x.size
    return list(x / total)
