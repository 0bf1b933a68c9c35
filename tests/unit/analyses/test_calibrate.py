"""Calibration maths on synthetic fetch documents (no testbed): the Fig. 2 time split, the
ratio of mean PLTs with its bootstrap interval, the search objective and initial design,
the scenarios built in code, and bad input."""

from __future__ import annotations

import math
import tomllib

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from longlook.analyses.calibrate import phase_means, ratio_of_means, time_split
from longlook.analyses.calibrate.fig2 import Fig2, write
from longlook.analyses.calibrate.reference import cell_key, load_reference
from longlook.analyses.calibrate.scenarios import fig2_scenario, trial_scenario
from longlook.analyses.calibrate.search import initial_design, objective
from longlook.analyses.calibrate.toml_text import dumps
from longlook.cli import app
from longlook.errors import LonglookError


def fetch(hs: float, ttfb: float, plt: float, arm: str = "a") -> dict:
    return {"protocol": "h3", "ok": True, "handshake_ms": hs, "ttfb_ms": ttfb, "plt_ms": plt, "arm": arm}


def test_split_of_one_fetch_adds_up_to_the_plt():
    s = time_split(fetch(36.5, 80.0, 1800.0))
    assert s == {"handshake_ms": 36.5, "wait_ms": 43.5, "receive_ms": 1720.0, "plt_ms": 1800.0}
    assert s["handshake_ms"] + s["wait_ms"] + s["receive_ms"] == s["plt_ms"]


def test_split_refuses_a_failed_fetch_with_one_clear_error():
    with pytest.raises(LonglookError, match="cannot be split"):
        time_split({"ok": False, "plt_ms": None, "handshake_ms": None, "ttfb_ms": None})


def test_phase_means_per_arm_in_first_seen_order():
    docs = [
        fetch(36, 74, 2000, "macw107"),
        fetch(38, 76, 2200, "macw107"),
        fetch(36, 72, 1000, "macw430"),
        fetch(36, 72, 1100, "macw430"),
        fetch(36, 72, 1200, "macw430"),
    ]
    m = phase_means(docs).set_index("arm")
    assert list(m.index) == ["macw107", "macw430"]
    assert m.at["macw107", "n"] == 2 and m.at["macw430", "n"] == 3
    assert m.at["macw107", "handshake_ms"] == 37 and m.at["macw107", "wait_ms"] == 38
    assert m.at["macw107", "receive_ms"] == pytest.approx(2025)
    for arm in m.index:  # the stacked bar is as tall as the mean PLT
        assert m.loc[arm, ["handshake_ms", "wait_ms", "receive_ms"]].sum() == pytest.approx(m.at[arm, "plt_ms"])
    assert m.at["macw430", "plt_sd"] == pytest.approx(100)


def test_ratio_of_means_and_its_interval_hold_the_truth():
    rng = np.random.default_rng(3)
    slow, fast = rng.normal(2000, 40, 10), rng.normal(1000, 20, 10)
    r = ratio_of_means(slow, fast)
    assert r.value == pytest.approx(np.mean(slow) / np.mean(fast))
    assert r.low < r.value < r.high and r.low > 1.8 and r.high < 2.2
    assert r.n_a == 10 and r.method == "Fieller"
    assert "x [" in r.text()


def test_ratio_of_one_value_per_side_has_no_interval():
    r = ratio_of_means([2.0], [1.0])
    assert r.value == 2.0 and math.isnan(r.low) and "no interval" in r.text()
    with pytest.raises(LonglookError):
        ratio_of_means([], [1.0])


def test_fig2_writes_json_and_svg(tmp_path):
    rows = [
        {
            "macw": 107,
            "n": 3,
            "handshake_ms": 37.0,
            "wait_ms": 38.0,
            "receive_ms": 2000.0,
            "plt_ms": 2075.0,
            "plt_sd": 30.0,
        },
        {
            "macw": 430,
            "n": 3,
            "handshake_ms": 36.0,
            "wait_ms": 37.0,
            "receive_ms": 1000.0,
            "plt_ms": 1073.0,
            "plt_sd": 20.0,
        },
    ]
    res = Fig2(
        [107, 430],
        rows,
        ratio_of_means([2075, 2050, 2100], [1073, 1050, 1090]),
        1e-5,
        params={"size": "10m", "rate_mbit": 100},
    )
    svg, js = write(res, tmp_path)
    assert svg.read_text().lstrip().startswith("<?xml") and "receive" in svg.read_text()
    doc = pd.read_json(js, typ="series")
    assert doc["paper_ratio"] == 2.0 and doc["plt_ratio"]["value"] == pytest.approx(res.ratio.value)
    assert "PLT ratio MACW 107 / 430" in res.table()


def test_objective_is_symmetric_and_needs_every_cell():
    ref = {"c1": np.array([1000.0, 1000.0]), "c2": np.array([500.0])}
    assert objective({"c1": np.array([1000.0]), "c2": np.array([500.0])}, ref) == 0
    twice = objective({"c1": np.array([2000.0]), "c2": np.array([500.0])}, ref)
    half = objective({"c1": np.array([500.0]), "c2": np.array([500.0])}, ref)
    assert twice == pytest.approx(half) == pytest.approx(math.log(2) / 2)
    assert objective({"c1": np.array([1000.0])}, ref) == math.inf


def test_initial_design_starts_at_the_start_and_spans_the_range():
    d = initial_design(107, 26, 856, 4)
    assert d[0] == 107 and len(d) == 4
    assert min(d[1:]) < 107 < max(d[1:]) and all(26 <= v <= 856 for v in d)
    assert max(d) > 310  # reaches past the BDP of 100 Mbit/s x 36 ms (about 310 packets)


def test_fig2_scenario_is_two_quic_arms_differing_only_in_macw():
    sc = fig2_scenario(rounds=5)
    assert [(a.label, a.protocol, a.max_cwnd_packets) for a in sc.arm_list()] == [
        ("macw107", "h3", 107),
        ("macw430", "h3", 430),
    ]
    (cell,) = sc.cells()
    assert cell.workload.mode == "bulk" and cell.workload.object_size == 10_000_000
    assert cell.link.rtt_ms() == 36 and cell.link.resolved("down").rate_mbit == 100
    assert cell.link.resolved("down").buffer_bytes == 30000
    assert sc.comparisons() == [("macw107", "macw430")] and sc.total_runs() == 10
    with pytest.raises(LonglookError, match="two different"):
        fig2_scenario(macws=(430, 430))


def test_trial_scenario_keeps_the_reference_grid_and_sets_macw_per_arm():
    ref = fig2_scenario(rounds=9, size="2m")
    t = trial_scenario(ref, "macw430", [60, 500], rounds=3, name="t")
    assert [a.max_cwnd_packets for a in t.arm_list()] == [60, 500] and t.rounds == 3
    assert [cell_key(c.dims()) for c in t.cells()] == [cell_key(c.dims()) for c in ref.cells()]
    assert tomllib.loads(t.toml_text)["name"] == "t"  # stored as TOML, like any scenario


def test_toml_text_round_trips():
    data = {"a": 1, "b": 2.5, "c": 'x"y', "d": [1, 2], "e": {"f": True}, "g": [{"h": "i"}], "n": None}
    back = tomllib.loads(dumps(data))
    assert back == {k: v for k, v in data.items() if v is not None}


def test_search_against_a_missing_or_foreign_reference_is_one_clear_error(tmp_path):
    for bad in (tmp_path / "nope", tmp_path):
        res = CliRunner().invoke(app, ["calibrate", "search", "--reference", str(bad), "--out", str(tmp_path / "out")])
        assert res.exit_code != 0
        assert isinstance(res.exception, LonglookError) and "reference" in str(res.exception)
        assert not (tmp_path / "out").exists()
    with pytest.raises(LonglookError, match="no such directory"):
        load_reference(tmp_path / "nope")


def test_search_loop_with_a_simulated_testbed_converges_past_the_bdp(monkeypatch, tmp_path):
    """The optimiser's loop without traffic: each 'experiment' yields PLTs from a model in
    which a window beyond the BDP (310 packets) no longer helps."""
    from longlook.analyses.calibrate import search as search_mod
    from longlook.analyses.calibrate.reference import Reference

    def plt(m: int) -> float:
        return 300 + 20000 / min(m, 310)

    ref_sc = fig2_scenario(rounds=3, size="2m")
    (cell,) = ref_sc.cells()
    rng = np.random.default_rng(0)
    ref = Reference(
        tmp_path,
        ref_sc,
        "macw430",
        {cell_key(cell.dims()): plt(430) + rng.normal(0, 3, 5)},
        {cell_key(cell.dims()): cell.id},
    )
    ran: dict[str, list] = {}

    def fake_run(scenario, out, **kw):
        ran[out.name] = scenario

    def fake_counted(out):
        sc = ran[out.name]
        return pd.DataFrame(
            [
                {
                    "arm": a.label,
                    "cell_id": c.id,
                    "dims": c.dims(),
                    "plt_ms": plt(a.max_cwnd_packets) + rng.normal(0, 3),
                }
                for c in sc.cells()
                for a in sc.arm_list()
                for _ in range(sc.rounds)
            ]
        )

    monkeypatch.setattr(search_mod, "run_experiment", fake_run)
    monkeypatch.setattr(search_mod, "counted", fake_counted)
    result = search_mod.search(ref, tmp_path / "s", trials=8, rounds=3, start=107, seed=2)
    # two values per experiment, then the closest measured again for the verdict
    assert len({t["value"] for t in result.trials}) == 8 and len(ran) == 5
    assert result.confirmed_in in ran and "calibrated: every cell within +-5%" in result.verdict_text()
    assert result.trials[0]["value"] == 107 and result.best >= 300
    assert result.calibrated and "max_cwnd_packets" in result.fragment
    with pytest.raises(LonglookError, match="must hold the start"):
        search_mod.search(ref, tmp_path / "s2", start=107, low=200)


def test_a_stack_reference_is_its_server_beside_our_start_value_on_the_grid():
    from longlook.analyses.calibrate.scenarios import stack_reference_scenario

    try:
        sc = stack_reference_scenario(fig2_scenario(rounds=9, size="2m"), "quiche", 107, rounds=3)
    except LonglookError as e:  # the stack is not installed here
        pytest.skip(str(e))
    assert [(a.label, a.server, a.max_cwnd_packets) for a in sc.arm_list()] == [
        ("reference", "quiche", None),
        ("macw107", None, 107),
    ]
    assert sc.baseline == "reference" and sc.rounds == 3


def test_a_stack_reference_without_a_grid_or_an_unknown_name_is_one_clear_error(tmp_path):
    from longlook.analyses.calibrate.reference import reference_from

    with pytest.raises(LonglookError, match="--grid"):
        reference_from("quiche", tmp_path / "out")
    with pytest.raises(LonglookError, match="not a QUIC stack"):
        reference_from("nosuchstack", tmp_path / "out")
    with pytest.raises(LonglookError, match="not an experiment"):
        reference_from(str(tmp_path), tmp_path / "out")


# ---------------------------------------------------------------- several knobs
def test_knob_labels_name_every_knob_in_a_fixed_order():
    from longlook.analyses.calibrate.knobs import label

    assert label({"max_cwnd_packets": 430}) == "macw430"  # the one-knob labels are unchanged
    assert label({"n_conn": 1, "initial_window_packets": 10, "max_cwnd_packets": 430}) == "macw430-iw10-n1"


def test_knob_set_ranges_and_bad_names_are_one_clear_error():
    from longlook.analyses.calibrate.knobs import knob_set, parse_range

    macw, iw, n = knob_set(["nconn", "macw", "iw"], start=107, ranges={"iw": (4, 64)})
    assert (macw.option, macw.start, macw.low, macw.high, macw.log) == ("max_cwnd_packets", 107, 26, 856, True)
    assert (iw.option, iw.start, iw.low, iw.high, iw.log) == ("initial_window_packets", 10, 4, 64, True)
    assert (n.option, n.low, n.high, n.log) == ("n_conn", 1, 4, False)
    assert parse_range("iw=4..64") == ("iw", (4, 64))
    with pytest.raises(LonglookError, match="unknown knob 'pacing'") as e:
        knob_set(["macw", "pacing"])
    assert "quinn always paces" in e.value.hint
    with pytest.raises(LonglookError, match="not a searched knob"):
        knob_set(["macw"], ranges={"iw": (4, 64)})
    with pytest.raises(LonglookError, match="must hold the start"):
        knob_set(["nconn"], ranges={"nconn": (3, 2)})
    with pytest.raises(LonglookError, match="NAME=LOW..HIGH"):
        parse_range("iw=4-64")


def test_initial_points_start_at_the_start_and_spread_each_knob():
    from longlook.analyses.calibrate.knobs import initial_points, knob_set

    knobs = knob_set(["macw", "iw", "nconn"])
    pts = initial_points(knobs, 4)
    assert pts[0] == {"max_cwnd_packets": 107, "initial_window_packets": 10, "n_conn": 1} and len(pts) == 4
    for k in knobs:
        values = [p[k.option] for p in pts[1:]]
        assert all(k.low <= v <= k.high for v in values) and len(set(values)) > 1, k


def test_multi_knob_trial_arms_carry_every_knob_and_name_them():
    ref = fig2_scenario(rounds=9, size="2m")
    points = [
        {"max_cwnd_packets": 430, "initial_window_packets": 10, "n_conn": 1},
        {"max_cwnd_packets": 200, "initial_window_packets": 32, "n_conn": 3},
    ]
    t = trial_scenario(ref, "macw430", points, rounds=3, name="t")
    assert [a.label for a in t.arm_list()] == ["macw430-iw10-n1", "macw200-iw32-n3"]
    assert [(a.max_cwnd_packets, a.initial_window_packets, a.n_conn) for a in t.arm_list()] == [
        (430, 10, 1),
        (200, 32, 3),
    ]
    (cell,) = t.cells()
    assert not cell.run_options(t.arm_list()[0]).zero_rtt  # the reference grid's 0-RTT off is kept
    run = cell.run_options(t.arm_list()[1])
    assert (run.max_cwnd_packets, run.initial_window_packets, run.n_conn) == (200, 32, 3)
    assert [cell_key(c.dims()) for c in t.cells()] == [cell_key(c.dims()) for c in ref.cells()]
    # a knob not searched keeps the reference arm's value: searching iw alone keeps MACW 430
    t2 = trial_scenario(
        ref, "macw430", [{"initial_window_packets": 4}, {"initial_window_packets": 40}], rounds=3, name="t2"
    )
    assert [(a.label, a.max_cwnd_packets) for a in t2.arm_list()] == [("iw4", 430), ("iw40", 430)]


def test_n_conn_on_a_non_cubic_reference_arm_fails_before_any_traffic(tmp_path):
    from longlook.analyses.calibrate import search as search_mod
    from longlook.analyses.calibrate.knobs import knob_set
    from longlook.analyses.calibrate.reference import Reference

    bbr = fig2_scenario(rounds=3, size="2m").model_copy()
    data = tomllib.loads(bbr.toml_text)
    data["options"]["quic_cc"] = "bbr"
    from longlook.kinds.pageload import Scenario

    bbr = Scenario.from_toml(dumps(data), source="t")
    ref = Reference(tmp_path, bbr, "macw430", {}, {})
    with pytest.raises(LonglookError, match="n_conn"):
        search_mod.search(ref, tmp_path / "s", knobs=knob_set(["macw", "nconn"]))
    assert not (tmp_path / "s").exists()


def test_multi_knob_search_loop_with_a_simulated_testbed(monkeypatch, tmp_path):
    """Three knobs without traffic: PLT falls with MACW up to the BDP and with a larger
    initial window; n_conn does nothing. Every trial is an arm with all three values."""
    from longlook.analyses.calibrate import search as search_mod
    from longlook.analyses.calibrate.knobs import knob_set
    from longlook.analyses.calibrate.reference import Reference

    def plt(m: int, iw: int, n: int) -> float:
        return 300 + 20000 / min(m, 310) + 2000 / iw

    ref_sc = fig2_scenario(rounds=3, size="2m")
    (cell,) = ref_sc.cells()
    rng = np.random.default_rng(0)
    ref = Reference(
        tmp_path,
        ref_sc,
        "macw430",
        {cell_key(cell.dims()): plt(430, 40, 1) + rng.normal(0, 3, 5)},
        {cell_key(cell.dims()): cell.id},
    )
    ran: dict[str, object] = {}
    monkeypatch.setattr(search_mod, "run_experiment", lambda sc, out, **kw: ran.__setitem__(out.name, sc))
    monkeypatch.setattr(
        search_mod,
        "counted",
        lambda out: pd.DataFrame(
            [
                {
                    "arm": a.label,
                    "cell_id": c.id,
                    "dims": c.dims(),
                    "plt_ms": plt(a.max_cwnd_packets, a.initial_window_packets, a.n_conn) + rng.normal(0, 3),
                }
                for sc in [ran[out.name]]
                for c in sc.cells()
                for a in sc.arm_list()
                for _ in range(sc.rounds)
            ]
        ),
    )
    knobs = knob_set(["macw", "iw", "nconn"], ranges={"iw": (4, 64)})
    result = search_mod.search(ref, tmp_path / "s", trials=12, rounds=3, seed=3, knobs=knobs)
    first = result.trials[0]
    assert first["knobs"] == {"max_cwnd_packets": 107, "initial_window_packets": 10, "n_conn": 1}
    assert first["label"] == "macw107-iw10-n1" and "value" not in first
    assert all(set(t["knobs"]) == {"max_cwnd_packets", "initial_window_packets", "n_conn"} for t in result.trials)
    assert all(a.label.count("-") == 2 for sc in ran.values() for a in sc.arm_list())
    assert set(result.knobs) == {"max_cwnd_packets", "initial_window_packets", "n_conn"}
    assert result.best == result.knobs and result.best_objective < result.trials[0]["objective"]
    for option in result.knobs:
        assert f"{option} = {result.knobs[option]}" in result.fragment
    assert tomllib.loads(result.fragment)["options"] == result.knobs  # pastes as it is
    assert "initial_window_packets" in result.table()


def test_search_with_an_unknown_knob_or_bad_range_is_one_clear_error(tmp_path):
    for args, text in (
        (["--knob", "pacing"], "unknown knob 'pacing'"),
        (["--knob", "iw", "--range", "iw=4"], "NAME=LOW..HIGH"),
        (["--range", "nconn=1..4"], "not a searched knob"),
    ):
        res = CliRunner().invoke(
            app, ["calibrate", "search", "--reference", str(tmp_path), "--out", str(tmp_path / "out"), *args]
        )
        assert res.exit_code != 0 and isinstance(res.exception, LonglookError), res.output
        assert text in str(res.exception) and not (tmp_path / "out").exists()
