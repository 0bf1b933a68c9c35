"""One conformance run: the arm's flows (the stack under test, the kernel reference, or both
at once) each download the cell's bulk object through the bottleneck; then each flow's
envelope (throughput and queueing delay, both measured at the router), its share of the
bottleneck in a shared run, and every parameter of its sender's log against the
specifications.

Time base: t = 0 is the launch of the run's flows; linkem's flow log is tied to it by the
wall clock (linkem restarts before each run, `fresh_link_per_run`), the sender logs by
their qlog reference time.
"""

from __future__ import annotations

import json
import math
import platform
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ...core.kind import Measurement, Metric, RunContext
from ...flowlog import FlowCounters, RouterQueue, read_flow_log
from ...stacks.base import OURS
from ...stacks.endpoint import CLIENT_QLOG, SERVER_ADDR, ServerOptions, fetch
from ...stacks.fetch_result import FetchResult
from ...stacks.registry import resolve, split
from ...units import format_size
from .envelope import Envelope, envelope_points
from .params import all_parameters, read_trace
from .params.fingerprint import fingerprint
from .params.send_clock import send_clock
from .params.trace import ConnTrace, loss_events
from .spec import KERNEL, ConformanceCell

SETTLE_S = 0.5  # linkem's last flow-log lines after the flows
FIRST_PACKET_WAIT_S = 15.0
FLOW_LOG = "linkem-flows.jsonl"
STACK_FLOW, KERNEL_FLOW = "stack", "kernel"

CONFORMANCE_METRICS = (
    Metric("mbit", "Mbit/s", "higher", "throughput of the flow under test at the router"),
    Metric(
        "queue_ms",
        "ms",
        "lower",
        "mean queueing delay at the router: time its packets waited in linkem's "
        "buffer (arrival to start of transmission)",
    ),
    Metric(
        "sender_queue_ms",
        "ms",
        "lower",
        "the sender's view of it: mean RTT - min RTT from its own log (beyond the router's: delay at the endpoints)",
    ),
    Metric("share", "", "higher", "the stack's share of the bottleneck beside the kernel"),
    Metric("ref_mbit", "Mbit/s", "higher", "the kernel reference's throughput beside the stack"),
    # what the slow-stack diagnosis reads (aggregate.diagnose), of the flow under test
    Metric("transfer_s", "s", "lower", "first to last byte at the router"),
    Metric("cwnd_bytes", "bytes", "higher", "median congestion window"),
    Metric("inflight_share", "", "higher", "median bytes in flight / congestion window"),
    Metric("loss_episodes", "", "lower", "window reductions"),
    Metric("min_rtt_ms", "ms", "lower", "the sender's minimum RTT"),
    Metric("idle_share", "", "lower", "share of the transfer the sender sent nothing for 2+ RTTs"),
    Metric("send_mbit", "Mbit/s", "higher", "the sender's own rate while sending (its log, idle periods left out)"),
    Metric("gap_regularity", "", "higher", "10th-percentile / median gap between the sender's releases"),
    Metric("window_mbit", "Mbit/s", "higher", "median cwnd / srtt: the rate the window allows"),
)
FINGERPRINT_TABLE = {
    "stack": "VARCHAR",
    "version": "VARCHAR",
    "cc": "VARCHAR",
    "side": "VARCHAR",
    "field": "VARCHAR",
    "value": "DOUBLE",
    "unit": "VARCHAR",
    # a categorical outcome (stream scheduling, 0-RTT) and how it was seen
    "label": "VARCHAR",
    "note": "VARCHAR",
}
CONFORMANCE_TABLE = {
    "stack": "VARCHAR",
    "version": "VARCHAR",
    "cc": "VARCHAR",
    "parameter": "VARCHAR",
    "measured": "DOUBLE",
    "reference": "DOUBLE",
    "unit": "VARCHAR",
    "verdict": "VARCHAR",
    "tolerance": "VARCHAR",
    "note": "VARCHAR",
    "flow": "VARCHAR",
    "arm": "VARCHAR",
}


@dataclass(frozen=True)
class BulkObject:
    """What the stacks' servers serve for this kind (stacks/content.py): one bulk object."""

    object_size: int
    mode: str = "bulk"
    object_count: int = 1


@dataclass
class Flow:
    name: str  # stack | kernel
    who: str  # the stack's label, or "kernel"
    version: str
    cc: str
    protocol: str
    port: int
    result: FetchResult | None = None
    log: Path | None = None  # the sender's log in our vocabulary
    artifacts: dict | None = None


def ours_options(cell: ConformanceCell) -> ServerOptions:
    e = cell.entry
    return ServerOptions(
        quic_cc=cell.cc,
        tcp_cc=cell.kernel_cc,
        initial_window_packets=e.initial_window_packets,
        max_cwnd_packets=e.max_cwnd_packets,
        pacing=e.pacing,
    )


def kernel_version() -> str:
    return f"linux {platform.release()}"


def _stack_flow(ctx: RunContext) -> Flow:
    cell: ConformanceCell = ctx.cell
    servers = ctx.session["servers"]
    is_ours = split(cell.stack)[0] == OURS
    port, _ = servers.get(
        cell.stack,
        ours_options(cell) if is_ours else None,
        None if is_ours else cell.cc,
        workload=BulkObject(cell.object_size),
    )
    version = ctx.state.get("versions", {}).get(cell.stack) or resolve(cell.stack).spec
    return Flow(STACK_FLOW, cell.entry.label, version, cell.cc, "h3", port)


def _kernel_flow(ctx: RunContext) -> Flow:
    cell: ConformanceCell = ctx.cell
    port, _ = ctx.session["servers"].get(OURS, ServerOptions(tcp_cc=cell.kernel_cc))
    return Flow(KERNEL_FLOW, KERNEL, kernel_version(), cell.kernel_cc, "h2", port)


def _run_flow(ctx: RunContext, flow: Flow) -> FetchResult:
    cell: ConformanceCell = ctx.cell
    out_dir = ctx.run_dir / flow.name
    out_dir.mkdir(parents=True, exist_ok=True)
    url = f"https://{SERVER_ADDR}:{flow.port}/bulk/{format_size(cell.object_size)}"
    servers = ctx.session["servers"]
    runner = fetch if flow.name == KERNEL_FLOW or split(cell.stack)[0] == OURS else resolve(cell.stack).fetcher(cell.cc)
    return runner(
        ctx.testbed,
        url=url,
        protocol=flow.protocol,
        run_id=f"{ctx.run_id}-{flow.name}",
        cert_dir=servers.cert_dir,
        out=out_dir / "fetch.json",
        timeout_s=ctx.scenario.timeout_s,
        mode="bulk",
    )


def _take_logs(ctx: RunContext, flow: Flow, since_ms: float) -> None:
    servers = ctx.session["servers"]
    server = next(s for p, s in servers.by_key.values() if p == flow.port)
    dest = ctx.run_dir / flow.name
    arts = server.take_artifacts(f"{ctx.run_id}-{flow.name}", dest, unlabelled_since_ms=since_ms)
    flow.artifacts = {k: f"{flow.name}/{v}" for k, v in arts.items()}
    key = "tcp_log" if flow.protocol == "h2" else "qlog"
    flow.log = dest / arts[key] if key in arts else None


def _sent_by(log, port: int, proto: str):
    """The flow-log lines of what the server on `port` sent (one connection per flow and
    port in a run; should a client have made more, their lines are all here)."""
    return log[(log["direction"] == "down") & (log["proto"] == proto) & log["src"].astype(str).str.endswith(f":{port}")]


def _queue(log, port: int, proto: str) -> RouterQueue:
    """How long what the server on `port` sent waited in the router's buffer."""
    return RouterQueue.of(_sent_by(log, port, proto))


def _counters(log, port: int, proto: str) -> FlowCounters:
    """The router's counters of what the server on `port` sent (their bytes add up)."""
    rows = _sent_by(log, port, proto)
    if rows.empty:
        return FlowCounters.empty()
    wide = (
        rows.pivot_table(index="t", columns="dst", values=["bytes", "packets", "dropped_buffer"], aggfunc="max")
        .sort_index()
        .ffill()
        .fillna(0)
    )
    total = {c: wide[c].sum(axis=1).to_numpy(np.int64) for c in ("bytes", "packets", "dropped_buffer")}
    return FlowCounters(
        t=wide.index.to_numpy(float),
        bytes=total["bytes"],
        packets=total["packets"],
        dropped_buffer=total["dropped_buffer"],
    )


def wait_for_first_packet(flow_log: Path, port: int, proto: str, timeout_s: float) -> bool:
    """Until linkem's flow log shows a packet to the server on `port` (the client's first
    Initial reached the router: both flows then handshake together), or `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    needle = f':{port}"'
    while time.monotonic() < deadline:
        try:
            for line in Path(flow_log).read_text().splitlines():
                if needle in line and f'"proto":"{proto}"' in line and '"direction":"up"' in line:
                    return True
        except OSError:
            pass
        time.sleep(0.05)
    return False


def _trace_t0(path: Path | None) -> float | None:
    """The trace's reference time (Unix s) from its header."""
    if path is None:
        return None
    try:
        head = path.read_bytes()[:4096].split(b"\x1e")
        header = json.loads(next(h for h in head if h.strip()))
        ref = header["trace"]["common_fields"]["reference_time"]
        return float(ref) / 1000.0
    except (StopIteration, KeyError, TypeError, ValueError, OSError):
        return None


def measure(ctx: RunContext) -> Measurement:
    arm = ctx.arm.label
    flows = ([_stack_flow(ctx)] if arm in ("alone", "shared") else []) + (
        [_kernel_flow(ctx)] if arm in ("kernel", "shared") else []
    )
    linkem = ctx.testbed.linkem
    launch_unix = time.time()
    with ThreadPoolExecutor(max_workers=len(flows)) as pool:
        futures = []
        for i, f in enumerate(flows):
            if i:  # the kernel starts with the stack's first packet (a client may take a second to start)
                wait_for_first_packet(linkem.flow_log_path, flows[0].port, "udp", FIRST_PACKET_WAIT_S)
            futures.append(pool.submit(_run_flow, ctx, f))
        results = [fu.result() for fu in futures]
    time.sleep(SETTLE_S)
    for f, r in zip(flows, results):
        f.result = r
        _take_logs(ctx, f, since_ms=launch_unix * 1000 - 1000)
    shutil.copyfile(linkem.flow_log_path, ctx.run_dir / FLOW_LOG)
    return summarise(ctx, flows, launch_unix=launch_unix, linkem_t0_unix=linkem.started_unix)


def summarise(ctx: RunContext, flows: list[Flow], *, launch_unix: float, linkem_t0_unix: float) -> Measurement:
    cell: ConformanceCell = ctx.cell
    arm = ctx.arm.label
    log = read_flow_log(ctx.run_dir / FLOW_LOG)
    offset = launch_unix - linkem_t0_unix  # run time -> linkem time
    end_s = ctx.scenario.timeout_s + 5
    series, rows, prints, details, artifacts = [], [], [], {}, {"flow_log": FLOW_LOG}
    mbit, queue, sender_queue, counters = {}, {}, {}, {}
    for f in flows:
        artifacts.update(f.artifacts or {})
        proto = "udp" if f.protocol == "h3" else "tcp"
        c = _counters(log, f.port, proto)
        router_queue = _queue(log, f.port, proto)
        counters[f.name] = c
        trace: ConnTrace | None = None
        if f.log is not None and f.log.exists():
            try:
                trace = read_trace(f.log)
            except (OSError, ValueError):
                trace = None
        t0 = _trace_t0(f.log)
        env = Envelope(
            envelope_points(
                c,
                router_queue,
                trace,
                offset_s=offset,
                trace_t0_s=(t0 - launch_unix) if t0 else 0.0,
                bin_s=ctx.scenario.bin_s,
                end_s=end_s,
            )
        )
        for p in env.points.itertuples():
            series.append({"name": "mbit", "key": f.name, "t_s": float(p.t_s), "value": float(p.mbit)})
            for name in ("queue_ms", "queue_max_ms", "sender_queue_ms"):
                v = getattr(p, name)
                if v == v:
                    series.append({"name": name, "key": f.name, "t_s": float(p.t_s), "value": float(v)})
        mbit[f.name] = float(env.points["mbit"].mean()) if env.n else math.nan
        if c.t.size:
            details[f"{f.name}_transfer_s"] = float(c.t[-1] - c.first_seen)
        if trace is not None:
            details[f"{f.name}_sender"] = sender_figures(trace)
        queue[f.name] = router_queue.mean_ms
        sq = env.points["sender_queue_ms"]
        sender_queue[f.name] = float(sq.mean()) if env.n and sq.notna().any() else math.nan
        if trace is not None:
            for r in all_parameters(trace, f.cc if f.name == KERNEL_FLOW else cell.cc):
                rows.append({"stack": f.who, "version": f.version, "cc": f.cc, **_row(r), "flow": f.name, "arm": arm})
            if f.name == STACK_FLOW and arm == "alone":
                client = _client_trace(ctx.run_dir / f.name / CLIENT_QLOG)
                prints += [{"stack": f.who, "version": f.version, "cc": f.cc, **p} for p in fingerprint(trace, client)]
        details[f"{f.name}_status"] = f.result.status if f.result else "not run"
        details[f"{f.name}_log"] = str(f.log.relative_to(ctx.run_dir)) if f.log else None
    under_test = STACK_FLOW if arm in ("alone", "shared") else KERNEL_FLOW
    metrics = {
        "mbit": _finite(mbit.get(under_test)),
        "queue_ms": _finite(queue.get(under_test)),
        "sender_queue_ms": _finite(sender_queue.get(under_test)),
        "share": None,
        "ref_mbit": None,
        "transfer_s": _finite(details.get(f"{under_test}_transfer_s")),
        **{k: _finite(v) for k, v in (details.get(f"{under_test}_sender") or {}).items()},
    }
    if arm == "shared":
        share, ref, window = shared_window_share(counters[STACK_FLOW], counters[KERNEL_FLOW])
        metrics["share"], metrics["ref_mbit"] = _finite(share), _finite(ref)
        metrics["mbit"] = _finite(shared_mbit(counters[STACK_FLOW], window))
        details["shared_window_s"] = [w - offset for w in window] if window else None
    failed = [f for f in flows if f.result is None or f.result.status != "ok"]
    status, error = "ok", None
    if failed:
        seen = {f.result.status for f in failed if f.result}
        status = next((s for s in ("protocol_mismatch", "timeout") if s in seen), "failed")
        error = "; ".join(
            f"{f.name}: {f.result.status if f.result else 'not run'}: {f.result.error if f.result else ''}"
            for f in failed
        )
    elif arm == "shared" and metrics["share"] is None:
        status, error = (
            "failed",
            ("the stack and the kernel flow never ran at the same time (or one was not in linkem's flow log)"),
        )
    elif metrics["mbit"] is None:
        status, error = "failed", "the flow under test was not found in linkem's flow log"
    stack_doc = next((f.result.document for f in flows if f.name == under_test and f.result), {}) or {}
    return Measurement(
        status=status,
        error=error,
        protocol_requested=None,
        protocol_negotiated=stack_doc.get("protocol"),
        started_unix_ms=launch_unix * 1000,
        metrics=metrics,
        details=details,
        series=series,
        rows={"conformance": rows, "fingerprint": prints},
        artifacts=artifacts,
    )


def _client_trace(path: Path) -> ConnTrace | None:
    """Our client's own log of the connection (its transport parameters), where it wrote one."""
    if not path.exists():
        return None
    try:
        return read_trace(path)
    except (OSError, ValueError):
        return None


def sender_figures(tr: ConnTrace) -> dict[str, float]:
    """What the sender's log says about what limited it: its median window, how full it
    kept it, how often it cut it, its minimum RTT, the rate of its own send clock."""
    m = tr.metrics.dropna(subset=["cwnd"])
    fill = (m["in_flight"] / m["cwnd"]).dropna()
    rtt = tr.min_rtt_ms() or math.nan
    idle = math.nan
    t = tr.sent["t_ms"].to_numpy()
    if t.size > 10 and rtt == rtt:
        gaps = np.diff(t)
        idle = float(gaps[gaps > max(2 * rtt, 20.0)].sum() / max(t[-1] - t[0], 1e-9))
    return {
        "cwnd_bytes": float(m["cwnd"].median()) if len(m) else math.nan,
        "inflight_share": float(fill.median()) if len(fill) else math.nan,
        "loss_episodes": float(len(loss_events(tr))),
        "min_rtt_ms": rtt,
        "idle_share": idle,
        **send_clock(tr),
    }


def shared_window_share(stack: FlowCounters, kernel: FlowCounters) -> tuple[float, float, tuple[float, float] | None]:
    """The stack's share of the two flows' router bytes while both ran (from the later first
    byte to the earlier last byte), and the kernel's Mbit/s then."""
    if not stack.t.size or not kernel.t.size:
        return math.nan, math.nan, None
    t0 = max(stack.first_seen, kernel.first_seen)
    t1 = min(float(stack.t[-1]), float(kernel.t[-1]))
    if t1 <= t0:
        return math.nan, math.nan, None
    a = stack.bytes_at(t1) - stack.bytes_at(t0)
    b = kernel.bytes_at(t1) - kernel.bytes_at(t0)
    share = a / (a + b) if a + b > 0 else math.nan
    return float(share), kernel.mean_mbit(t0, t1), (t0, t1)


def shared_mbit(c: FlowCounters, window: tuple[float, float] | None) -> float:
    return c.mean_mbit(*window) if window else math.nan


def _row(r) -> dict:
    d = asdict(r)
    return {k: d[k] for k in ("parameter", "measured", "reference", "unit", "verdict", "tolerance", "note")}


def _finite(x) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None
