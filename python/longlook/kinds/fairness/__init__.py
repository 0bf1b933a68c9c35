"""Fairness: QUIC and TCP flows sharing one bottleneck (Kakhki et al. IMC'17 §5.1, Table 4,
Fig. 4-5), measured at the router. A run is every flow of a cell at once; linkem restarts
before each run, so its flow log's clock starts with the run."""

from __future__ import annotations

import shutil
import time
from contextlib import nullcontext
from dataclasses import asdict
from typing import Any

import numpy as np

from ...core.kind import Kind, Measurement, RunContext, table_columns
from ...stacks.endpoint import ServerOptions
from ...stacks.builds.install import ensure_stacks
from ...stacks.registry import is_stack, require_servers, resolve
from ...stacks.builds.release_arms import recorded_versions
from ...stacks.servers import open_servers
from ...testbed.latency_probe import LatencyProbe
from .aggregate import cell_summary, example_run, table4
from ...flowlog import FlowCounters, flow_counters, read_flow_log
from .flows import FlowOutcome, run_concurrent_flows
from .measure import FlowMeasurement, RunMeasurement, measure_run
from .metrics import FAIRNESS_METRICS, expected_shares, jain_index, shares, weighted_jain_index
from .sections import fairness_section
from .spec import FairnessCell, FairnessScenario, FlowsArm, FlowSpec, Matchup, Sweep

SETTLE_S = 0.5  # after the flows: linkem's last flow-log lines and the server's log flushes
FLOW_LOG = "linkem-flows.jsonl"


def server_options(cell: FairnessCell) -> ServerOptions:
    return ServerOptions(quic_cc=cell.quic_cc or "cubic", n_conn=cell.n_conn, tcp_cc=cell.tcp_cc or "cubic")


def measurement(
    m: RunMeasurement,
    launch_unix: float,
    artifacts: dict[str, str] | None = None,
    options: dict[str, str] | None = None,
) -> Measurement:
    """One run's fairness figures as the core stores them: per-run metrics, a `flows` row per
    flow, and the throughput timeline and cwnd as series keyed by flow."""
    flows = [{**asdict(f), "position": i} for i, f in enumerate(m.flows)]
    for f in flows:
        f["flow"] = f.pop("label")
    series = [{"name": "mbit", "key": r.flow, "t_s": r.t_s, "value": r.mbit} for r in m.timeline.itertuples()] + [
        {"name": "cwnd_bytes", "key": r.flow, "t_s": r.t_s, "value": r.cwnd_bytes} for r in m.cwnd.itertuples()
    ]
    rates = [f.router_mbit for f in m.flows]
    return Measurement(
        status=m.status,
        error=m.error,
        started_unix_ms=launch_unix * 1000,
        metrics={"jain": _finite(m.jain), "jain_weighted": _finite(m.jain_weighted), "total_mbit": _finite(sum(rates))},
        details={"window_start_s": m.window[0], "window_end_s": m.window[1]},
        series=series,
        rows={"flows": flows},
        artifacts=artifacts or {},
        options=options or {},
    )


def probe_figures(probe, mono_at_launch: float, window: tuple[float, float], details: dict) -> dict:
    """The sparse flow's RTT over the probes sent in the flows' shared window (median and 95th
    percentile, ms); what it lost and sent there go to `details`."""
    w0, w1 = window
    rtts = [r for t, r in probe.samples() if w0 <= t - mono_at_launch < w1]
    details["probe"] = {
        "interval_ms": probe.interval_ms,
        "samples_in_window": len(rtts),
        "lost": probe.lost(),
        "error": probe.error,
    }
    if not rtts:
        return {"probe_rtt_ms": None, "probe_rtt_p95_ms": None}
    x = np.asarray(rtts, dtype=float)
    return {"probe_rtt_ms": round(float(np.median(x)), 3), "probe_rtt_p95_ms": round(float(np.percentile(x, 95)), 3)}


def _finite(x: float) -> float | None:
    return x if x == x and abs(x) != float("inf") else None


class Fairness(Kind):
    name = "fairness"
    scenario_model = FairnessScenario
    metrics = FAIRNESS_METRICS
    tables = {"flows": table_columns(FlowMeasurement, rename={"label": "flow"}, position=int)}
    fresh_link_per_run = True
    testbed_options = {"flow_log": True}
    sections = (fairness_section,)

    def prepare(self, scenario: FairnessScenario) -> dict[str, Any]:
        # an ours@VERSION the arms name is built on first use, before the grid's first run
        specs = [s for a in scenario.arms for s in scenario.stacks_of(a)]
        ensure_stacks(specs)
        require_servers([(scenario.stacks_of(a)[0], None) for a in scenario.arms])
        return {}

    def session(self, testbed, experiment_dir):
        return open_servers(testbed, experiment_dir)

    def versions(self, scenario: FairnessScenario) -> dict[str, Any]:
        """The exact version and binary digest of every build the arms run."""
        return recorded_versions(s for a in scenario.arms for s in scenario.stacks_of(a))

    def measure(self, ctx: RunContext) -> Measurement:
        cell: FairnessCell = ctx.cell
        server_spec, client_spec = ctx.scenario.stacks_of(ctx.arm)
        servers = ctx.session["servers"]
        port, server = servers.get(server_spec, options=server_options(cell))
        linkem = ctx.testbed.linkem
        interval = ctx.scenario.latency_probe_ms
        with LatencyProbe(ctx.testbed, interval, cell.duration_s) if interval else nullcontext() as probe:
            launch_unix, outcomes = run_concurrent_flows(
                ctx.testbed,
                port=port,
                cert_dir=servers.cert_dir,
                flows=cell.flows(),
                run_id=ctx.run_id,
                run_dir=ctx.run_dir,
                duration_s=cell.duration_s,
                keylog=ctx.keylog,
                binary=resolve(client_spec).binary if is_stack(client_spec) else None,
            )
            mono_at_launch = time.monotonic() - (time.time() - launch_unix)
        time.sleep(SETTLE_S)
        flow_log = ctx.run_dir / FLOW_LOG
        shutil.copyfile(linkem.flow_log_path, flow_log)
        logs = {
            o.spec.label: [ctx.run_dir / "logs" / name for name in server.take_logs(o.run_id, ctx.run_dir / "logs")]
            for o in outcomes
        }
        m = measure_run(
            outcomes,
            flow_log=flow_log,
            launch_unix=launch_unix,
            linkem_t0_unix=linkem.started_unix,
            window=cell.shared_window(),
            end_s=cell.duration_s,
            bin_s=ctx.scenario.bin_s,
            logs=logs,
        )
        out = measurement(
            m, launch_unix, {"flow_log": FLOW_LOG}, options={"server": server_spec, "client": client_spec}
        )
        if probe is not None:
            out.metrics.update(probe_figures(probe, mono_at_launch, cell.shared_window(), out.details))
        return out

    def progress_text(self, m) -> str:
        jain = m.metrics.get("jain")
        return "" if jain is None else f"Jain {jain:.3f}"


KIND = Fairness()

__all__ = [
    "KIND",
    "FairnessCell",
    "FairnessScenario",
    "FlowCounters",
    "FlowsArm",
    "FlowMeasurement",
    "FlowOutcome",
    "FlowSpec",
    "Matchup",
    "RunMeasurement",
    "Sweep",
    "cell_summary",
    "example_run",
    "expected_shares",
    "flow_counters",
    "jain_index",
    "measure_run",
    "measurement",
    "read_flow_log",
    "run_concurrent_flows",
    "shares",
    "table4",
    "weighted_jain_index",
]
