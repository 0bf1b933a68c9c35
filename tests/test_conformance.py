"""The conformance kind without a testbed: its scenario part (one clear error per bad
field), the envelope overlap, the interval across rounds (a coverage simulation), the
share comparison and the per-parameter summary on a synthetic store frame."""

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
from longlook.kinds.conformance.aggregate import coverage, parameter_summary, share_comparisons, verdict_of
from longlook.kinds.conformance.envelope import Envelope, envelope_points, mean_interval, overlap
from longlook.kinds.conformance.measure import shared_window_share
from longlook.kinds.conformance.params import from_qlog
from longlook.qlog import qlog_from_events

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
    assert got == {("ours", "cubic", "cubic"), ("ours", "newreno", "reno"), ("ours", "bbr", "bbr"),
                   ("tquic", "bbr", "bbr"), ("tquic", "cubic", "cubic"), ("tquic", "bbr3", "bbr")}
    assert [a.label for a in s.arm_list()] == ["alone", "kernel", "shared", "fingerprint"]
    assert s.comparisons() == [("alone", "kernel")]
    assert get_kind("conformance").tables["conformance"]["verdict"] == "VARCHAR"


def test_our_knobs_make_their_own_cell():
    s = scenario('stacks = [{ stack = "ours", ccs = ["cubic"] }, '
                 '{ stack = "ours", ccs = ["cubic"], initial_window_packets = 100 }]\ninclude = ["alone"]\n')
    assert [c.id for c in s.cells()] == ["ours-cubic-buf90000", "ours-iw100-cubic-buf90000"]
    assert s.comparisons() == []


@pytest.mark.parametrize("extra, field", [
    ('stacks = ["nosuch"]\n', "nosuch"),
    ('stacks = [{ stack = "quiche", ccs = ["copa"] }]\n', "ccs"),
    ('stacks = [{ stack = "tquic", ccs = ["copa"] }]\n', "Linux reference"),
    ('stacks = [{ stack = "quiche", initial_window_packets = 100 }]\n', "initial_window_packets"),
    ('stacks = [{ stack = "ours", colour = "red" }]\n', "colour"),
    ('stacks = ["ours"]\nobject_size = "10"\n', "object_size"),
    ('stacks = ["ours"]\ninclude = ["alone", "alone"]\n', "include"),
    ('stacks = ["ours"]\ninclude = ["both"]\n', "include"),
    ('stacks = []\n', "stacks"),
])
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
    c = FlowCounters(t=t, bytes=np.cumsum(np.full(t.size, 1250)), packets=np.arange(1, t.size + 1),
                     dropped_buffer=np.zeros(t.size, dtype=int))
    q = RouterQueue(t=t, packets=np.ones(t.size), sum_ms=np.full(t.size, 4.0), max_ms=np.full(t.size, 4.0))
    q.max_ms[75] = 6.0  # t = 5.75: the second bin
    ev = [{"time": 0.0, "name": "recovery:metrics_updated", "data": {"congestion_window": 12000, "min_rtt": 30.0,
                                                                      "latest_rtt": 30.0}}]
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
        {"t": 0.1, "direction": "down", "proto": "udp", "src": "s:1", "dst": "c:1", "packets": 5, "bytes": 7500,
         "dropped_loss": 0, "dropped_buffer": 0, "sojourn_packets": 3, "sojourn_ms_mean": 2.0, "sojourn_ms_max": 3.0},
        {"t": 0.1, "direction": "down", "proto": "tcp", "src": "s:2", "dst": "c:2", "packets": 1, "bytes": 1500,
         "dropped_loss": 0, "dropped_buffer": 0, "sojourn_packets": 1, "sojourn_ms_mean": 10.0, "sojourn_ms_max": 10.0},
        {"t": 0.2, "direction": "down", "proto": "udp", "src": "s:1", "dst": "c:1", "packets": 8, "bytes": 12000,
         "dropped_loss": 0, "dropped_buffer": 0, "sojourn_packets": 0, "sojourn_ms_mean": None, "sojourn_ms_max": None},
        {"t": 0.3, "direction": "down", "proto": "udp", "src": "s:1", "dst": "c:1", "packets": 9, "bytes": 13500,
         "dropped_loss": 0, "dropped_buffer": 0, "sojourn_packets": 2, "sojourn_ms_mean": 1.0, "sojourn_ms_max": 1.5},
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
    a = FlowCounters(t=t, bytes=np.cumsum(np.full(t.size, 3000)), packets=np.zeros(t.size), dropped_buffer=np.zeros(t.size))
    tb = t[t >= 2.0]  # the kernel flow starts 2 s later
    b = FlowCounters(t=tb, bytes=np.cumsum(np.full(tb.size, 1000)), packets=np.zeros(tb.size), dropped_buffer=np.zeros(tb.size))
    share, ref_mbit, window = shared_window_share(a, b)
    assert share == pytest.approx(0.75, abs=0.01) and window[0] == pytest.approx(2.0)
    assert ref_mbit == pytest.approx(0.08, rel=0.05)


def _runs(shared_pairs):
    rows = [{"run_id": f"r{i}", "cell_id": "c1", "round": i, "arm": "shared", "status": "ok",
             "protocol_requested": None, "protocol_negotiated": "h3", "mbit": a, "ref_mbit": b, "share": a / (a + b)}
            for i, (a, b) in enumerate(shared_pairs)]
    return pd.DataFrame(rows)


def test_share_is_compared_paired_per_run():
    rng = np.random.default_rng(1)
    base = rng.uniform(5, 15, 8)  # run-to-run swings both flows share
    runs = _runs([(x * 0.8, x) for x in base])
    c = share_comparisons(runs)["c1"]
    assert c.paired and c.test == "paired_t"
    assert c.percent_difference == pytest.approx(-20, abs=1)  # the stack 20% slower, clearly
    assert c.p_value < 0.01


def test_parameter_summary_takes_the_majority_of_measurable_verdicts():
    assert verdict_of(pd.Series({"deviates": 2, "conforms": 1})) == "deviates"
    assert verdict_of(pd.Series({"not measurable": 3})) == "not measurable"
    table = pd.DataFrame([
        {"run_id": f"r{i}", "stack": "ours", "version": "w", "cc": "cubic", "parameter": "initial_window",
         "measured": 12000.0, "reference": 12000.0, "unit": "bytes", "verdict": "conforms", "tolerance": "",
         "note": "", "flow": "stack", "arm": "alone"} for i in range(3)])
    runs = pd.DataFrame({"run_id": ["r0", "r1", "r2"], "cell_id": ["c1"] * 3})
    s = parameter_summary(table, runs)
    assert len(s) == 1 and s.iloc[0]["verdict"] == "conforms" and s.iloc[0]["runs"] == 3


def test_fingerprint_reads_both_sides_transport_parameters():
    from pathlib import Path

    from longlook.kinds.conformance.params import read_trace
    from longlook.kinds.conformance.params.fingerprint import fingerprint

    rows = fingerprint(read_trace(Path(__file__).parent / "data" / "conformance" / "quic-go-newreno.sqlog.gz"))
    got = {(r["side"], r["field"]): r["value"] for r in rows}
    assert got[("server", "initial_max_data")] == 786432  # quic-go's 768 KiB connection window
    assert got[("server", "max_ack_delay")] == 26
    assert got[("client", "initial_max_stream_data_bidi_remote")] == 524288
    assert got[("server", "max_datagram_sent")] == 1366


def _alone(**figures):
    base = {"run_id": "r", "cell_id": "c", "round": 0, "arm": "alone", "status": "ok", "protocol_requested": None,
            "protocol_negotiated": "h3", "mbit": 10.0, "transfer_s": 4.0, "server_cpu_s": 0.5, "client_cpu_s": 0.5,
            "cwnd_bytes": 200_000.0, "inflight_share": 0.95, "loss_episodes": 2.0, "queue_ms": 10.0, "sender_queue_ms": 10.0, "min_rtt_ms": 36.0,
            "idle_share": 0.0}
    return pd.DataFrame([{**base, **figures}])


@pytest.mark.parametrize("figures, reason", [
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
    ({"send_mbit": 9.0, "gap_regularity": 0.1, "window_mbit": 40.0, "inflight_share": 0.4},
     "flow-control or application-limited"),  # the same rate in lumps
    ({}, "not diagnosed"),
])
def test_slow_stacks_are_diagnosed_with_their_evidence(figures, reason):
    from longlook.kinds.conformance.aggregate import diagnose

    d = diagnose(_alone(**figures), 20.0, 4_000_000, buffer_bytes=90_000)
    assert d["reason"].startswith(reason), d
    assert d["slow"] == (reason != "not slow")
    if d["slow"]:
        assert "cores" in d["evidence"] and "BDP" in d["evidence"]
