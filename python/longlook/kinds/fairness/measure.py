"""One run's numbers: per-flow throughput measured at the router over the window in which
all flows ran, shares against the expected ones, Jain's index, timelines and cwnd.

Time base: t = 0 is the launch of the first flow. linkem's clock starts when linkem starts
(just before it reports ready); the two are tied by the wall clock at those moments, which
is good to a few tens of ms, well below the timeline's bins.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .cwnd import downsample, read_cwnd
from ...flowlog import FlowCounters, flow_counters, read_flow_log
from .flows import FlowOutcome
from .metrics import expected_shares, jain_index, shares, weighted_jain_index

PROTO_ON_WIRE = {"h3": "udp", "h2": "tcp"}
CWND_STEP_S = 0.05


@dataclass
class FlowMeasurement:
    """One flow of a run: a row of the kind's `flows` table (its label as `flow`)."""

    label: str
    protocol: str
    weight: int
    start_s: float
    status: str
    error: str | None
    local_addr: str | None
    router_mbit: float  # IP bytes forwarded to the client in the shared window
    lifetime_mbit: float  # from the flow's own start to the end of the run
    router_bytes: int  # all IP bytes forwarded to the client, whole flow
    router_packets: int
    router_dropped_buffer: int
    endpoint_bytes: int | None  # HTTP body bytes the client read
    endpoint_mbit: float  # body bytes in the shared window
    stopped_early: bool
    expected_share: float = float("nan")
    share: float = float("nan")


@dataclass
class RunMeasurement:
    window: tuple[float, float]
    flows: list[FlowMeasurement]
    jain: float
    jain_weighted: float
    timeline: pd.DataFrame  # flow, t_s (bin start), mbit
    cwnd: pd.DataFrame  # flow, t_s, cwnd_bytes
    status: str = "ok"
    error: str | None = None


def measure_run(
    outcomes: list[FlowOutcome],
    *,
    flow_log: Path,
    launch_unix: float,
    linkem_t0_unix: float,
    window: tuple[float, float],
    end_s: float,
    bin_s: float,
    logs: dict[str, list[Path]] | None = None,
) -> RunMeasurement:
    """`logs` maps a flow label to its server log files (for cwnd)."""
    log = read_flow_log(flow_log)
    offset = launch_unix - linkem_t0_unix  # run time -> linkem time
    w0, w1 = window
    edges = np.arange(0.0, end_s + 1e-9, bin_s)
    if edges[-1] < end_s:
        edges = np.append(edges, end_s)
    flows, timeline, cwnd = [], [], []
    for o in outcomes:
        counters = (
            flow_counters(log, client_addr=o.local_addr, proto=PROTO_ON_WIRE[o.spec.protocol])
            if o.local_addr
            else FlowCounters.empty()
        )
        doc = o.document
        flows.append(
            FlowMeasurement(
                label=o.spec.label,
                protocol=o.spec.protocol,
                weight=o.spec.weight,
                start_s=o.spec.start_s,
                status=o.status,
                error=o.error,
                local_addr=o.local_addr,
                router_mbit=counters.mean_mbit(w0 + offset, w1 + offset),
                lifetime_mbit=counters.mean_mbit(o.spec.start_s + offset, end_s + offset),
                router_bytes=counters.total_bytes,
                router_packets=counters.total_packets,
                router_dropped_buffer=int(counters.dropped_buffer[-1]) if counters.dropped_buffer.size else 0,
                endpoint_bytes=doc.get("bytes"),
                endpoint_mbit=_endpoint_mbit(doc, launch_unix, w0, w1),
                stopped_early=bool(doc.get("stopped_early", False)),
            )
        )
        if counters.t.size:
            timeline.append(
                pd.DataFrame({"flow": o.spec.label, "t_s": edges[:-1], "mbit": counters.timeline_mbit(edges + offset)})
            )
        for path in (logs or {}).get(o.spec.label, []):
            c = downsample(read_cwnd(path), CWND_STEP_S)
            if not c.empty:
                cwnd.append(
                    pd.DataFrame(
                        {"flow": o.spec.label, "t_s": c["unix_s"] - launch_unix, "cwnd_bytes": c["cwnd_bytes"]}
                    )
                )

    failed = [f for f in flows if f.status != "ok"]
    rates = [f.router_mbit for f in flows]
    for f, expected, got in zip(flows, expected_shares([f.weight for f in flows]), shares(rates)):
        f.expected_share, f.share = expected, got
    m = RunMeasurement(
        window=window,
        flows=flows,
        jain=jain_index(rates),
        jain_weighted=weighted_jain_index(rates, [f.weight for f in flows]),
        timeline=_concat(timeline, ["flow", "t_s", "mbit"]),
        cwnd=_concat(cwnd, ["flow", "t_s", "cwnd_bytes"]),
    )
    if failed:
        m.status = "failed"
        m.error = "; ".join(f"{f.label}: {f.status}: {f.error}" for f in failed)
    elif any(not np.isfinite(r) or r <= 0 for r in rates):
        m.status = "failed"
        m.error = "a flow carried nothing at the router in the shared window (flow not found in the flow log?)"
    return m


def _endpoint_mbit(doc: dict, launch_unix: float, w0: float, w1: float) -> float:
    """Body bytes read by the client in [w0, w1] of run time (from its goodput samples)."""
    samples = doc.get("goodput") or []
    started = doc.get("started_unix_ms")
    if not samples or not started or w1 <= w0:
        return float("nan")
    t = np.array([s[0] for s in samples]) / 1000 + started / 1000 - launch_unix
    b = np.array([s[1] for s in samples], dtype=float)

    def at(x: float) -> float:
        i = np.searchsorted(t, x, side="right") - 1
        return float(b[i]) if i >= 0 else 0.0

    return (at(w1) - at(w0)) * 8 / (w1 - w0) / 1e6


def _concat(frames: list[pd.DataFrame], columns: list[str]) -> pd.DataFrame:
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)
