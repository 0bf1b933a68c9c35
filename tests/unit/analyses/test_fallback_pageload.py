"""The page-load fallback analysis: a racing arm against a TCP-only arm per cell, from a real
store of known runs (no testbed): PLT test, fallback share and time, QUIC share, time lost."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from longlook.analyses.fallback.pageload import analyze_pageload_store
from longlook.cli import app
from longlook.core.record import RunRecord
from longlook.core.store import Store
from longlook.errors import LonglookError
from longlook.kinds.pageload import Scenario

SCENARIO = """
name = "fb-pages"
rounds = 4
workloads = ["5x10k"]
[[arms]]
label = "quic-enabled"
protocol = "race"
[[arms]]
label = "tcp-only"
protocol = "h2"
[[links]]
name = "clean"
rate_mbit = 10
rtt_ms = 36
[[links]]
name = "blocked"
rate_mbit = 10
rtt_ms = 36
middlebox = { block_udp = true }
"""


def _store(tmp_path: Path) -> Path:
    sc = Scenario.from_toml(SCENARIO)
    clean, blocked = sc.cells()
    with Store.open(tmp_path) as s:
        s.start_experiment(sc, {})
        for r in range(4):
            # clean: the racing client is on QUIC and a bit faster; blocked: it waits 300 ms
            s.record_run(
                RunRecord(
                    run_id=f"cq{r}",
                    cell_id=clean.id,
                    round=r,
                    position=0,
                    arm="quic-enabled",
                    status="ok",
                    protocol_negotiated="h3",
                    metrics={"plt_ms": 200.0 + r, "quic_share": 1.0, "tcp_delay_ms": 300.0},
                )
            )
            s.record_run(
                RunRecord(
                    run_id=f"ct{r}",
                    cell_id=clean.id,
                    round=r,
                    position=1,
                    arm="tcp-only",
                    status="ok",
                    protocol_requested="h2",
                    protocol_negotiated="h2",
                    metrics={"plt_ms": 240.0 + r},
                )
            )
            s.record_run(
                RunRecord(
                    run_id=f"bq{r}",
                    cell_id=blocked.id,
                    round=r,
                    position=0,
                    arm="quic-enabled",
                    status="ok",
                    protocol_negotiated="h2",
                    metrics={
                        "plt_ms": 540.0 + r,
                        "quic_share": 0.0,
                        "tcp_delay_ms": 300.0,
                        "time_to_fallback_ms": 372.0 + r,
                    },
                )
            )
            s.record_run(
                RunRecord(
                    run_id=f"bt{r}",
                    cell_id=blocked.id,
                    round=r,
                    position=1,
                    arm="tcp-only",
                    status="ok",
                    protocol_requested="h2",
                    protocol_negotiated="h2",
                    metrics={"plt_ms": 240.0 + r},
                )
            )
        # a failed racing run is not data
        s.record_run(
            RunRecord(
                run_id="bqx",
                cell_id=blocked.id,
                round=0,
                position=0,
                arm="quic-enabled",
                attempt=2,
                status="failed",
                metrics={"plt_ms": 1.0},
            )
        )
    return tmp_path


def test_per_cell_plt_fallback_and_time_lost(tmp_path: Path):
    df = analyze_pageload_store(_store(tmp_path)).set_index("pattern")
    clean, blocked = df.loc["clean"], df.loc["blocked"]
    assert clean["n_quic"] == 4 and clean["fell_back_share"] == 0 and clean["served_h3"] == 4
    assert clean["verdict"] == "QUIC-enabled faster" and clean["quic_share_mean"] == 1.0
    assert pd.isna(clean["lost_to_blocked_handshake_ms"])
    assert blocked["n_quic"] == 4 and blocked["fell_back_share"] == 1 and blocked["served_h2"] == 4
    assert blocked["verdict"] == "TCP-only faster" and blocked["quic_share_mean"] == 0.0
    assert blocked["time_to_fallback_ms_median"] == pytest.approx(373.5)
    assert blocked["lost_to_blocked_handshake_ms"] == pytest.approx(300.0)
    assert blocked["tcp_delay_ms_mean"] == 300.0


def test_cli_writes_the_table(tmp_path: Path):
    out = CliRunner().invoke(app, ["analyze", "fallback", str(_store(tmp_path)), "--out", str(tmp_path / "o")])
    assert out.exit_code == 0, out.output
    table = pd.read_csv(tmp_path / "o" / "fallback-pageloads.csv")
    assert set(table["pattern"]) == {"clean", "blocked"} and "TCP-only faster" in out.output


def test_no_racing_arm_is_one_error(tmp_path: Path):
    bad = CliRunner().invoke(app, ["analyze", "fallback", str(_store(tmp_path)), "--quic-arm", "nope"])
    # the CLI's entry point prints a LonglookError as one line with its hint (test_bad_input)
    assert isinstance(bad.exception, LonglookError) and "racing arm" in str(bad.exception)
