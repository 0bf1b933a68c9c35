"""`longlook compare`: two synthetic experiments with known differences, matched by their
cells' parameters; the gate's exit status, JSON, JUnit and HTML; clear errors."""

import json
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from longlook.analyses.compare.change import Verdict, compare_experiments
from longlook.analyses.compare.experiments import load_side
from longlook.cli import app
from longlook.core.record import new_run_id
from longlook.core.store import Store
from longlook.errors import LonglookError
from longlook.kinds.pageload import Scenario, record_from_fetch
from testbed_helpers import LONGLOOK

SCENARIO = """
name = "compare-test"
rounds = 12
[workloads]
object_size = ["100k", "1m"]
[[links]]
rate_mbit = [10, 50]
rtt_ms = 36
[options]
max_cwnd_packets = {macw}
"""

runner = CliRunner()


def cli(*args) -> tuple[int, str]:
    """Exit status and output as `longlook` gives them (bad input: 2 with the message)."""
    res = runner.invoke(app, [str(a) for a in args])
    if isinstance(res.exception, LonglookError):
        return 2, res.output + str(res.exception)
    return res.exit_code, res.output


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    """BASE: MACW 430, seed 1 (shared by the tests that only read it)."""
    d = tmp_path_factory.mktemp("base") / "a"
    make_experiment(d, seed=1)
    return d


def make_experiment(
    directory: Path,
    *,
    seed: int,
    h3_factor=1.0,
    macw: int = 430,
    toml: str = SCENARIO,
    noise: float = 0.03,
    fallbacks: int = 0,
    versions: dict | None = None,
    lost: int = 0,
) -> Scenario:
    """Page loads whose PLT depends on the cell, times `h3_factor` for QUIC (a callable of
    the cell, or a number), with `noise` relative spread. `lost`: QUIC fails in that many of
    the last rounds of the 1 MB cells (no page load, status failed)."""
    sc = Scenario.from_toml(toml.format(macw=macw))
    rng = np.random.default_rng(seed)
    with Store.open(directory) as st:
        st.start_experiment(sc, versions or {})
        for cell in sc.cells():
            base = 100 + cell.workload.object_size * 8 / (cell.link.rate_mbit * 1000)
            factor = h3_factor(cell) if callable(h3_factor) else h3_factor
            for rnd in range(sc.rounds):
                for pos, arm in enumerate(sc.round_order(cell, rnd)):
                    plt = base * (factor if arm.label == "h3" else 1.0) * rng.normal(1, noise)
                    used = "h2" if (arm.label == "h3" and rnd < fallbacks) else arm.protocol
                    f = {
                        "protocol_requested": arm.protocol,
                        "protocol": used,
                        "ok": True,
                        "plt_ms": plt,
                        "handshake_ms": 36 * rng.normal(1, 0.01),
                        "ttfb_ms": 80 * rng.normal(1, 0.01),
                        "objects": [],
                    }
                    if arm.label == "h3" and cell.workload.object_size == 1_000_000 and rnd >= sc.rounds - lost:
                        f = {"protocol_requested": arm.protocol, "ok": False, "error": "stalled", "objects": []}
                    st.record_run(
                        record_from_fetch(
                            f, run_id=new_run_id(), cell_id=cell.id, round=rnd, position=pos, arm=arm.label
                        )
                    )
        st.finish_experiment()
    return sc


def test_same_build_is_no_significant_change_everywhere(base, tmp_path):
    make_experiment(tmp_path / "b", seed=2)
    res = runner.invoke(
        app,
        [
            "compare",
            str(base),
            str(tmp_path / "b"),
            "--json",
            str(tmp_path / "c.json"),
            "--junit",
            str(tmp_path / "c.xml"),
            "--html",
            str(tmp_path / "c.html"),
        ],
    )
    assert res.exit_code == 0, res.output
    out = json.loads((tmp_path / "c.json").read_text())
    assert len(out["changes"]) == 4 * 2 * 3  # cells x arms x metrics
    assert {c["verdict"] for c in out["changes"]} == {"no significant change"}
    assert not out["regressed"] and out["settings"]["holm"]
    suite = ET.parse(tmp_path / "c.xml").getroot()
    assert suite.get("tests") == "24" and suite.get("failures") == "0"
    assert not suite.findall(".//failure")
    html = (tmp_path / "c.html").read_text()
    assert "passed" in html and 'id="changes"' in html and "<style>" in html


def test_ten_percent_slower_quic_is_a_regression_and_fails_the_gate(base, tmp_path):
    # the candidate's QUIC is 10% slower on the 1 MB object, unchanged on 100 kB
    make_experiment(tmp_path / "b", seed=2, h3_factor=lambda c: 1.10 if c.workload.object_size == 1_000_000 else 1.0)
    res = runner.invoke(
        app,
        [
            "compare",
            str(base),
            str(tmp_path / "b"),
            "--json",
            str(tmp_path / "c.json"),
            "--junit",
            str(tmp_path / "c.xml"),
        ],
    )
    assert res.exit_code == 1, res.output
    assert "regression" in res.output
    changes = json.loads((tmp_path / "c.json").read_text())["changes"]
    regressed = {(c["cell_id"], c["arm"], c["metric"]) for c in changes if c["verdict"] == "regression"}
    assert {(cid, arm, m) for cid, arm, m in regressed} == {
        (c["cell_id"], "h3", "plt_ms")
        for c in changes
        if "wl=1x1m" in c["cell_id"] and c["arm"] == "h3" and c["metric"] == "plt_ms"
    }
    for c in changes:
        if (c["cell_id"], c["arm"], c["metric"]) in regressed:
            assert 7 < c["change_pct"] < 13 and c["ci_low"] < c["change_pct"] < c["ci_high"]
            assert c["p_adjusted"] < 0.01
    failures = ET.parse(tmp_path / "c.xml").getroot().findall(".//testcase[failure]")
    assert len(failures) == 2 and all(f.get("name") == "h3 plt_ms" for f in failures)


def test_a_faster_candidate_is_an_improvement_and_passes(base, tmp_path):
    make_experiment(tmp_path / "b", seed=2, h3_factor=0.85)
    result = compare_experiments(load_side(base), load_side(tmp_path / "b"), metrics=["plt_ms"])
    assert {c.verdict for c in result.changes if c.arm == "h3"} == {Verdict.IMPROVEMENT}
    assert {c.verdict for c in result.changes if c.arm == "h2"} == {Verdict.NO_CHANGE}
    assert result.exit_status() == 0


def test_a_significant_change_below_the_threshold_does_not_count(tmp_path):
    make_experiment(tmp_path / "a", seed=1, noise=0.002)
    make_experiment(tmp_path / "b", seed=2, noise=0.002, h3_factor=1.015)
    a, b = load_side(tmp_path / "a"), load_side(tmp_path / "b")
    small = compare_experiments(a, b, metrics=["plt_ms"])
    h3 = [c for c in small.changes if c.arm == "h3"]
    assert all(c.p_adjusted < 0.01 and c.verdict is Verdict.NO_CHANGE for c in h3)
    assert "threshold" in h3[0].note
    strict = compare_experiments(a, b, metrics=["plt_ms"], threshold_pct=1.0, test="mannwhitney")
    assert {c.verdict for c in strict.changes if c.arm == "h3"} == {Verdict.REGRESSION}


def test_only_counted_runs_enter(base, tmp_path):
    make_experiment(tmp_path / "b", seed=2, fallbacks=3)  # 3 QUIC runs per cell fell back to TCP
    result = compare_experiments(load_side(base), load_side(tmp_path / "b"), metrics=["plt_ms"])
    plt = [c for c in result.changes if c.metric == "plt_ms"]
    assert {c.n_cand for c in plt if c.arm == "h3"} == {9}
    assert {c.n_base for c in plt} == {12}
    # the lost rounds have their own row per cell x arm: 9/12 against 12/12 is no significant change
    done = [c for c in result.changes if c.metric == "completion"]
    assert {(c.arm, c.n_cand, c.mean_cand, c.verdict) for c in done} == {("h3", 12, 0.75, Verdict.NO_CHANGE)}
    assert len(done) == 4 and "CAND 9/12 vs BASE 12/12" in done[0].note


def test_fewer_completed_rounds_are_judged_in_the_gate_s_holm_family(base, tmp_path):
    """CAND's QUIC fails 5 of 12 rounds in the two 1 MB cells. Fisher's p of 7/12 against 12/12
    is 0.037: the gate used to call that a regression on its own at 0.05, outside the error
    budget; in the one Holm family (24 metric tests and 2 completion tests, at alpha 0.01)
    it is no significant change, and the gate passes. 10 of 12 lost is a regression."""
    make_experiment(tmp_path / "b", seed=2, lost=5)
    code, out = cli("compare", base, tmp_path / "b", "--json", tmp_path / "c.json", "--junit", tmp_path / "c.xml")
    assert code == 0, out
    done = [c for c in json.loads((tmp_path / "c.json").read_text())["changes"] if c["metric"] == "completion"]
    assert len(done) == 2 and {(c["arm"], c["verdict"]) for c in done} == {("h3", "no significant change")}
    assert all(c["p_value"] == pytest.approx(0.0373, abs=1e-4) and c["p_adjusted"] > 0.5 for c in done)
    assert "CAND 7/12 vs BASE 12/12" in done[0]["note"]

    make_experiment(tmp_path / "d", seed=2, lost=10)
    code, out = cli(
        "compare",
        base,
        tmp_path / "d",
        "--json",
        tmp_path / "d.json",
        "--junit",
        tmp_path / "d.xml",
        "--html",
        tmp_path / "d.html",
    )
    assert code == 1, out
    assert "fewer runs completed: CAND 2/12 vs BASE 12/12" in " ".join(out.split())
    assert "fewer runs completed" in (tmp_path / "d.html").read_text()
    changes = json.loads((tmp_path / "d.json").read_text())["changes"]
    regressed = [c for c in changes if c["verdict"] == "regression"]
    assert {(c["arm"], c["metric"]) for c in regressed} == {("h3", "completion")} and len(regressed) == 2
    assert all(c["note"].startswith("fewer runs completed: CAND 2/12 vs BASE 12/12") for c in regressed)
    # the survivors' page loads are not judged: their rows say survivorship
    assert {
        c["verdict"] for c in changes if c["arm"] == "h3" and "wl=1x1m" in c["cell_id"] and c["metric"] != "completion"
    } == {"inconclusive: survivorship"}
    failures = ET.parse(tmp_path / "d.xml").getroot().findall(".//testcase[failure]")
    assert {f.get("name") for f in failures} == {"h3 completion"}


def test_macw_change_needs_vary_and_then_is_compared(base, tmp_path):
    make_experiment(tmp_path / "b", seed=2, macw=107, h3_factor=1.3)
    code, out = cli("compare", base, tmp_path / "b")
    assert code == 2
    assert "different scenarios: max_cwnd_packets: 430 vs 107" in out and "--vary max_cwnd_packets" in out
    code, out = cli("compare", base, tmp_path / "b", "--vary", "max_cwnd_packets", "--metric", "plt_ms")
    assert code == 1, out
    assert "changed: max_cwnd_packets 430 -> 107" in out


def test_cells_match_by_parameters_not_by_id_text(base, tmp_path):
    # the same grid written another way (sizes in bytes, links in the other order, a named
    # profile), its cells renamed as another longlook version might have named them
    other = SCENARIO.replace('["100k", "1m"]', "[1000000, 100000]").replace(
        "rate_mbit = [10, 50]", 'rate_mbit = [50, 10]\nname = "bottleneck"'
    )
    make_experiment(tmp_path / "b", seed=2, toml=other)
    with Store.open(tmp_path / "b") as st:
        for table in ("cells", "runs", "round_orders"):
            st._con.execute(f"UPDATE {table} SET cell_id = 'old-' || md5(cell_id)")
    a, b = load_side(base), load_side(tmp_path / "b")
    assert not set(a.cells["cell_id"]) & set(b.cells["cell_id"])
    result = compare_experiments(a, b, metrics=["plt_ms"])
    assert len(result.changes) == 8
    for c in result.changes:
        da = a.cells.set_index("cell_id").loc[c.cell_id, "dims"]
        db = b.cells.set_index("cell_id").loc[c.cand_cell_id, "dims"]
        assert (da["rate_mbit"], da["object_size"]) == (db["rate_mbit"], db["object_size"])
    assert {c.verdict for c in result.changes} == {Verdict.NO_CHANGE}
    assert {c.n_cand for c in result.changes} == {12}


def test_different_grids_and_bad_input_are_one_clear_error(base, tmp_path):
    make_experiment(tmp_path / "b", seed=2, toml=SCENARIO.replace("rtt_ms = 36", "rtt_ms = 100"))
    with pytest.raises(LonglookError, match="different scenarios: .*rtt_ms: 36.0 vs 100.0"):
        compare_experiments(load_side(base), load_side(tmp_path / "b"))
    for args, says in (
        ((tmp_path / "nothing",), "not an experiment directory"),
        ((), "exactly two"),
        ((base, "--metric", "nope"), "plt_ms"),
        ((base, "--vary", "nope"), "--vary nope"),
    ):
        code, out = cli("compare", base, *args)
        assert code == 2 and says in out, out
    # the real command: bad input is exit status 2 with the message, no traceback
    proc = subprocess.run([*LONGLOOK, "compare", str(base), str(tmp_path / "b")], capture_output=True, text=True)
    assert proc.returncode == 2 and "different scenarios" in proc.stderr and "Traceback" not in proc.stderr


def test_a_path_made_differently_is_said_beside_the_verdicts(base, tmp_path):
    # BASE recorded no datapath (it ran before there were two: NFQUEUE); CAND ran on AF_PACKET
    make_experiment(tmp_path / "b", seed=2, versions={"testbed": {"datapath": "afpacket"}})
    code, out = cli("compare", base, tmp_path / "b", "--json", tmp_path / "c.json", "--html", tmp_path / "c.html")
    assert code == 0
    assert "the path was made differently: datapath nfqueue -> afpacket" in " ".join(out.split())
    doc = json.loads((tmp_path / "c.json").read_text())
    assert doc["path_differs"] == [{"part": "datapath", "base": "nfqueue", "cand": "afpacket"}]
    assert "datapath nfqueue -&gt; afpacket" in (tmp_path / "c.html").read_text()
    # the same path: nothing said
    make_experiment(tmp_path / "d", seed=3, versions={"testbed": {"datapath": "nfqueue"}})
    code, out = cli("compare", base, tmp_path / "d", "--json", tmp_path / "d.json")
    assert code == 0 and "made differently" not in out
    assert json.loads((tmp_path / "d.json").read_text())["path_differs"] == []


def test_path_setup_differences_name_each_part_and_skip_what_one_side_did_not_record():
    from longlook.analyses.compare.path_setup import path_setup_differences

    a = {
        "kernel": "6.18.1",
        "linkem": "linkem 0.1.0",
        "testbed": {"datapath": "afpacket", "sysctls": {"net.ipv4.tcp_no_metrics_save": 1}},
    }
    assert path_setup_differences(a, a) == []
    b = {"kernel": "6.18.2", "testbed": {"datapath": "afpacket", "sysctls": {"net.ipv4.tcp_no_metrics_save": 0}}}
    assert path_setup_differences(a, b) == [
        {"part": "kernel", "base": "6.18.1", "cand": "6.18.2"},
        {"part": "sysctl net.ipv4.tcp_no_metrics_save", "base": 1, "cand": 0},
    ]  # linkem: not in b
    assert path_setup_differences({}, {"testbed": {"datapath": "nfqueue"}}) == []
