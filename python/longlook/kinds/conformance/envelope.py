"""The performance envelope of a flow (Mishra et al., IMC'23): the region its (throughput,
queueing delay) points cover over time, and how much two envelopes overlap.

Both axes come from the router (linkem's flow log), never from the sender, whose RTT
estimator differs between the kernel and each QUIC stack: throughput per bin = IP bytes
forwarded to the client; queueing delay per bin = the mean time the flow's packets waited
in the bottleneck buffer (arrival to the start of transmission, `flowlog.RouterQueue`),
with the bin's longest wait beside it (`queue_max_ms`). The sender's own view (RTT - min RTT;
QUIC: each ack's latest_rtt, TCP: TCP_INFO's smoothed RTT every 5 ms) is kept as
`sender_queue_ms`: where it exceeds the router's, the extra delay is at the endpoints (the
slow-stack diagnosis reads it). An envelope is the convex hull of a flow's points
after dropping the 5% most extreme on each axis (with 40 points or more); the overlap of two envelopes is the area
of their intersection over the area of their union (Jaccard: 1 = the same envelope, 0 =
disjoint), computed on a grid over both (a grid point is inside a hull when it lies on the
inner side of each of the hull's facets, scipy's ConvexHull).

What "identical" scores: two runs of one sender never overlap fully (an identical stack
scored 0.76, 5-95% 0.54-0.91, at conformance-quick's ~10 bins; 0.88 at 20, 0.91 at 200), so
an overlap is read beside the kernel's own round-to-round overlap (envelope_verdict.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats
from scipy.spatial import ConvexHull, QhullError

from ...flowlog import FlowCounters, RouterQueue
from .params.trace import ConnTrace

GRID = 160  # cells per axis of the overlap grid
TRIM = 0.05  # share of points dropped at each axis' extremes (each side: TRIM / 2)
MIN_TRIMMED = 40  # points a flow needs before its extremes are trimmed (1 a side at 5%)


@dataclass
class Envelope:
    points: pd.DataFrame  # t_s, mbit, queue_ms (+ queue_max_ms, sender_queue_ms where measured)

    @property
    def n(self) -> int:
        return len(self.points)

    def core(self) -> np.ndarray:
        """The points inside the per-axis [TRIM/2, 1 - TRIM/2] quantiles, as (mbit, queue_ms)."""
        p = self.points[["mbit", "queue_ms"]].dropna().to_numpy(float)
        if len(p) < MIN_TRIMMED:
            return p  # too few to call any of them an outlier
        lo = np.quantile(p, TRIM / 2, axis=0)
        hi = np.quantile(p, 1 - TRIM / 2, axis=0)
        return p[np.all((p >= lo) & (p <= hi), axis=1)]


POINT_COLUMNS = ["t_s", "mbit", "queue_ms", "queue_max_ms", "sender_queue_ms"]


def envelope_points(
    counters: FlowCounters,
    queue: RouterQueue | None,
    trace: ConnTrace | None,
    *,
    offset_s: float,
    trace_t0_s: float,
    bin_s: float,
    end_s: float,
) -> pd.DataFrame:
    """Per bin of `bin_s` from the flow's first to its last byte at the router: Mbit/s, the
    router's mean and max queueing delay (ms) and the sender's (RTT - min RTT, ms).
    `offset_s`: run time -> linkem time; `trace_t0_s`: the run time of the trace's time 0
    (the sender log's reference time)."""
    if counters.t.size == 0:
        return pd.DataFrame(columns=POINT_COLUMNS)
    first, last = counters.first_seen - offset_s, float(counters.t[-1]) - offset_s
    last = min(last, end_s)
    edges = np.arange(max(first, 0.0), last + 1e-9, bin_s)
    if len(edges) < 2:
        return pd.DataFrame(columns=POINT_COLUMNS)
    mbit = counters.timeline_mbit(edges + offset_s)
    queue_mean, queue_max = (
        queue.timeline_ms(edges + offset_s) if queue is not None else (np.full(len(edges) - 1, np.nan),) * 2
    )
    return pd.DataFrame(
        {
            "t_s": edges[:-1],
            "mbit": mbit,
            "queue_ms": queue_mean,
            "queue_max_ms": queue_max,
            "sender_queue_ms": sender_queue_ms(trace, edges, trace_t0_s),
        }
    )


def sender_queue_ms(trace: ConnTrace | None, edges: np.ndarray, trace_t0_s: float) -> np.ndarray:
    """Mean of the sender's RTT samples minus its minimum RTT per bin (NaN without samples)."""
    queue = np.full(len(edges) - 1, np.nan)
    if trace is None or trace.metrics.empty:
        return queue
    min_rtt = trace.min_rtt_ms()
    m = trace.metrics.dropna(subset=["latest_rtt_ms"])
    m = m[m["latest_rtt_ms"] > 0]
    if min_rtt is None or m.empty:
        return queue
    t = m["t_ms"].to_numpy() / 1000 + trace_t0_s
    q = np.maximum(m["latest_rtt_ms"].to_numpy() - min_rtt, 0.0)
    idx = np.searchsorted(edges, t, side="right") - 1
    ok = (idx >= 0) & (idx < len(queue))
    if ok.any():
        sums = np.bincount(idx[ok], weights=q[ok], minlength=len(queue))
        counts = np.bincount(idx[ok], minlength=len(queue))
        with np.errstate(invalid="ignore", divide="ignore"):
            queue = np.where(counts > 0, sums / counts, np.nan)
    return queue


def _row_spans(points: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """For each grid row (y = g[j]), the grid columns [start, stop) whose centres lie inside
    the points' convex hull: on the inner side of each facet (normal . p + offset <= 0), a
    convex hull holding one interval of each row. None when the hull has no area."""
    try:
        facets = ConvexHull(points).equations
    except (QhullError, ValueError):
        return None  # fewer than 3 points, or all on a line
    nx, ny, c = facets[:, 0:1], facets[:, 1:2], facets[:, 2:3]
    rhs = EDGE - c - ny * g[None, :]  # nx * x <= rhs, one column per row
    with np.errstate(divide="ignore", invalid="ignore"):
        bound = rhs / nx
    flat = np.abs(nx[:, 0]) <= 1e-15
    hi = np.min(np.where(nx > 1e-15, bound, np.inf), axis=0)
    lo = np.max(np.where(nx < -1e-15, bound, -np.inf), axis=0)
    empty = np.any((rhs < 0) & flat[:, None], axis=0)  # a horizontal facet excludes the row
    start = np.searchsorted(g, lo, side="left")
    stop = np.where(empty, start, np.maximum(np.searchsorted(g, hi, side="right"), start))
    return start, stop


EDGE = 1e-12  # a grid point this close outside a facet counts as inside


def overlap(a: np.ndarray, b: np.ndarray) -> float:
    """Area of hull(a) ∩ hull(b) over area of hull(a) ∪ hull(b), points as (x, y) rows;
    NaN when either hull has no area."""
    if len(a) < 3 or len(b) < 3:
        return math.nan
    both = np.vstack([a, b])
    lo, hi = both.min(axis=0), both.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    # each axis scaled to [0, 1] (the ratio of areas does not change) so neither dominates
    a_s, b_s = (a - lo) / span, (b - lo) / span
    g = (np.arange(GRID) + 0.5) / GRID
    ra, rb = _row_spans(a_s, g), _row_spans(b_s, g)
    if ra is None or rb is None:
        return math.nan
    size_a, size_b = ra[1] - ra[0], rb[1] - rb[0]
    if not size_a.sum() or not size_b.sum():
        return math.nan
    both_in = np.maximum(np.minimum(ra[1], rb[1]) - np.maximum(ra[0], rb[0]), 0)
    return float(both_in.sum() / (size_a + size_b - both_in).sum())


def mean_interval(values, confidence: float = 0.95) -> tuple[float, float, float, int]:
    """(mean, low, high, n) of the finite values: Student's t interval of the mean across
    rounds (scipy.stats.t.interval); low = high = NaN with fewer than two values."""
    x = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    if x.size == 0:
        return math.nan, math.nan, math.nan, 0
    if x.size < 2:
        return float(x.mean()), math.nan, math.nan, int(x.size)
    if np.std(x) == 0:
        return float(x.mean()), float(x.mean()), float(x.mean()), int(x.size)
    lo, hi = stats.t.interval(confidence, x.size - 1, loc=x.mean(), scale=stats.sem(x))
    return float(x.mean()), float(lo), float(hi), int(x.size)
