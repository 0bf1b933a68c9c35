"""Results store: runs are durable and atomic, resume finds them, frames carry the fields."""

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from longlook.errors import LonglookError
from longlook.kinds.pageload import Scenario
from longlook.core.record import new_run_id
from longlook.core.store import Store, environment_versions
from longlook.kinds.pageload import fetch_status as classify_fetch, record_from_fetch

SCENARIO = """
name = "store-test"
rounds = 3
workloads = ["1x10k", "2x5k"]
[[links]]
rate_mbit = 10
rtt_ms = 36
"""


def fetch(proto="h3", negotiated=None, ok=True, plt=123.4, n_objects=2):
    negotiated = proto if negotiated is None else negotiated
    return {
        "run_id": "x",
        "url": "https://198.18.2.2:4433/page/2x5k.html",
        "mode": "page",
        "protocol_requested": proto,
        "protocol": negotiated,
        "ok": ok,
        "error": None if ok else "boom",
        "started_unix_ms": 1_763_900_000_000,
        "plt_ms": plt,
        "handshake_ms": 36.5,
        "ttfb_ms": 80.0,
        "bytes": 10_000,
        "objects": [
            {
                "path": f"/obj/5k/{i}.jpg",
                "status": 200,
                "bytes": 5000,
                "start_ms": 40.0 + i,
                "first_byte_ms": 78.0 + i,
                "end_ms": 100.0 + i,
            }
            for i in range(n_objects)
        ],
        "zero_rtt": {"attempted": True, "accepted": True},
        "local_addr": "198.18.1.2:51000",
        "goodput": [[10.0, 5000], [20.0, 10000]],
    }


@pytest.fixture
def scenario():
    return Scenario.from_toml(SCENARIO)


@pytest.fixture
def store(tmp_path, scenario):
    s = Store.open(tmp_path)
    s.start_experiment(scenario, environment_versions(endpoint="endpoint 0.1.0"))
    yield s
    s.close()


def test_classify_fetch():
    assert classify_fetch(fetch(), "h3") == "ok"
    assert classify_fetch(fetch(negotiated="h2"), "h3") == "protocol_mismatch"
    assert classify_fetch(fetch(ok=False), "h3") == "failed"
    assert classify_fetch({}, "h3") == "failed"
    assert classify_fetch({}, "h3", timed_out=True) == "timeout"


def test_runner_status_is_kept_but_never_ok_over_the_wrong_protocol():
    kw = dict(run_id="r", cell_id="c", round=0, position=0, arm="h3")
    assert record_from_fetch({}, status="timeout", error="no result within 35 s", **kw).error == "no result within 35 s"
    assert record_from_fetch(fetch(negotiated="h2"), status="ok", **kw).status == "protocol_mismatch"
    assert record_from_fetch(fetch(), status="failed", **kw).status == "failed"
    # an arm label that is not a protocol name: the protocol comes from the fetch or the caller
    rec = record_from_fetch(
        {"protocol": "h3", "ok": True, "plt_ms": 1.0}, protocol_requested="h3", **{**kw, "arm": "h3-0rtt"}
    )
    assert (rec.arm, rec.protocol_requested, rec.status) == ("h3-0rtt", "h3", "ok")


def test_record_and_read_back(store, scenario, tmp_path):
    cell = scenario.cells()[1]
    rec = record_from_fetch(
        fetch(),
        run_id=new_run_id(),
        cell_id=cell.id,
        round=0,
        position=1,
        arm="h3",
        duration_s=1.5,
        options={"protocol": "h3", "quic_cc": "cubic"},
        artifacts={"fetch": "runs/x/fetch.json"},
    )
    store.record_run(rec)
    runs = store.runs_frame()
    assert len(runs) == 1
    r = runs.iloc[0]
    assert (r.cell_id, r["round"], r.position, r.arm, r.status) == (cell.id, 0, 1, "h3", "ok")
    assert (r.protocol_requested, r.protocol_negotiated) == ("h3", "h3")
    assert (r.plt_ms, r.handshake_ms, r.ttfb_ms, r.bytes) == (123.4, 36.5, 80.0, 10_000)
    assert bool(r.zero_rtt_attempted) and bool(r.zero_rtt_accepted)
    assert r.artifacts == {"fetch": "runs/x/fetch.json"} and r.options["quic_cc"] == "cubic"
    assert r.goodput == [[10.0, 5000], [20.0, 10000]]
    assert str(r.started_at).startswith("2025-11-23")
    objs = store.table("objects", "ORDER BY run_id, start_ms")
    assert list(objs.path) == ["/obj/5k/0.jpg", "/obj/5k/1.jpg"]
    assert list(objs.first_byte_ms) == [78.0, 79.0]

    cells = store.cells_frame()
    assert list(cells.cell_id) == [c.id for c in scenario.cells()]
    assert cells.iloc[1].dims["object_count"] == 2
    assert cells.iloc[0].link_profile["delay_ms"] == 18.0
    exp = store.experiment()
    assert exp["scenario_name"] == "store-test" and exp["scenario_toml"] == SCENARIO
    assert exp["versions"]["endpoint"] == "endpoint 0.1.0" and "kernel" in exp["versions"]
    assert store.run_dir(rec.run_id) == tmp_path / "runs" / rec.run_id


def test_resume_sees_completed_runs_and_attempts(tmp_path, scenario):
    cell = scenario.cells()[0]
    with Store.open(tmp_path) as s:
        exp_id = s.start_experiment(scenario)
        s.record_run(record_from_fetch(fetch("h3"), run_id="r1", cell_id=cell.id, round=0, position=0, arm="h3"))
        s.record_run(
            record_from_fetch(fetch("h2", ok=False), run_id="r2", cell_id=cell.id, round=0, position=1, arm="h2")
        )
        s.record_run(
            record_from_fetch(fetch("h2"), run_id="r3", cell_id=cell.id, round=0, position=1, arm="h2", attempt=2)
        )
        s.record_run(
            record_from_fetch(fetch("h3", negotiated="h2"), run_id="r4", cell_id=cell.id, round=1, position=0, arm="h3")
        )
        s.record_round_order(cell.id, 0, ["h3", "h2"])
    with Store.open(tmp_path) as s:  # a new process after Ctrl-C
        assert s.start_experiment(scenario) == exp_id
        assert s.completed_runs(cell.id) == {(0, "h3"), (0, "h2")}
        assert s.attempts(cell.id, 0, "h2") == 2 and s.attempts(cell.id, 1, "h3") == 1
        assert s.round_orders_frame().iloc[0].arm_order == ["h3", "h2"]
        assert list(s.runs_frame().status) == ["ok", "failed", "ok", "protocol_mismatch"]


def test_resuming_with_other_versions_is_refused_unless_allowed(tmp_path, scenario):
    with Store.open(tmp_path) as s:
        s.start_experiment(scenario, {"endpoint": "0.1.0", "kernel": "6.1"})
    with Store.open(tmp_path) as s:
        s.start_experiment(scenario, {"endpoint": "0.1.0", "kernel": "6.1"})  # same: fine
        with pytest.raises(LonglookError, match=r"versions changed .*endpoint: 0.1.0 -> 0.2.0") as e:
            s.start_experiment(scenario, {"endpoint": "0.2.0", "kernel": "6.1"})
        assert "--allow-version-change" in e.value.hint  # the hint names a flag that exists
        s.start_experiment(scenario, {"endpoint": "0.2.0", "kernel": "6.1"}, allow_version_change=True)
        s.mark_running()  # a resume is recorded when runs are added
        v = s.experiment()["versions"]
    assert v["endpoint"] == "0.1.0"  # what the experiment started with
    # the resume with the same versions ran nothing, so only the one that went on is recorded
    assert len(v["resumed"]) == 1 and v["resumed"][0]["changed"] == {"endpoint": {"was": "0.1.0", "now": "0.2.0"}}


def test_a_session_at_another_commit_resumes_and_records_its_commit(tmp_path, scenario):
    with Store.open(tmp_path) as s:
        s.start_experiment(scenario, {"endpoint": "0.1.0", "commit": "aaa"})
    with Store.open(tmp_path) as s:
        s.start_experiment(scenario, {"endpoint": "0.1.0", "commit": "bbb+dirty"})  # not refused
        s.mark_running()
        v = s.experiment()["versions"]
    assert v["commit"] == "aaa" and v["resumed"][0]["commit"] == "bbb+dirty"
    assert "changed" not in v["resumed"][0]


def test_a_resume_that_runs_nothing_records_nothing(tmp_path, scenario):
    # a finished grid opened again with newer software: no run went on with it, so the
    # experiment must not say it did (and its archive stays byte for byte what it was)
    with Store.open(tmp_path) as s:
        s.start_experiment(scenario, {"endpoint": "0.1.0", "commit": "aaa"})
        s.finish_experiment()
    with Store.open(tmp_path) as s:
        s.start_experiment(scenario, {"endpoint": "0.2.0", "commit": "bbb"}, allow_version_change=True)
    with Store.open(tmp_path, read_only=True) as s:
        exp = s.experiment()
    assert "resumed" not in exp["versions"] and exp["ended_at"] is not None


def test_a_different_scenario_is_refused(tmp_path, scenario):
    with Store.open(tmp_path) as s:
        s.start_experiment(scenario)
    other = Scenario.from_toml(SCENARIO.replace("rounds = 3", "rounds = 4"))
    with Store.open(tmp_path) as s, pytest.raises(LonglookError, match="another scenario"):
        s.start_experiment(other)


def test_read_only_needs_results(tmp_path):
    with pytest.raises(LonglookError, match="no results here"):
        Store.open(tmp_path / "nothing", read_only=True)


class _FailOnObjects:
    """A connection that is interrupted while writing a run's objects."""

    def __init__(self, con):
        self._con = con

    def execute(self, sql, params=None):
        if "INSERT INTO objects" in sql:
            raise KeyboardInterrupt
        return self._con.execute(sql, params)

    def __getattr__(self, name):
        return getattr(self._con, name)


def test_an_interrupted_run_leaves_nothing(store, scenario):
    cell = scenario.cells()[0]
    store.record_run(record_from_fetch(fetch(), run_id="kept", cell_id=cell.id, round=0, position=0, arm="h3"))
    real = store._con
    store._con = _FailOnObjects(real)
    with pytest.raises(KeyboardInterrupt):
        store.record_run(record_from_fetch(fetch(), run_id="torn", cell_id=cell.id, round=0, position=1, arm="h2"))
    store._con = real
    assert list(store.runs_frame().run_id) == ["kept"]
    assert set(store.table("objects", "ORDER BY run_id, start_ms").run_id) == {"kept"}
    # and the store still works afterwards
    store.record_run(record_from_fetch(fetch("h2"), run_id="next", cell_id=cell.id, round=0, position=1, arm="h2"))
    assert list(store.runs_frame().run_id) == ["kept", "next"]


def test_a_killed_process_keeps_every_committed_run(tmp_path, scenario):
    """SIGKILL right after record_run returns: the run survives (durable on return)."""
    with Store.open(tmp_path) as s:
        s.start_experiment(scenario)
    cell = scenario.cells()[0]
    code = textwrap.dedent(f"""
        import json, sys, time
        from longlook.core.store import Store
        from longlook.kinds.pageload import record_from_fetch
        s = Store.open({str(tmp_path)!r})
        f = json.loads(sys.argv[1])
        for i in range(3):
            s.record_run(record_from_fetch(f, run_id=f"r{{i}}", cell_id={cell.id!r}, round=i, position=0, arm="h3"))
        print("recorded", flush=True)
        time.sleep(60)
    """)
    p = subprocess.Popen([sys.executable, "-c", code, json.dumps(fetch())], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "recorded"
    finally:
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
    with Store.open(tmp_path, read_only=True) as s:
        assert list(s.runs_frame().run_id) == ["r0", "r1", "r2"]
        assert len(s.table("objects", "ORDER BY run_id, start_ms")) == 6


def test_resume_accepts_an_edited_comment_and_names_a_real_difference(tmp_path):
    with Store.open(tmp_path) as s:
        s.start_experiment(Scenario.from_toml(SCENARIO))
    commented = SCENARIO.replace("rounds = 3", "rounds = 3   # a new comment")
    with Store.open(tmp_path) as s:
        s.start_experiment(Scenario.from_toml(commented))  # same scenario once parsed
    changed = SCENARIO.replace("rate_mbit = 10", "rate_mbit = 20")
    with Store.open(tmp_path) as s, pytest.raises(LonglookError) as e:
        s.start_experiment(Scenario.from_toml(changed))
    assert "links[0].rate_mbit: 10.0 -> 20.0" in str(e.value), str(e.value)


def test_a_round_s_order_is_committed_with_its_first_run(tmp_path, scenario):
    """One commit a run, not one more per round: the order waits for the round's first run
    (an order matters only beside its runs); one left at close is written then."""
    cell = scenario.cells()[0]
    with Store.open(tmp_path) as s:
        s.start_experiment(scenario)
        s.record_round_order(cell.id, 0, ["h2", "h3"])
        assert s.round_orders_frame().empty
        s.record_run(record_from_fetch(fetch("h2"), run_id="r1", cell_id=cell.id, round=0, position=0, arm="h2"))
        assert list(s.round_orders_frame().arm_order) == [["h2", "h3"]]
        s.record_round_order(cell.id, 1, ["h3", "h2"])
    with Store.open(tmp_path, read_only=True) as s:
        assert [list(x) for x in s.round_orders_frame().arm_order] == [["h2", "h3"], ["h3", "h2"]]


def test_resuming_on_another_datapath_is_refused_and_says_how_to_resume(tmp_path, scenario):
    # started before the datapath was recorded (it ran on NFQUEUE, the only one then)
    with Store.open(tmp_path) as s:
        s.start_experiment(scenario, {"endpoint": "0.1.0", "testbed": {"sysctls": {"a": 1}}})
    with Store.open(tmp_path) as s:
        # the same path, recorded now: resumes
        s.start_experiment(scenario, {"endpoint": "0.1.0", "testbed": {"sysctls": {"a": 1}, "datapath": "nfqueue"}})
        with pytest.raises(
            LonglookError, match="versions changed .*'datapath': 'nfqueue'.*'datapath': 'afpacket'"
        ) as e:
            s.start_experiment(
                scenario, {"endpoint": "0.1.0", "testbed": {"sysctls": {"a": 1}, "datapath": "afpacket"}}
            )
    assert "LONGLOOK_DATAPATH=nfqueue resumes it" in e.value.hint


def test_the_commands_that_resume_can_allow_a_version_change():
    from typer.testing import CliRunner

    from longlook.cli import app

    for command in ("run", "reproduce"):
        out = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "200"}).output
        assert "--allow-version-change" in out, out


ARMS = """
[[arms]]
label = "a"
protocol = "h3"
[[arms]]
label = "b"
protocol = "h2"
"""
GROWN = ARMS + '[[arms]]\nlabel = "c"\nprotocol = "h3"\nserver = "quic-go"\n'


def test_a_scenario_that_only_gained_arms_resumes_and_records_them(tmp_path):
    # a matrix given one more stack: the old arms' runs stay, the new arms run
    with Store.open(tmp_path) as s:
        s.start_experiment(Scenario.from_toml(SCENARIO + ARMS))
    grown = Scenario.from_toml(
        SCENARIO.replace('name = "store-test"', 'name = "store-test"\ndescription = "3 arms"') + GROWN
    )
    with Store.open(tmp_path) as s:
        s.start_experiment(grown)
        s.mark_running()  # the new arms' runs are about to be added
    with Store.open(tmp_path, read_only=True) as s:
        assert [a.label for a in s.scenario().arms] == ["a", "b", "c"]  # the grown scenario from now on
        versions = s.experiment()["versions"]
    assert versions["resumed"][-1]["arms_added"] == ["c"]


@pytest.mark.parametrize(
    "change",
    [
        ARMS.replace('protocol = "h2"', 'protocol = "h3"') + '[[arms]]\nlabel = "c"\nprotocol = "h3"\n',  # b changed
        '[[arms]]\nlabel = "a"\nprotocol = "h3"\n[[arms]]\nlabel = "c"\nprotocol = "h3"\n',  # b gone
    ],
)
def test_arms_changed_or_gone_are_another_scenario(tmp_path, change):
    with Store.open(tmp_path) as s:
        s.start_experiment(Scenario.from_toml(SCENARIO + ARMS))
    with Store.open(tmp_path) as s, pytest.raises(LonglookError, match="another scenario"):
        s.start_experiment(Scenario.from_toml(SCENARIO + change))
    grown_and_more = Scenario.from_toml(SCENARIO.replace("rounds = 3", "rounds = 4") + GROWN)
    with Store.open(tmp_path) as s, pytest.raises(LonglookError, match="another scenario"):
        s.start_experiment(grown_and_more)  # arms added, and the rounds changed


def test_failed_runs_set_aside_run_again_and_are_kept(tmp_path, scenario):
    from typer.testing import CliRunner

    from longlook.cli import app

    cell = scenario.cells()[0]
    with Store.open(tmp_path) as s:
        s.start_experiment(scenario)
        for i, (arm, ok) in enumerate([("quiche_ours", False), ("quiche_ours", False), ("quiche_ours", True)]):
            rec = record_from_fetch(fetch("h3", ok=ok), run_id=f"q{i}", cell_id=cell.id, round=i, position=0, arm=arm)
            s.record_run(rec)
        s.record_run(
            record_from_fetch(fetch("h3", ok=False), run_id="o1", cell_id=cell.id, round=0, position=1, arm="ours")
        )
        assert s.settled(cell.id, retries=0) == {
            (0, "quiche_ours"),
            (1, "quiche_ours"),
            (2, "quiche_ours"),
            (0, "ours"),
        }
    cli = CliRunner()
    # an arm no run has is one clear error naming the arms there are
    r = cli.invoke(app, ["again", str(tmp_path), "--arm", "kwik_*", "--because", "client fixed"])
    e = r.exception  # (longlook's main prints it as one line with its hint)
    assert isinstance(e, LonglookError) and "no arm matches 'kwik_*'" in str(e) and "quiche_ours" in e.hint, r
    r = cli.invoke(app, ["again", str(tmp_path), "--arm", "quiche_*", "--because", "StreamLimit: client fixed"])
    assert r.exit_code == 0 and "2 failed runs set aside" in r.output, r.output
    with Store.open(tmp_path) as s:
        # their slots run again; the run that completed and the other arm's failure stay
        assert s.settled(cell.id, retries=0) == {(2, "quiche_ours"), (0, "ours")}
        assert sorted(s.runs_frame().run_id) == ["o1", "q2"]
        aside = s.set_aside_frame()
        assert sorted(aside.run_id) == ["q0", "q1"] and set(aside.set_aside_because) == {"StreamLimit: client fixed"}
        assert (aside.status == "failed").all() and aside.set_aside_at.notna().all()
    with Store.open(tmp_path, read_only=True) as s:  # the table is no part of what a reader needs
        assert len(s.runs_frame()) == 2
