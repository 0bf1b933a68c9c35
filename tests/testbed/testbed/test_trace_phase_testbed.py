"""Runs over a trace see the same trace: linkem re-anchors its trace at a run's first packet
(Testbed.rephase_trace, core.trace_phase), so two runs seconds apart on one linkem deliver
the same capacity second by second, and a phase moves the run along the trace. Measured from
linkem's own delivery log, on real traffic saturating the link."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd
from testbed_helpers import needs_testbed

from longlook.flowlog import read_flow_log
from longlook.linkprofile import LinkProfile
from longlook.testbed import Testbed
from longlook.testbed.probe import PathProbe
from longlook.traces import write_mahimahi

# a 4 s trace of four steps; a run of 3 s meets three of them
STEPS = [(1.0, 2.0), (1.0, 8.0), (1.0, 1.0), (1.0, 6.0)]
OFFERED_MBIT = 12.0  # above every step: the queue never empties, delivery is the capacity


def delivered_mbit_per_second(log: pd.DataFrame, since_t: float, seconds: int) -> np.ndarray:
    """Down UDP bytes linkem delivered after `since_t`, per second from the first delivery."""
    down = log[(log["direction"] == "down") & (log["proto"] == "udp")].sort_values("t")
    rows = []
    for _, flow in down.groupby(["src", "dst"]):
        before = flow[flow["t"] <= since_t]["bytes"]
        after = flow[flow["t"] > since_t]
        base = float(before.iloc[-1]) if len(before) else 0.0
        inc = np.diff(np.r_[base, after["bytes"].to_numpy(float)])
        rows.append(pd.DataFrame({"t": after["t"].to_numpy(float), "bytes": inc}))
    per_t = pd.concat(rows).groupby("t")["bytes"].sum()
    per_t = per_t[per_t > 0]
    t = per_t.index.to_numpy(float)
    cumulative = np.cumsum(per_t.to_numpy(float))
    # the first log line after the first delivery (lines every 25 ms) is the run's zero
    t0 = t[0] - 0.025
    edges = t0 + np.arange(seconds + 1)
    at = np.interp(edges, np.r_[t0, t], np.r_[0.0, cumulative])
    return np.diff(at) * 8 / 1e6


@needs_testbed("linkem", "linkem-probe")
def test_two_runs_meet_the_same_capacity_and_a_phase_moves_along_the_trace(tmp_path: Path):
    trace = tmp_path / "steps.trace"
    write_mahimahi(STEPS, trace)
    profile = LinkProfile(
        name="steps", delay_ms=5, buffer_bytes=3_000_000, up={"rate_mbit": 50}, down={"trace": str(trace)}
    )
    runs = {}
    with Testbed(profile, flow_log=True) as tb, PathProbe(tb) as probe:
        flow_log = tb.linkem.flow_log_path
        for name, wait_s, phase_ms in (("first", 0.3, 0.0), ("again", 1.7, 0.0), ("shifted", 0.9, 2000.0)):
            time.sleep(wait_s)  # linkem's own clock moves on between runs, by a different amount each time
            since = float(read_flow_log(flow_log)["t"].max()) if flow_log.stat().st_size else 0.0
            tb.rephase_trace(phase_ms)
            probe.udp("down", rate_mbit=OFFERED_MBIT, duration_s=3.2, interval_ms=100, drain_ms=300)
            time.sleep(0.1)  # the flow log's next line
            runs[name] = delivered_mbit_per_second(read_flow_log(flow_log), since, seconds=3)
        stats = tb.linkem_stats()
    assert stats["trace_phase"]["requests"] == 3, stats.get("trace_phase")

    rates = {k: np.round(v, 2).tolist() for k, v in runs.items()}
    expected = np.array([r for _, r in STEPS])
    # second by second the trace's capacity: 2, 8, 1 Mbit/s from phase 0 ...
    assert np.allclose(runs["first"], expected[:3], rtol=0.1, atol=0.3), rates
    # ... for a run started 1.7 s later on the same linkem, too (without a re-phase it would
    # meet whatever stretch linkem's clock had reached) ...
    assert np.allclose(runs["again"], runs["first"], rtol=0.05, atol=0.25), rates
    # ... and 1, 6, 2 Mbit/s from 2 s into the trace (it wraps)
    assert np.allclose(runs["shifted"], expected[[2, 3, 0]], rtol=0.1, atol=0.3), rates


@needs_testbed("linkem", "endpoint")
def test_the_arms_of_a_round_share_its_phase_and_are_compared_as_pairs(tmp_path: Path):
    """A page-load scenario over a trace with `trace_phase = "random"`: every run records its
    round's phase (arms and retries alike, rounds apart), and the cell is compared paired by
    round. A fixed-rate cell of the same scenario records none and stays unpaired."""
    from longlook.core.execute import Runner
    from longlook.core.experiment_stats import analyse
    from longlook.core.store import Store
    from longlook.kinds.pageload import Scenario

    write_mahimahi(STEPS, tmp_path / "steps.trace")
    text = f"""
name = "trace-phase-test"
seed = 3
rounds = 3
protocols = ["h3", "h2"]
timeout_s = 20
workloads = ["1x100k"]
trace_phase = "random"
[[links]]
name = "steps"
delay_ms = 10
buffer_bytes = 150000
up = {{ rate_mbit = 20 }}
down = {{ trace = "{tmp_path / "steps.trace"}" }}
[[links]]
name = "fixed"
rate_mbit = 20
rtt_ms = 20
buffer_bytes = 150000
[options]
zero_rtt = false
[fidelity]
exclude_flagged = false
"""
    summary = Runner(Scenario.from_toml(text, source="test"), tmp_path / "exp", link_check=False).run()
    assert summary.ok == summary.runs >= 12, summary
    with Store.open(tmp_path / "exp", read_only=True) as store:
        runs = store.runs_frame()
        comparisons = {c.cell_id: c for c in analyse(store).comparisons}
    over_trace = runs["cell_id"].str.contains("trace:", regex=False)  # the link's label names its trace
    traced, fixed = runs[over_trace], runs[~over_trace]
    phases = traced.groupby("round")["trace_phase_ms"].agg(["nunique", "first"])
    assert (phases["nunique"] == 1).all(), traced[["round", "arm", "trace_phase_ms"]]
    assert phases["first"].nunique() == 3 and phases["first"].between(0, 4000).all(), phases
    assert fixed["trace_phase_ms"].isna().all()
    assert [c.paired for cid, c in sorted(comparisons.items(), key=lambda kv: "trace:" not in kv[0])] == [True, False]
