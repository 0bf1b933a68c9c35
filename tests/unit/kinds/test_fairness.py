"""Fairness analysis on synthetic data: Jain's index, expected shares, router counters from a
flow log, one run's measurement, Table-4 aggregation, the scenario grid, store and report."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from longlook.errors import LonglookError
from longlook.core.record import RunRecord
from longlook.core.store import Store
from longlook.kinds.fairness import (
    FairnessScenario,
    FlowOutcome,
    FlowSpec,
    cell_summary,
    example_run,
    expected_shares,
    flow_counters,
    jain_index,
    measure_run,
    measurement,
    read_flow_log,
    shares,
    table4,
    weighted_jain_index,
)
from longlook.kinds.fairness.cwnd import downsample, read_cwnd
from longlook.kinds.fairness.sections import FairnessData
from longlook.core.experiment_stats import analyse
from longlook.report import build_report
from repo_paths import ROOT

CLIENT, SERVER = "198.18.1.2", "198.18.2.2:4433"

SCENARIO = """
kind = "fairness"
name = "synthetic"
runs = 2
duration_s = 10
starts = ["simultaneous", "staggered-tcp-first"]
stagger_s = 2
[link]
rate_mbit = 5
rtt_ms = 36
buffer_bytes = 30000
[[matchups]]
quic = 1
tcp = 2
[[matchups]]
tcp = 2
[sweep]
quic_cc = ["cubic", "bbr"]
n_conn = [1, 2]
"""


# ---------------------------------------------------------------- metrics


def test_jain_index_known_values():
    assert jain_index([3, 3, 3]) == pytest.approx(1.0)
    assert jain_index([5, 0, 0, 0]) == pytest.approx(0.25)  # one of four takes all: 1/n
    assert jain_index([1, 2]) == pytest.approx(9 / 10)
    assert math.isnan(jain_index([]))
    assert math.isnan(jain_index([0, 0]))
    assert math.isnan(jain_index([1, float("nan")]))


def test_weighted_jain_is_one_when_each_flow_gets_its_weighted_share():
    # QUIC emulating 2 connections getting twice each TCP flow's rate is what it should get
    assert weighted_jain_index([2.5, 1.25, 1.25], [2, 1, 1]) == pytest.approx(1.0)
    assert jain_index([2.5, 1.25, 1.25]) < 0.9
    with pytest.raises(ValueError):
        weighted_jain_index([1, 1], [1, 0])


def test_expected_shares_follow_n_connection_emulation():
    assert expected_shares([1, 1]) == pytest.approx([0.5, 0.5])
    assert expected_shares([1, 1, 1, 1, 1]) == pytest.approx([0.2] * 5)  # QUIC vs TCPx4: 1/(M+1)
    assert expected_shares([2, 1, 1]) == pytest.approx([0.5, 0.25, 0.25])  # N/(M+N), N=2, M=2
    with pytest.raises(ValueError):
        expected_shares([])
    assert shares([3, 1]) == pytest.approx([0.75, 0.25])
    assert all(math.isnan(s) for s in shares([0, 0]))


# ---------------------------------------------------------------- flow log


def _flow_log(path: Path, flows: dict[str, tuple[str, list[tuple[float, int]]]], *, up=True) -> Path:
    """flows: client port -> (proto, [(t, cumulative bytes down)]). Adds an up-direction line
    and an unrelated flow so the filters have something to reject."""
    lines = []
    for port, (proto, points) in flows.items():
        for t, b in points:
            lines.append(
                {
                    "t": t,
                    "direction": "down",
                    "proto": proto,
                    "src": SERVER,
                    "dst": f"{CLIENT}:{port}",
                    "packets": b // 1000,
                    "bytes": b,
                    "dropped_loss": 0,
                    "dropped_buffer": 1,
                }
            )
            if up:
                lines.append(
                    {
                        "t": t,
                        "direction": "up",
                        "proto": proto,
                        "src": f"{CLIENT}:{port}",
                        "dst": SERVER,
                        "packets": 1,
                        "bytes": 999_999_999,
                        "dropped_loss": 0,
                        "dropped_buffer": 0,
                    }
                )
    lines.append(
        {
            "t": 1.0,
            "direction": "down",
            "proto": "udp",
            "src": SERVER,
            "dst": f"{CLIENT}:1",
            "packets": 1,
            "bytes": 123_456_789,
            "dropped_loss": 0,
            "dropped_buffer": 0,
        }
    )
    path.write_text("\n".join(json.dumps(x) for x in lines) + '\n{"t": 9.9, "dire')  # torn last line
    return path


def test_flow_counters_are_a_step_function_of_the_right_flow(tmp_path: Path):
    log = read_flow_log(
        _flow_log(
            tmp_path / "f.jsonl",
            {"5000": ("tcp", [(1.0, 125_000), (2.0, 250_000), (4.0, 500_000)]), "5001": ("udp", [(1.0, 1_000)])},
        )
    )
    c = flow_counters(log, client_addr=f"{CLIENT}:5000", proto="tcp")
    assert c.total_bytes == 500_000
    assert c.bytes_at(0.5) == 0 and c.bytes_at(1.0) == 125_000 and c.bytes_at(3.9) == 250_000
    assert c.mean_mbit(1.0, 2.0) == pytest.approx(1.0)  # 125 kB in 1 s
    assert c.mean_mbit(0.0, 4.0) == pytest.approx(1.0)
    tl = c.timeline_mbit(np.array([0.0, 2.0, 4.0]))
    assert tl == pytest.approx([1.0, 1.0])
    # same port, other protocol: a different flow
    assert flow_counters(log, client_addr=f"{CLIENT}:5000", proto="udp").total_bytes == 0


# ---------------------------------------------------------------- one run


def _outcome(
    label: str, proto: str, port: int, weight: int = 1, status: str = "ok", body: int = 1_000_000
) -> FlowOutcome:
    doc = {
        "local_addr": f"{CLIENT}:{port}",
        "bytes": body,
        "ok": status == "ok",
        "started_unix_ms": 1000_000,
        "goodput": [[0.0, 0], [10_000.0, body]],
        "stopped_early": True,
    }
    return FlowOutcome(FlowSpec(label, proto, weight, 0.0), f"r-{label}", status, None, doc)


def _unequal_run(tmp_path: Path):
    # QUIC carries 3 Mbit/s, TCP 1 Mbit/s for 10 s; linkem started 0.5 s before the flows
    # were launched, so run time t = linkem time - 0.5. Lines every 0.1 s, off the bin edges.
    ticks = [k / 10 for k in range(101)]
    quic = [(0.55 + t, round(t * 375_000)) for t in ticks]
    tcp = [(0.55 + t, round(t * 125_000)) for t in ticks]
    log = _flow_log(tmp_path / "f.jsonl", {"6000": ("udp", quic), "6001": ("tcp", tcp)})
    return measure_run(
        [_outcome("QUIC", "h3", 6000), _outcome("TCP", "h2", 6001)],
        flow_log=log,
        launch_unix=1000.5,
        linkem_t0_unix=1000.0,
        window=(0.0, 10.0),
        end_s=10.0,
        bin_s=1.0,
    )


def test_measure_run_shares_and_jain_from_router_counters(tmp_path: Path):
    m = _unequal_run(tmp_path)
    assert m.status == "ok"
    quic, tcp = m.flows
    assert quic.router_mbit == pytest.approx(3.0, rel=0.02)
    assert tcp.router_mbit == pytest.approx(1.0, rel=0.02)
    assert (quic.share, tcp.share) == pytest.approx((0.75, 0.25), rel=0.02)
    assert (quic.expected_share, tcp.expected_share) == (0.5, 0.5)
    assert m.jain == pytest.approx(16 / 20, rel=0.01)  # (3+1)^2 / (2 * (9+1))
    assert quic.endpoint_mbit == pytest.approx(0.8)  # 1 MB over 10 s, from the fetch JSON
    tl = m.timeline[m.timeline["flow"] == "QUIC"]
    assert len(tl) == 10 and tl["mbit"].iloc[1:].to_numpy() == pytest.approx(3.0, rel=0.02)


def test_a_failed_flow_fails_the_run(tmp_path: Path):
    log = _flow_log(tmp_path / "f.jsonl", {"6000": ("udp", [(1.0, 1000), (5.0, 9000)])})
    m = measure_run(
        [_outcome("QUIC", "h3", 6000), _outcome("TCP", "h2", 6001, status="timeout")],
        flow_log=log,
        launch_unix=0.0,
        linkem_t0_unix=0.0,
        window=(0.0, 5.0),
        end_s=5.0,
        bin_s=1.0,
    )
    assert m.status == "failed" and "TCP: timeout" in m.error


def test_a_flow_missing_from_the_router_log_fails_the_run(tmp_path: Path):
    log = _flow_log(tmp_path / "f.jsonl", {"6000": ("udp", [(1.0, 1000), (5.0, 9000)])})
    m = measure_run(
        [_outcome("QUIC", "h3", 6000), _outcome("TCP", "h2", 7777)],
        flow_log=log,
        launch_unix=0.0,
        linkem_t0_unix=0.0,
        window=(0.0, 5.0),
        end_s=5.0,
        bin_s=1.0,
    )
    assert m.status == "failed" and "carried nothing" in m.error


# ---------------------------------------------------------------- scenario


def test_grid_drops_knobs_that_do_not_apply():
    s = FairnessScenario.from_toml(SCENARIO)
    cells = s.cells()
    ids = [c.id for c in cells]
    assert len(ids) == len(set(ids))
    # QUIC vs TCPx2: 2 starts x (cubic n1, cubic n2, bbr n1) = 6 (bbr with N=2 does not exist);
    # TCP vs TCP: QUIC knobs do not apply, so 2 starts only
    assert len(cells) == 6 + 2
    assert not any(c.quic_cc == "bbr" and c.n_conn == 2 for c in cells)
    assert all(c.quic_cc is None and c.n_conn is None for c in cells if c.matchup.quic == 0)
    assert s.total_runs() == 16


def test_staggered_starts_and_the_shared_window():
    s = FairnessScenario.from_toml(SCENARIO)
    cell = next(c for c in s.cells() if c.start == "staggered-tcp-first" and c.matchup.quic)
    starts = {f.label: f.start_s for f in cell.flows()}
    assert starts == {"TCP 1": 0.0, "TCP 2": 2.0, "QUIC": 4.0}
    assert cell.shared_window() == (4.0, 10.0)
    n2 = next(c for c in s.cells() if c.n_conn == 2)
    assert [f.weight for f in n2.flows()] == [2, 1, 1]


def test_one_at_a_time_sweep_varies_each_knob_alone():
    text = SCENARIO.replace(
        "n_conn = [1, 2]", 'n_conn = [1, 2]\nmode = "one_at_a_time"\nbuffer_bytes = [30000, 100000]'
    )
    s = FairnessScenario.from_toml(text)
    quic_cells = [c for c in s.cells() if c.matchup.quic and c.start == "simultaneous"]
    settings = {(c.quic_cc, c.n_conn, c.link.buffer_bytes) for c in quic_cells}
    assert settings == {("cubic", 1, 30000), ("bbr", 1, 30000), ("cubic", 2, 30000), ("cubic", 1, 100000)}


def test_swept_buffer_replaces_a_per_direction_buffer():
    text = SCENARIO.replace("buffer_bytes = 30000", "[link.down]\nbuffer_packets = 20").replace(
        "n_conn = [1, 2]", "n_conn = [1]\nbuffer_bytes = [50000]"
    )
    cells = FairnessScenario.from_toml(text).cells()
    assert {c.link.resolved("down").buffer_bytes for c in cells} == {50000}
    assert all(c.link.resolved("down").buffer_packets is None and c.id.endswith("buf50000") for c in cells)
    assert "buffer_bytes = 50000" in cells[0].link.to_linkem_toml()


@pytest.mark.parametrize(
    "edit, field",
    [
        ("[[matchups]]\nquic = 1\ntcp = 2", "matchups[0]"),  # replaced below with a 1-flow matchup
        ("rate_mbit = 5", "link"),
        ("n_conn = [1, 2]", "sweep.n_conn"),
        ("runs = 2", "runs"),
        ("stagger_s = 2", "stagger_s"),
        ("duration_s = 10", "bogus"),
    ],
)
def test_errors_name_the_field(edit: str, field: str):
    bad = {
        "[[matchups]]\nquic = 1\ntcp = 2": "[[matchups]]\nquic = 1",
        "rate_mbit = 5": "",
        "n_conn = [1, 2]": "n_conn = [0]",
        "runs = 2": "runs = 0",
        "stagger_s = 2": "stagger_s = 6",
        "duration_s = 10": "duration_s = 10\nbogus = 1",
    }[edit]
    with pytest.raises(LonglookError) as e:
        FairnessScenario.from_toml(SCENARIO.replace(edit, bad), source="x.toml")
    assert str(e.value).startswith("x.toml: ") and field in str(e.value)


def test_shipped_scenarios_are_valid():
    root = ROOT / "scenarios"
    t4 = FairnessScenario.from_toml((root / "kakhki-table4-fairness.toml").read_text())
    assert (t4.link.rate_mbit, t4.link.rtt_ms(), t4.link.buffer_bytes) == (5, 36, 30000)
    assert (t4.duration_s, t4.runs) == (100, 10)
    assert {c.matchup.name() for c in t4.cells()} == {
        "QUIC vs TCP",
        "QUIC vs TCPx2",
        "QUIC vs TCPx4",
        "QUIC vs QUIC",
        "TCP vs TCP",
    }
    for name in ("fairness-quick.toml", "fairness-sweeps.toml"):
        assert FairnessScenario.from_toml((root / name).read_text()).cells()


# ---------------------------------------------------------------- store, aggregation, report


def store_cell():
    return FairnessScenario.from_toml(SCENARIO).cells()[0]


def _record(run_id: str, cell, round_index: int, m, attempt: int = 1) -> RunRecord:
    return RunRecord.of(
        measurement(m, 1000.0 + round_index),
        run_id=run_id,
        cell_id=cell.id,
        round=round_index,
        position=0,
        arm="flows",
        attempt=attempt,
    )


def _filled_store(tmp_path: Path) -> Store:
    scenario = FairnessScenario.from_toml(SCENARIO)
    store = Store.open(tmp_path / "exp")
    store.start_experiment(scenario)
    cell = scenario.cells()[0]  # QUIC vs TCPx2
    for i, (q, t1, t2) in enumerate([(3.0, 1.0, 1.0), (2.0, 1.5, 1.5)]):
        m = _unequal_run(tmp_path)
        m.flows[0].router_mbit, m.flows[1].router_mbit = q, t1
        from dataclasses import replace

        m.flows.append(replace(m.flows[1], label="TCP 2", router_mbit=t2, local_addr=f"{CLIENT}:6002"))
        rates = [f.router_mbit for f in m.flows]
        for f, s in zip(m.flows, shares(rates)):
            f.share, f.expected_share = s, 1 / 3
        m.jain = jain_index(rates)
        # cwnd samples; the one at 20 s lies outside the shared window (0..10 s)
        m.cwnd = pd.DataFrame(
            {"flow": ["QUIC"] * 3, "t_s": [1.0, 5.0, 20.0], "cwnd_bytes": [10_000.0, 20_000.0 + i * 10_000, 99_999.0]}
        )
        store.record_run(_record(f"run{i}", cell, i, m))
    failed = _unequal_run(tmp_path)
    failed.status, failed.error = "failed", "TCP: timeout"
    failed.flows[0].router_mbit = 99.0
    store.record_run(_record("run-bad", cell, 2, failed))
    return store


def test_table4_means_and_sds_over_ok_runs(tmp_path: Path):
    with _filled_store(tmp_path) as store:
        data = FairnessData(store, store.runs_frame())
        cells, runs, flows = data.cells, data.runs, data.flows()
        t = table4(cells, runs, flows)
        quic = t[(t["flow"] == "QUIC")].iloc[0]
        assert quic["n"] == 2  # the failed run is left out
        assert quic["mbit_mean"] == pytest.approx(2.5)
        assert quic["mbit_sd"] == pytest.approx(np.std([3.0, 2.0], ddof=1))
        assert quic["share_mean"] == pytest.approx((0.6 + 0.4) / 2)
        assert list(t["flow"]) == ["QUIC", "TCP", "TCP 2"]  # flow order as run
        s = cell_summary(cells, runs)
        first = s.iloc[0]
        assert (first["runs"], first["ok"]) == (3, 2)
        assert first["jain_mean"] == pytest.approx(np.mean([jain_index([3, 1, 1]), jain_index([2, 1.5, 1.5])]))
        assert example_run(runs, first["cell_id"]) in ("run0", "run1")
        assert store.completed_runs(first["cell_id"]) == {(0, "flows"), (1, "flows")}  # not the failed one
        assert len(data.timeline("run0")) == 20
        cw = data.mean_cwnd()
        assert cw.loc[cw["flow"] == "QUIC", "cwnd_kb"].item() == pytest.approx((15 + 20) / 2)
        # a retried run: the failed attempt stays recorded (never counted), the retry counts
        store.record_run(_record("run-redo", store_cell(), 2, _unequal_run(tmp_path), attempt=2))
        runs = store.runs_frame()
        assert set(runs["run_id"]) == {"run0", "run1", "run-bad", "run-redo"}
        assert len(store.completed_runs(first["cell_id"])) == 3
        assert store.settled(first["cell_id"], retries=2) == {(0, "flows"), (1, "flows"), (2, "flows")}


def test_store_refuses_to_mix_experiments(tmp_path: Path):
    _filled_store(tmp_path).close()
    with Store.open(tmp_path / "exp") as store:
        store.start_experiment(FairnessScenario.from_toml(SCENARIO))  # same scenario: resumes
        with pytest.raises(LonglookError, match="another"):
            store.start_experiment(FairnessScenario.from_toml(SCENARIO.replace("runs = 2", "runs = 3")))


def test_report_holds_table_figures_and_failures(tmp_path: Path):
    _filled_store(tmp_path).close()
    page = build_report(tmp_path / "exp").read_text()
    assert "2.50 (0.71)" in page  # QUIC's mean (sd) Mbit/s
    assert "Jain" in page and "run-bad" in page
    assert page.count("<svg") == 2  # timeline and cwnd of the example run
    assert "17.5" in page  # mean cwnd of QUIC, KB
    assert "fair-tl-0" in page


def test_a_run_flagged_by_its_path_audit_is_left_out(tmp_path: Path):
    with _filled_store(tmp_path) as store:
        r = _record("run-stalled", store_cell(), 3, _unequal_run(tmp_path))
        r.metrics["jain"] = 0.1  # would drag the mean down if it counted
        r.audit = {
            "released": 1000,
            "late_releases": 3,
            "max_release_late_ms": 12.5,
            "kernel_queue_drops": 0,
            "stalls": 1,
            "max_stall_ms": 12.0,
            "flagged": True,
            "reasons": ["machine stalled 12.0 ms (limit 5 ms)"],
        }
        store.record_run(r)
        an = analyse(store)
        assert "run-stalled" not in set(an.counted()["run_id"])
        s = cell_summary(FairnessData(store, an.runs).cells, an.runs)
        assert s.iloc[0]["jain_mean"] > 0.5
    page = build_report(tmp_path / "exp").read_text()
    assert "run-stalled" in page and "machine stalled 12.0 ms" in page


def test_cwnd_from_a_qlog(tmp_path: Path):
    records = [
        {"qlog_format": "JSON-SEQ", "trace": {"common_fields": {"reference_time": 1000_000.0}}},
        {"time": 10.0, "name": "recovery:metrics_updated", "data": {"congestion_window": 14480}},
        {"time": 12.0, "name": "recovery:metrics_updated", "data": {"bytes_in_flight": 3}},
        {"time": 20.0, "name": "recovery:metrics_updated", "data": {"congestion_window": 20000}},
        {"time": 90.0, "name": "recovery:metrics_updated", "data": {"congestion_window": 30000}},
    ]
    log = tmp_path / "a.sqlog"
    log.write_text("".join("\x1e" + json.dumps(r) + "\n" for r in records) + '\x1e{"time": 9')
    c = read_cwnd(log)
    assert list(c["cwnd_bytes"]) == [14480, 20000, 30000]
    assert c["unix_s"].iloc[0] == pytest.approx(1000.010)
    assert list(downsample(c, 0.05)["cwnd_bytes"]) == [20000, 30000]  # last value per 50 ms


def test_cli_fairness_is_run_then_report(tmp_path: Path, monkeypatch):
    import typer

    import longlook.commands.run
    import longlook.report
    from longlook.commands import fairness

    app = typer.Typer()
    app.callback()(lambda: None)
    fairness.register(app)
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO)
    calls = []

    def short_cells(scenario, out, **kw):
        calls.append(("run", scenario, out, kw["command"]))
        raise typer.Exit(1)

    monkeypatch.setattr(longlook.commands.run, "run_scenario", short_cells)
    monkeypatch.setattr(longlook.report, "build_report", lambda d: calls.append(("report", d)) or d / "report.html")
    out = tmp_path / "o"
    ran = CliRunner().invoke(app, ["fairness", str(path), "--out", str(out)])
    assert ran.exit_code == 1  # cells came up short: reported anyway, the status kept
    assert calls == [("run", path, out, "longlook fairness"), ("report", out)]
    assert str(out / "report.html") in ran.output
    missing = CliRunner().invoke(app, ["fairness", str(tmp_path / "nope.toml"), "--out", str(tmp_path / "o")])
    assert isinstance(missing.exception, LonglookError) and "no such scenario" in str(missing.exception)


def test_states_reads_one_trace_per_flow_labelled_by_the_flows_table(tmp_path: Path):
    """A fairness run holds the server's log of each flow under runs/<id>/logs/, named by
    the client's address: `longlook states` reads each as its own arm, ARM.FLOW, without the
    run's linkem counters (every flow's drops together, no flow's own)."""
    from longlook.analyses.states import load_runs
    from states_synthetic import quic_log, tcp_log, write_qlog

    store = _filled_store(tmp_path)
    logs = store.run_dir("run0") / "logs"
    logs.mkdir(parents=True)
    write_qlog(logs / f"h3-000000-{CLIENT}_6000.sqlog", quic_log(["SlowStart", "CongestionAvoidance"]))
    write_qlog(logs / f"h2-000001-{CLIENT}_6001.tcp.sqlog", tcp_log(["Open", "Recovery", "Open"]))
    write_qlog(logs / f"h3-000002-{CLIENT}_7777.sqlog", quic_log(["SlowStart"]))  # no such flow
    (store.run_dir("run0") / "linkem.json").write_text("{}")
    store.close()
    runs = {r.arm: r for r in load_runs(tmp_path / "exp")}
    assert set(runs) == {"flows.QUIC", "flows.TCP"}
    assert runs["flows.QUIC"].protocol != "TCP" and runs["flows.TCP"].protocol == "TCP"
    assert all(r.run_id == "run0" and r.linkem is None for r in runs.values())
    assert [r.arm for r in load_runs(tmp_path / "exp", arm="flows.TCP")] == ["flows.TCP"]


def test_fairness_holds_runs_to_20_ms_stalls_unless_the_scenario_says():
    """Long flows share a hypervisor stall alike (see FairnessScenario.fidelity_defaults)."""
    sc = FairnessScenario.from_toml(SCENARIO)
    assert (sc.fidelity.max_stall_ms, sc.fidelity.max_release_late_ms) == (20.0, 20.0)
    own = FairnessScenario.from_toml(SCENARIO + "\n[fidelity]\nmax_stall_ms = 6\n")
    assert (own.fidelity.max_stall_ms, own.fidelity.max_release_late_ms) == (6.0, 20.0)
