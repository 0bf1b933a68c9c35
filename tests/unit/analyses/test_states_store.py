"""`longlook states` / `states diff` and the report section, on a store of synthetic runs:
a clean cell and a reordered cell whose QUIC runs enter Recovery more and lose spuriously."""

import json

import pytest
import typer
from typer.testing import CliRunner

from longlook.commands import states as states_cmds
from longlook.report.sections import states as states_section
from longlook.kinds.pageload import Scenario
from longlook.analyses.states import load_runs
from longlook.core.record import new_run_id
from longlook.core.store import Store, environment_versions
from longlook.kinds.pageload import record_from_fetch
from states_synthetic import linkem, quic_log, tcp_log, write_qlog

SCENARIO = """
name = "states-test"
description = "synthetic: clean vs reordered"
rounds = 10
[workloads]
object_size = ["1m"]
[[links]]
rate_mbit = 10
rtt_ms = 36
[[links]]
rate_mbit = 10
rtt_ms = 36
down = { reorder = { probability = 0.05, ahead_ms = 10.0 } }
"""


def make_experiment(d, with_logs=True):
    sc = Scenario.from_toml(SCENARIO)
    clean, reordered = sc.cells()
    with Store.open(d) as st:
        st.start_experiment(sc, environment_versions())
        for cell in (clean, reordered):
            bad = cell is reordered
            for rnd in range(sc.rounds):
                for pos, arm in enumerate(("h3", "h2")):
                    run_id = new_run_id()
                    rd = st.run_dir(run_id)
                    arts = {}
                    if with_logs:
                        if arm == "h3":
                            k = 4 + rnd % 3 if bad else 1
                            log = quic_log(
                                ["ApplicationLimited", "SlowStart", *(["Recovery", "CongestionAvoidance"] * k)],
                                batches=["reordering_threshold"] * k,
                                lost_packets=(10 + rnd) if bad else 3,
                            )
                            name = "h3-0.sqlog"
                        else:
                            log = tcp_log(
                                ["Open", *(["Disorder", "Open"] * (5 if bad else 0))],
                                total_retrans=2 if bad else 0,
                                dsack=2 if bad else 0,
                            )
                            name = "h2-0.tcp.sqlog"
                        write_qlog(rd / name, log)
                        (rd / "linkem.json").write_text(
                            json.dumps(linkem(drops=0 if bad else (3 if arm == "h3" else 0)))
                        )
                        arts = {
                            "qlog" if arm == "h3" else "tcp_log": f"runs/{run_id}/{name}",
                            "linkem": f"runs/{run_id}/linkem.json",
                        }
                    fetch = {"protocol_requested": arm, "protocol": arm, "ok": True, "plt_ms": 100.0}
                    st.record_run(
                        record_from_fetch(
                            fetch, run_id=run_id, cell_id=cell.id, round=rnd, position=pos, arm=arm, artifacts=arts
                        )
                    )
    return clean.id, reordered.id


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    d = tmp_path_factory.mktemp("states-exp")
    return (d, *make_experiment(d))


def _app():
    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        pass

    states_cmds.register(app)
    return app


def test_load_runs_by_cell_and_arm(experiment):
    d, clean, reordered = experiment
    assert len(load_runs(d)) == 40
    runs = load_runs(d, cell=reordered, arm="h3")
    assert len(runs) == 10 and {r.protocol for r in runs} == {"QUIC"}


def test_states_command_json_and_files(experiment, tmp_path):
    d, clean, reordered = experiment
    out = tmp_path / "st"
    r = CliRunner().invoke(_app(), ["states", str(d), "--cell", reordered, "--format", "json", "--out", str(out)])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    quic = next(m for m in doc["machines"] if m["protocol"] == "QUIC")
    ks = [4 + r % 3 for r in range(10)]
    assert quic["runs"] == 10
    assert sorted(v["Recovery"] for v in quic["entries_per_run"].values()) == sorted(ks)
    ca_rec = next(t for t in quic["transitions"] if t["src"] == "CongestionAvoidance" and t["dst"] == "Recovery")
    assert ca_rec["count"] == sum(ks) - 10
    assert {"kind": "NeverFollowedBy", "a": "Recovery", "b": "SlowStart", "support": 10} in quic["invariants"]
    assert sorted(row["spurious"] for row in quic["losses"]) == list(range(10, 20))
    for f in ("QUIC.dot", "TCP.dot", "QUIC-transitions.csv", "TCP-losses.csv", "cwnd.svg", "states.json"):
        assert (out / f).exists(), f


def test_states_command_text(experiment):
    d, _, _ = experiment
    r = CliRunner().invoke(_app(), ["states", str(d)])
    assert r.exit_code == 0, r.output
    assert "QUIC" in r.output and "Disorder" in r.output and "AlwaysFollowedBy" in r.output


def test_states_diff_explains_reordering(experiment):
    d, clean, reordered = experiment
    r = CliRunner().invoke(_app(), ["states", "diff", f"{d}:{clean}", f"{d}:{reordered}", "--format", "json"])
    assert r.exit_code == 0, r.output
    diffs = {x["protocol"]: {row["item"]: row for row in x["rows"]} for x in json.loads(r.output)["diffs"]}
    q = diffs["QUIC"]
    assert q["enter:Recovery"]["status"] == "more" and q["enter:Recovery"]["significant"]
    assert q["loss:spurious"]["status"] == "appears" and q["loss:spurious"]["mean_b"] == 14.5
    assert q["loss:spurious"]["significant"]
    assert q["Init->ApplicationLimited"]["status"] == "same"
    t = diffs["TCP"]
    assert t["Open->Disorder"]["status"] == "appears" and t["Open->Disorder"]["significant"]
    assert "enter:Recovery" not in t  # TCP never entered Recovery on either side


def test_states_diff_text_shows_status_beside_direction(experiment):
    """The table's status is the test's verdict; the direction column says what the data show
    (which side has an item, in how many runs) whether or not it is significant."""
    d, clean, reordered = experiment
    r = CliRunner().invoke(_app(), ["states", "diff", f"{d}:{clean}", f"{d}:{reordered}"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    assert "direction" in r.output and "only in B, 10 of 10 runs" in r.output and "(n.s.)" not in r.output
    assert "p (Holm)" in r.output
    r = CliRunner().invoke(
        _app(), ["states", "diff", f"{d}:{clean}", f"{d}:{reordered}", "--no-holm"], env={"COLUMNS": "200"}
    )
    assert r.exit_code == 0 and "p (Holm)" not in r.output and "without correction" in r.output


def test_bad_usage_is_an_error(experiment):
    d, _, _ = experiment
    r = CliRunner().invoke(_app(), ["states", "diff", str(d)])
    assert r.exit_code != 0
    r = CliRunner().invoke(_app(), ["states", str(d), "--cell", "no-such-cell"])
    assert r.exit_code != 0


def test_report_section(experiment):
    d, _, _ = experiment
    with Store.open(d, read_only=True) as st:
        s = states_section.section(st, None)
    assert s is not None and s.id == "states"
    for heading in (
        "QUIC state machine, server ours, arm h3",
        "TCP state machine",
        "false losses per cell",
        "What each impairment changes",
        "Congestion window over time",
    ):
        assert heading in s.html, heading
    assert "enter:Recovery" in s.html and "loss:spurious" in s.html


def test_report_section_absent_without_logs(tmp_path):
    make_experiment(tmp_path, with_logs=False)
    with Store.open(tmp_path, read_only=True) as st:
        assert states_section.section(st, None) is None
