"""The runner's own arithmetic, without a testbed: linkem's counters over a run, and the
harness's cost per run and by phase. The runner through the real testbed:
tests/testbed/core/test_runner_testbed.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from longlook.core.audit import linkem_delta, queue_figures


def test_linkem_delta_subtracts_direction_counters():
    before = {"elapsed_s": 1.0, "directions": {"up": {"packets": 10, "bytes": 1000}}}
    after = {
        "elapsed_s": 3.5,
        "directions": {"up": {"packets": 25, "bytes": 4000}, "down": {"packets": 5, "bytes": 700}},
    }
    delta = linkem_delta(before, after)
    assert delta["elapsed_s"] == 2.5
    assert delta["directions"]["up"] == {"packets": 15, "bytes": 3000}
    assert delta["directions"]["down"] == {"packets": 5, "bytes": 700}


def test_linkem_delta_keeps_the_nat_rebindings_of_the_run_only():
    event = lambda port: {"mono_ms": 1.0, "proto": "udp", "from": f"p:{port}", "to": f"p:{port + 1}"}  # noqa: E731
    before = {"directions": {}, "nat": {"rebindings": [event(1)]}}
    after = {"directions": {}, "nat": {"rebindings": [event(1), event(5), event(7)]}}
    assert [e["from"] for e in linkem_delta(before, after)["nat_rebindings"]] == ["p:5", "p:7"]
    assert "nat_rebindings" not in linkem_delta({"directions": {}}, {"directions": {}})


def test_the_queue_a_run_met_is_its_mean_sojourn_and_its_drops_and_marks():
    before = {"directions": {"down": {"sojourn_packets": 100, "sojourn_ns_sum": 5 * 10**8, "dropped_aqm": 2}}}
    after = {
        "directions": {
            "down": {"sojourn_packets": 300, "sojourn_ns_sum": 25 * 10**8, "dropped_aqm": 9, "ce_marked": 4},
            "up": {"sojourn_packets": 0, "sojourn_ns_sum": 0},
        }
    }
    q = queue_figures(linkem_delta(before, after))
    # 200 packets waited 2 s in all: 10 ms each
    assert q == {
        "down": {"sojourn_ms_mean": 10.0, "packets": 200, "dropped_buffer": 0, "dropped_aqm": 7, "ce_marked": 4}
    }
    assert queue_figures(linkem_delta({"directions": {}}, {"directions": {"down": {"packets": 3}}})) == {}


def test_the_queue_a_run_met_records_what_was_marked_on_the_wire():
    before = {"directions": {"up": {"received": 10, "ect0_seen": 8, "sojourn_packets": 10, "sojourn_ns_sum": 0}}}
    after = {
        "directions": {
            "up": {
                "received": 110,
                "ect0_seen": 78,
                "ect1_seen": 0,
                "ce_seen": 2,
                "ecn_rewritten": 70,
                "sojourn_packets": 110,
                "sojourn_ns_sum": 10**8,
            },
            # an ECN black hole: every packet ECT and dropped, none queued
            "down": {"received": 40, "ect0_seen": 40, "ect1_seen": 0, "ce_seen": 0, "dropped_middlebox": 40},
        }
    }
    q = queue_figures(linkem_delta(before, after))
    assert q["up"] == {
        "sojourn_ms_mean": 1.0,
        "packets": 100,
        "dropped_buffer": 0,
        "dropped_aqm": 0,
        "ce_marked": 0,
        "received": 100,
        "ect0_seen": 70,
        "ect1_seen": 0,
        "ce_seen": 2,
        "ecn_rewritten": 70,
    }
    # no packet queued: no mean sojourn, the arrivals all the same
    assert q["down"] == {
        "packets": 0,
        "dropped_buffer": 0,
        "dropped_aqm": 0,
        "ce_marked": 0,
        "received": 40,
        "ect0_seen": 40,
        "ect1_seen": 0,
        "ce_seen": 0,
    }
    # a linkem before the ECN counters: not said to be 0
    old = {"directions": {"down": {"sojourn_packets": 5, "sojourn_ns_sum": 5 * 10**6, "received": 5}}}
    assert "ect0_seen" not in queue_figures(linkem_delta({"directions": {}}, old))["down"]
    # not-ECT only, nothing queued: nothing to say
    quiet = {"directions": {"down": {"received": 3, "ect0_seen": 0, "ect1_seen": 0, "ce_seen": 0}}}
    assert queue_figures(linkem_delta({"directions": {}}, quiet)) == {}


def test_the_harness_cost_is_the_loop_outside_runs_per_run():
    from longlook.core.execute import RunSummary

    s = RunSummary(out_dir=Path("."), runs=10, wall_s=20.0, setup_s=5.0, in_runs_s=14.5)
    assert s.harness_s_per_run == pytest.approx(0.05) and s.harness_overhead == pytest.approx(0.5 / 15)
    assert RunSummary(out_dir=Path(".")).harness_s_per_run == 0.0


def test_the_harness_time_is_told_by_phase_biggest_first():
    import time
    from longlook.core.execute import RunSummary

    s = RunSummary(out_dir=Path("."), runs=2)
    with s.phases("store"):
        time.sleep(0.02)
    with s.phases("audit end"):
        time.sleep(0.06)
    with pytest.raises(ValueError), s.phases("store"):  # a failing step still counts
        time.sleep(0.02)
        raise ValueError
    (first, a), (second, b) = s.phases_per_run_ms()
    assert (first, second) == ("audit end", "store")
    assert a == pytest.approx(30, abs=8) and b == pytest.approx(20, abs=8)  # ms per run
