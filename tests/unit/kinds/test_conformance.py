"""The conformance kind without a testbed: its scenario part (one clear error per bad
field), the envelope overlap, the interval across rounds (a coverage simulation), the
envelope verdict beside the kernel's own overlap, the share comparison (Holm across cells
where asked) and the per-parameter verdicts across runs on a synthetic store frame
(tests/calibration/test_conformance.py holds their null calibration)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from longlook.core.registry import get_kind
from longlook.core.spec import parse_scenario
from longlook.errors import LonglookError
from longlook.flowlog import FlowCounters, RouterQueue, read_flow_log
from longlook.kinds.conformance import ConformanceScenario
from longlook.kinds.conformance.aggregate import coverage, parameter_summary, share_comparisons
from longlook.kinds.conformance.envelope import Envelope, envelope_points, mean_interval, overlap
from longlook.kinds.conformance.envelope_verdict import envelope_test, overlap_matrix
from longlook.kinds.conformance.judge import ParameterInput, judge_parameters, reference_against_itself
from longlook.kinds.conformance.measure import shared_window_share
from longlook.kinds.conformance.params import from_qlog
from longlook.qlog import qlog_from_events
from repo_paths import DATA

HEAD = """
kind = "conformance"
name = "c"
rounds = 2
"""
LINK = """
[[links]]
rate_mbit = 20
rtt_ms = 36
buffer_bytes = 90000
"""


def scenario(extra: str) -> ConformanceScenario:
    return parse_scenario(HEAD + extra + LINK)


def test_cells_are_stacks_times_their_ccs_with_a_kernel_reference():
    s = scenario('stacks = ["ours", "tquic"]\n')
    got = {(c.entry.label, c.cc, c.kernel_cc) for c in s.cells()}
    # tquic's copa has no Linux reference: left out; BBRv3 is held against Linux's BBR
    assert got == {
        ("ours", "cubic", "cubic"),
        ("ours", "newreno", "reno"),
        ("ours", "bbr", "bbr"),
        ("tquic", "bbr", "bbr"),
        ("tquic", "cubic", "cubic"),
        ("tquic", "bbr3", "bbr"),
    }
    assert [a.label for a in s.arm_list()] == ["alone", "kernel", "shared", "fingerprint"]
    assert s.comparisons() == [("alone", "kernel")]
    assert get_kind("conformance").tables["conformance"]["verdict"] == "VARCHAR"


def test_our_knobs_make_their_own_cell():
    s = scenario(
        'stacks = [{ stack = "ours", ccs = ["cubic"] }, '
        '{ stack = "ours", ccs = ["cubic"], initial_window_packets = 100 }]\ninclude = ["alone"]\n'
    )
    assert [c.id for c in s.cells()] == ["ours-cubic-buf90000", "ours-iw100-cubic-buf90000"]
    assert s.comparisons() == []


@pytest.mark.parametrize(
    "extra, field",
    [
        ('stacks = ["nosuch"]\n', "nosuch"),
        ('stacks = [{ stack = "quiche", ccs = ["copa"] }]\n', "ccs"),
        ('stacks = [{ stack = "tquic", ccs = ["copa"] }]\n', "Linux reference"),
        ('stacks = [{ stack = "quiche", initial_window_packets = 100 }]\n', "initial_window_packets"),
        ('stacks = [{ stack = "ours", colour = "red" }]\n', "colour"),
        ('stacks = ["ours"]\nobject_size = "10"\n', "object_size"),
        ('stacks = ["ours"]\ninclude = ["alone", "alone"]\n', "include"),
        ('stacks = ["ours"]\ninclude = ["both"]\n', "include"),
        ("stacks = []\n", "stacks"),
    ],
)
def test_bad_input_names_the_field(extra, field):
    with pytest.raises((LonglookError, ValueError)) as e:
        scenario(extra)
    assert field in str(e.value)


def test_overlap_is_jaccard_of_the_hulls():
    square = np.array([[0, 0], [1, 0], [1, 1], [0, 1]], dtype=float)
    assert overlap(square, square) == pytest.approx(1.0)
    half = square + [0.5, 0]  # shifted by half its width: 0.5 / 1.5
    assert overlap(square, half) == pytest.approx(1 / 3, abs=0.02)
    assert overlap(square, square + [5, 5]) == pytest.approx(0.0)
    assert math.isnan(overlap(square[:2], square))  # no area: not measurable
    line = np.array([[0, 0], [1, 1], [2, 2]], dtype=float)
    assert math.isnan(overlap(line, square))


def test_envelope_trims_outliers_only_with_enough_points():
    rng = np.random.default_rng(3)
    pts = pd.DataFrame({"t_s": np.arange(100.0), "mbit": rng.normal(10, 1, 100), "queue_ms": rng.normal(20, 2, 100)})
    pts.loc[0, "mbit"] = 1000.0  # one absurd bin
    assert Envelope(pts).core()[:, 0].max() < 100
    assert len(Envelope(pts.iloc[:5]).core()) == 5


def test_mean_interval_covers_95_percent_of_the_time():
    # the interval across rounds (Student's t, scipy) at n = 3 and n = 10 rounds
    for n in (3, 10):
        assert 0.93 <= coverage(0.7, 0.1, n, trials=2000, seed=n) <= 0.97
    mean, lo, hi, n = mean_interval([0.5, float("nan"), None, 0.7])
    assert (mean, n) == (pytest.approx(0.6), 2) and lo < 0.6 < hi
    assert math.isnan(mean_interval([0.5])[1])


def test_envelope_points_bin_router_bytes_router_queue_and_sender_delay():
    # 1250 bytes every 10 ms = 1 Mbit/s at the router; the router's buffer held each packet
    # 4 ms (the longest 6 ms); the sender's RTT 40 ms over a 30 ms minimum
    t = np.arange(0.0, 2.0, 0.01) + 5.0
    c = FlowCounters(
        t=t,
        bytes=np.cumsum(np.full(t.size, 1250)),
        packets=np.arange(1, t.size + 1),
        dropped_buffer=np.zeros(t.size, dtype=int),
    )
    q = RouterQueue(t=t, packets=np.ones(t.size), sum_ms=np.full(t.size, 4.0), max_ms=np.full(t.size, 4.0))
    q.max_ms[75] = 6.0  # t = 5.75: the second bin
    ev = [
        {
            "time": 0.0,
            "name": "recovery:metrics_updated",
            "data": {"congestion_window": 12000, "min_rtt": 30.0, "latest_rtt": 30.0},
        }
    ]
    ev += [{"time": ms, "name": "recovery:metrics_updated", "data": {"latest_rtt": 40.0}} for ms in range(10, 2000, 10)]
    pts = envelope_points(c, q, from_qlog(qlog_from_events(ev)), offset_s=5.0, trace_t0_s=0.0, bin_s=0.5, end_s=10)
    assert len(pts) == 3
    assert pts["mbit"].iloc[1] == pytest.approx(1.0, rel=0.01)
    assert pts["queue_ms"].iloc[1] == pytest.approx(4.0)  # the router's, not the sender's 10
    assert list(pts["queue_max_ms"]) == [4.0, 6.0, 4.0]
    assert pts["sender_queue_ms"].iloc[1] == pytest.approx(10.0)
    assert Envelope(pts).core()[:, 1].max() == pytest.approx(4.0)  # the envelope's delay axis
    # no router figures (a log from an older linkem): no queueing delay, not the sender's
    assert envelope_points(c, None, None, offset_s=5.0, trace_t0_s=0.0, bin_s=0.5, end_s=10)["queue_ms"].isna().all()


def test_router_queue_combines_flows_per_line_and_bins_by_interval(tmp_path):
    # two flows' lines of the same writes (t), one line with nothing enqueued, a torn line
    lines = [
        {
            "t": 0.1,
            "direction": "down",
            "proto": "udp",
            "src": "s:1",
            "dst": "c:1",
            "packets": 5,
            "bytes": 7500,
            "dropped_loss": 0,
            "dropped_buffer": 0,
            "sojourn_packets": 3,
            "sojourn_ms_mean": 2.0,
            "sojourn_ms_max": 3.0,
        },
        {
            "t": 0.1,
            "direction": "down",
            "proto": "tcp",
            "src": "s:2",
            "dst": "c:2",
            "packets": 1,
            "bytes": 1500,
            "dropped_loss": 0,
            "dropped_buffer": 0,
            "sojourn_packets": 1,
            "sojourn_ms_mean": 10.0,
            "sojourn_ms_max": 10.0,
        },
        {
            "t": 0.2,
            "direction": "down",
            "proto": "udp",
            "src": "s:1",
            "dst": "c:1",
            "packets": 8,
            "bytes": 12000,
            "dropped_loss": 0,
            "dropped_buffer": 0,
            "sojourn_packets": 0,
            "sojourn_ms_mean": None,
            "sojourn_ms_max": None,
        },
        {
            "t": 0.3,
            "direction": "down",
            "proto": "udp",
            "src": "s:1",
            "dst": "c:1",
            "packets": 9,
            "bytes": 13500,
            "dropped_loss": 0,
            "dropped_buffer": 0,
            "sojourn_packets": 2,
            "sojourn_ms_mean": 1.0,
            "sojourn_ms_max": 1.5,
        },
    ]
    path = tmp_path / "flows.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + '\n{"t": 0.4, "dire')
    log = read_flow_log(path)
    both = RouterQueue.of(log)
    assert list(both.t) == [0.1, 0.3] and list(both.packets) == [4, 2]
    assert both.mean_ms == pytest.approx((3 * 2 + 10 + 2 * 1) / 6)
    mean, peak = both.timeline_ms(np.array([0.0, 0.1, 0.2, 0.4]))  # 0.1 is on an edge: the first bin
    assert mean[0] == pytest.approx(4.0) and peak[0] == 10.0
    assert np.isnan(mean[1]) and np.isnan(peak[1])
    assert (mean[2], peak[2]) == (1.0, 1.5)
    udp = RouterQueue.of(log[log["proto"] == "udp"])
    assert udp.mean_ms == pytest.approx(8 / 5)
    # a log from before these fields: no figures, no error
    old = tmp_path / "old.jsonl"
    old.write_text(json.dumps({k: v for k, v in lines[0].items() if not k.startswith("sojourn")}) + "\n")
    assert math.isnan(RouterQueue.of(read_flow_log(old)).mean_ms)


def test_shared_share_counts_only_while_both_ran():
    t = np.arange(0.0, 10.0, 0.1)
    a = FlowCounters(
        t=t, bytes=np.cumsum(np.full(t.size, 3000)), packets=np.zeros(t.size), dropped_buffer=np.zeros(t.size)
    )
    tb = t[t >= 2.0]  # the kernel flow starts 2 s later
    b = FlowCounters(
        t=tb, bytes=np.cumsum(np.full(tb.size, 1000)), packets=np.zeros(tb.size), dropped_buffer=np.zeros(tb.size)
    )
    share, ref_mbit, window = shared_window_share(a, b)
    assert share == pytest.approx(0.75, abs=0.01) and window[0] == pytest.approx(2.0)
    assert ref_mbit == pytest.approx(0.08, rel=0.05)


def _runs(shared_pairs):
    rows = [
        {
            "run_id": f"r{i}",
            "cell_id": "c1",
            "round": i,
            "arm": "shared",
            "status": "ok",
            "protocol_requested": None,
            "protocol_negotiated": "h3",
            "mbit": a,
            "ref_mbit": b,
            "share": a / (a + b),
        }
        for i, (a, b) in enumerate(shared_pairs)
    ]
    return pd.DataFrame(rows)


def test_share_is_compared_paired_per_run():
    rng = np.random.default_rng(1)
    base = rng.uniform(5, 15, 8)  # run-to-run swings both flows share
    runs = _runs([(x * 0.8, x) for x in base])
    c = share_comparisons(runs)["c1"]
    assert c.paired and c.test == "paired_t"
    assert c.percent_difference == pytest.approx(-20, abs=1)  # the stack 20% slower, clearly
    assert c.p_value < 0.01


def test_share_comparisons_take_holm_across_cells_and_the_shared_completion():
    rng = np.random.default_rng(2)
    rows = []
    for c in range(6):
        for r in range(4):
            x = rng.uniform(5, 15)
            ok = not (c == 0 and r == 3)  # one shared run failed: both flows lost
            rows.append(
                {
                    "run_id": f"r{c}{r}",
                    "cell_id": f"c{c}",
                    "round": r,
                    "arm": "shared",
                    "status": "ok" if ok else "failed",
                    "protocol_requested": None,
                    "protocol_negotiated": "h3",
                    "mbit": x * (0.7 if c == 1 else rng.uniform(0.9, 1.1)) if ok else None,
                    "ref_mbit": x if ok else None,
                    "share": 0.5,
                }
            )
    runs = pd.DataFrame(rows)
    plain, adjusted = share_comparisons(runs), share_comparisons(runs, holm_cells=True)
    assert str(plain["c0"].completion_a) == "3/4" and str(plain["c1"].completion_b) == "4/4"
    assert not plain["c1"].holm and all(c.holm for c in adjusted.values())
    for cid, c in adjusted.items():
        assert c.p_adjusted >= plain[cid].p_value - 1e-12
    assert adjusted["c1"].p_adjusted == pytest.approx(min(1.0, 6 * plain["c1"].p_value))  # the smallest of 6


def _param_rows(
    cell: str, flow: str, parameter: str, values, reference: float, unit: str = "ms", bound=lambda v: True
) -> list[dict]:
    arm = "alone" if flow == "stack" else "kernel"
    return [
        {
            "run_id": f"{cell}-{arm}-{i}",
            "stack": "s" if flow == "stack" else "kernel",
            "version": "v",
            "cc": "cubic",
            "parameter": parameter,
            "measured": v,
            "reference": reference,
            "unit": unit,
            "verdict": "not measurable" if v != v else ("conforms" if bound(v) else "deviates"),
            "tolerance": "",
            "note": "",
            "flow": flow,
            "arm": arm,
        }
        for i, v in enumerate(values)
    ]


def _param_runs(table: pd.DataFrame) -> pd.DataFrame:
    ids = table.drop_duplicates("run_id")
    return pd.DataFrame(
        {
            "run_id": ids["run_id"],
            "cell_id": ids["run_id"].str.split("-").str[0],
            "arm": ids["arm"],
            "round": ids["run_id"].str.split("-").str[-1].astype(int),
            "status": "ok",
            "protocol_requested": None,
            "protocol_negotiated": "h3",
        }
    )


def test_the_kernels_own_noise_is_not_deviant():
    """The issue's real case: the kernel's Cubic left slow start with RTT rises of 8.6, 14.7
    and 9.5 ms against a 14 ms bound, and cut its window to 0.75, 0.68, 0.71: one run each
    outside the bound. Neither the kernel nor a stack measured like it is called deviant."""
    within = lambda v: v <= 14  # noqa: E731
    rows = (
        _param_rows("c1", "kernel", "slow_start_exit_rtt_rise", [8.6, 14.7, 9.5], 4.5, bound=within)
        + _param_rows("c1", "stack", "slow_start_exit_rtt_rise", [9.1, 15.2, 8.0], 4.5, bound=within)
        + _param_rows(
            "c1", "kernel", "multiplicative_decrease", [0.76, 0.68, 0.71], 0.7, "ratio", lambda v: abs(v - 0.7) <= 0.05
        )
        + _param_rows(
            "c1", "stack", "multiplicative_decrease", [0.69, 0.77, 0.72], 0.7, "ratio", lambda v: abs(v - 0.7) <= 0.05
        )
    )
    table = pd.DataFrame(rows)
    s = parameter_summary(table, _param_runs(table)).set_index(["flow", "parameter"])
    assert s.loc[("kernel", "slow_start_exit_rtt_rise"), "outside"] == "1 of 3"  # what the old rule called it
    assert set(s["verdict"]) == {"inconclusive"}, s["verdict"]
    assert s.loc[("stack", "slow_start_exit_rtt_rise"), "against"] == "the kernel's runs"
    assert s.loc[("stack", "slow_start_exit_rtt_rise"), "kernel_values"] == "9.5 [8.6–14.7] (n=3)"
    assert s.loc[("kernel", "slow_start_exit_rtt_rise"), "self"].startswith("too few runs to split")


def test_a_set_parameter_the_same_every_run_is_exact():
    """An initial window of 12000 B in every run conforms; 38400 B in every run, against the
    kernel's 10 x 1448 B (12000 B in QUIC's terms), deviates; no order of rows changes it."""
    iw = lambda v: abs(v - 12000) <= 1200  # noqa: E731
    rows = (
        _param_rows("ours", "stack", "initial_window", [12000.0] * 3, 12000.0, "bytes", iw)
        + _param_rows("ours", "kernel", "initial_window", [14480.0] * 3, 14480.0, "bytes")
        + _param_rows("tquic", "stack", "initial_window", [38400.0] * 3, 12000.0, "bytes", iw)
        + _param_rows("tquic", "kernel", "initial_window", [14480.0] * 3, 14480.0, "bytes")
    )
    table = pd.DataFrame(rows)
    s = parameter_summary(table, _param_runs(table))
    got = dict(zip(zip(s["cell_id"], s["flow"]), s["verdict"]))
    assert got == {
        ("ours", "stack"): "conforms",
        ("ours", "kernel"): "conforms",
        ("tquic", "stack"): "deviates",
        ("tquic", "kernel"): "conforms",
    }
    shuffled = parameter_summary(table.iloc[::-1], _param_runs(table))
    assert dict(zip(zip(shuffled["cell_id"], shuffled["flow"]), shuffled["verdict"])) == got


def test_without_kernel_values_the_stack_is_held_against_the_bound_with_its_own_spread():
    # pacing bursts: the kernel's TCP log has none; 19-23 packets against at most 10
    rows = _param_rows(
        "c1", "stack", "pacing_burst_p95", [19.0, 23.0, 21.0, 20.0], 10.0, "packets", lambda v: v <= 10
    ) + _param_rows("c1", "kernel", "pacing_burst_p95", [math.nan] * 4, 10.0, "packets")
    table = pd.DataFrame(rows)
    s = parameter_summary(table, _param_runs(table)).set_index("flow")
    assert s.loc["stack", "verdict"] == "deviates" and s.loc["stack", "against"].startswith("the bound")
    assert s.loc["kernel", "verdict"] == "not measurable"
    one = parameter_summary(table[table["run_id"] == "c1-alone-0"], _param_runs(table))
    assert one.iloc[0]["verdict"] == "inconclusive" and one.iloc[0]["reason"] == "1 run with a value"


def test_holm_over_a_stacks_parameters_and_over_cells_with_the_scenarios_holm():
    rng = np.random.default_rng(4)
    items = [
        ParameterInput("slow_start_exit_rtt_rise", rng.normal(20, 2, 5), rng.normal(10, 2, 5), (-np.inf, 14.0), key=0)
    ]
    items += [
        ParameterInput(
            "multiplicative_decrease", rng.normal(0.7, 0.02, 5), rng.normal(0.7, 0.02, 5), (0.65, 0.75), key=i
        )
        for i in range(1, 7)
    ]
    got = judge_parameters(items, alpha=0.01)
    assert got[0].verdict == "deviates" and got[0].p_adjusted == pytest.approx(min(1, 7 * got[0].p_value), rel=1e-6)
    assert [g.verdict for g in got[1:]] == ["conforms"] * 6  # 98% intervals of 5 runs within 0.65-0.75
    # the same data in two cells: with holm_cells one family of both cells' parameters
    rows = []
    for cell in ("a", "b"):
        rows += _param_rows(cell, "stack", "slow_start_exit_rtt_rise", [20.0, 22.0, 21.0, 19.0, 23.0], 4.5)
        rows += _param_rows(cell, "kernel", "slow_start_exit_rtt_rise", [9.0, 11.0, 10.0, 8.0, 12.0], 4.5)
    table = pd.DataFrame(rows)
    per_cell = parameter_summary(table, _param_runs(table))
    across = parameter_summary(table, _param_runs(table), holm_cells=True)
    stack = lambda f: f[f["flow"] == "stack"]["p_adjusted"].to_numpy()  # noqa: E731
    assert np.allclose(stack(across), np.minimum(1, 2 * stack(per_cell)))


def test_the_reference_against_itself_needs_four_runs():
    rng = np.random.default_rng(5)
    bounds = {"slow_start_exit_rtt_rise": (-np.inf, 14.0)}
    assert reference_against_itself({"slow_start_exit_rtt_rise": rng.normal(9, 2, 3)}, bounds) == {}
    got = reference_against_itself({"slow_start_exit_rtt_rise": rng.normal(9, 2, 8)}, bounds)
    assert got["slow_start_exit_rtt_rise"] == (0, 10)  # C(8, 4) = 70 splits, 10 of them judged


def _cores(rng, n: int, mbit: float) -> list[np.ndarray]:
    out = []
    for _ in range(n):
        pts = pd.DataFrame(
            {"t_s": np.arange(12) * 0.2, "mbit": rng.normal(mbit, 1.0, 12), "queue_ms": rng.uniform(5, 30, 12)}
        )
        out.append(Envelope(pts).core())
    return out


def test_envelope_verdict_from_the_difference_to_the_kernels_own_overlap():
    rng = np.random.default_rng(6)
    kernel = _cores(rng, 5, 18.0)
    slow = _cores(rng, 5, 9.0)  # half the kernel's throughput: a different envelope
    same = _cores(rng, 5, 18.0)
    t = envelope_test(overlap_matrix(slow + kernel), [False] * 5 + [True] * 5, alpha=0.01)
    assert t.verdict == "differs" and t.between < 0.05 < t.within and t.smallest_p == pytest.approx(1 / 252)
    t = envelope_test(overlap_matrix(same + kernel), [False] * 5 + [True] * 5, alpha=0.01)
    assert t.verdict == "inconclusive" and abs(t.difference) < 0.2
    # 3 rounds a side: 20 labellings, p at best 0.05, never "differs" at 0.01
    t = envelope_test(overlap_matrix(slow[:3] + kernel[:3]), [False] * 3 + [True] * 3, alpha=0.01)
    assert t.verdict == "inconclusive" and t.p_value == pytest.approx(0.05) and "at best p = 0.05" in t.reason
    assert envelope_test(overlap_matrix(slow[:2] + kernel[:1]), [False, False, True]).verdict == "not measurable"


def test_fingerprint_reads_both_sides_transport_parameters():
    from longlook.kinds.conformance.params import read_trace
    from longlook.kinds.conformance.params.fingerprint import fingerprint

    rows = fingerprint(read_trace(DATA / "conformance" / "quic-go-newreno.sqlog.gz"))
    got = {(r["side"], r["field"]): r["value"] for r in rows}
    assert got[("server", "initial_max_data")] == 786432  # quic-go's 768 KiB connection window
    assert got[("server", "max_ack_delay")] == 26
    assert got[("client", "initial_max_stream_data_bidi_remote")] == 524288
    assert got[("server", "max_datagram_sent")] == 1366


def _alone(**figures):
    base = {
        "run_id": "r",
        "cell_id": "c",
        "round": 0,
        "arm": "alone",
        "status": "ok",
        "protocol_requested": None,
        "protocol_negotiated": "h3",
        "mbit": 10.0,
        "transfer_s": 4.0,
        "server_cpu_s": 0.5,
        "client_cpu_s": 0.5,
        "cwnd_bytes": 200_000.0,
        "inflight_share": 0.95,
        "loss_episodes": 2.0,
        "queue_ms": 10.0,
        "sender_queue_ms": 10.0,
        "min_rtt_ms": 36.0,
        "idle_share": 0.0,
    }
    return pd.DataFrame([{**base, **figures}])


@pytest.mark.parametrize(
    "figures, reason",
    [
        ({"mbit": 19.0}, "not slow"),
        ({"server_cpu_s": 3.9}, "CPU-bound (server)"),  # 3.9 s of CPU in a 4 s transfer
        ({"client_cpu_s": 3.6}, "CPU-bound (client)"),
        ({"cwnd_bytes": 40_000.0}, "window-limited"),  # BDP at 20 Mbit/s x 36 ms: 90 KB
        ({"inflight_share": 0.3}, "flow-control or application-limited"),
        ({"loss_episodes": 20.0, "queue_ms": 2.0}, "loss-limited"),
        # the sender's RTT rose 120 ms, the router's queue (a 90 KB buffer drains in 36 ms at 20 Mbit/s) did not
        ({"sender_queue_ms": 120.0}, "processing-limited"),
        ({"idle_share": 0.3}, "stalled"),
        # evenly spaced sends at 9 Mbit/s, a window that allows 40, 40% of it in flight
        ({"send_mbit": 9.0, "gap_regularity": 0.8, "window_mbit": 40.0, "inflight_share": 0.4}, "pacing-limited"),
        (
            {"send_mbit": 9.0, "gap_regularity": 0.1, "window_mbit": 40.0, "inflight_share": 0.4},
            "flow-control or application-limited",
        ),  # the same rate in lumps
        ({}, "not diagnosed"),
    ],
)
def test_slow_stacks_are_diagnosed_with_their_evidence(figures, reason):
    from longlook.kinds.conformance.aggregate import diagnose

    d = diagnose(_alone(**figures), 20.0, 4_000_000, buffer_bytes=90_000)
    assert d["reason"].startswith(reason), d
    assert d["slow"] == (reason != "not slow")
    if d["slow"]:
        assert "cores" in d["evidence"] and "BDP" in d["evidence"]


class _Store:
    """What the conformance section reads of a store: cells, each run's envelope series, the
    conformance table."""

    def __init__(self, runs: pd.DataFrame, table: pd.DataFrame, rng):
        self.runs, self._table, self._series = runs, table, {}
        for r in runs.itertuples():
            flow = "kernel" if r.arm == "kernel" else "stack"
            t = np.arange(12) * 0.2
            rows = [{"name": "mbit", "key": flow, "t_s": x, "value": v} for x, v in zip(t, rng.normal(18, 1, 12))]
            rows += [{"name": "queue_ms", "key": flow, "t_s": x, "value": v} for x, v in zip(t, rng.uniform(5, 30, 12))]
            self._series[r.run_id] = pd.DataFrame(rows)

    def cells_frame(self):
        return pd.DataFrame(
            {
                "cell_id": ["c1"],
                "dims": [{"stack": "ours", "cc": "cubic", "rate_mbit": 20, "rtt_ms": 36, "buffer_bytes": 90000}],
            }
        )

    def series(self, run_id):
        return self._series[run_id]

    def table(self, name):
        if name != "conformance":
            raise KeyError(name)
        return self._table


def test_the_section_shows_the_kernels_own_overlap_and_the_verdicts():
    from types import SimpleNamespace

    from longlook.core.spec import Statistics
    from longlook.kinds.conformance.sections import conformance_html

    rng = np.random.default_rng(8)
    runs = []
    for r in range(3):
        for arm in ("alone", "kernel", "shared"):
            runs.append(
                {
                    "run_id": f"c1-{arm}-{r}",
                    "cell_id": "c1",
                    "round": r,
                    "arm": arm,
                    "status": "ok",
                    "protocol_requested": None,
                    "protocol_negotiated": "h3",
                    "mbit": 18.0 + r,
                    "ref_mbit": 9.0 if arm == "shared" else None,
                    "share": 0.6 if arm == "shared" else None,
                    "transfer_s": 2.0,
                    "min_rtt_ms": 36.0,
                }
            )
    runs = pd.DataFrame(runs)
    table = pd.DataFrame(
        _param_rows("c1", "stack", "initial_window", [12000.0] * 3, 12000.0, "bytes")
        + _param_rows("c1", "kernel", "initial_window", [14480.0] * 3, 14480.0, "bytes")
    )
    analysis = SimpleNamespace(runs=runs, exclude_flagged=True, statistics=Statistics(holm=True))
    html = conformance_html(_Store(runs, table, rng), analysis)
    for text in (
        "kernel with itself",
        "envelope verdict",
        "at best p = 0.05",
        "(Holm)",
        "Holm-adjusted",
        "kernel against itself",
        "too few runs to split",
        "12000 [12000–12000] (n=3)",
        "conforms",
    ):
        assert text in html, text
