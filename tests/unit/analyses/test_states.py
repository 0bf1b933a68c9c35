"""State-machine inference, invariants, loss accounting and diff on synthetic traces with
known answers."""

import math

import pytest

from longlook.analyses.states import (
    StateTrace,
    TransitionGraph,
    compare,
    holds,
    loss_accounting,
    mine_invariants,
    qlog_from_events,
    to_dot,
    to_svg,
)
from longlook.analyses.states.dot import dot_available
from longlook.qlog import parse_records
from longlook.analyses.states.runs import RunLogs, parse_source
from states_synthetic import ev, linkem, quic_log, tcp_log

T1 = ["SlowStart", "Recovery", "CongestionAvoidance", "Recovery", "CongestionAvoidance"]
T2 = ["SlowStart", "CongestionAvoidance"]


def _trace(states, run_id="r"):
    return StateTrace.from_qlog(quic_log(states), run_id)


def test_trace_states_times_and_dwell():
    events = [
        ev(10, "recovery:congestion_state_updated", old="Init", new="SlowStart"),
        ev(40, "recovery:congestion_state_updated", old="SlowStart", new="Recovery"),
        ev(40.5, "recovery:congestion_state_updated", old="Recovery", new="Recovery"),  # no transition
        ev(100, "recovery:congestion_state_updated", old="Recovery", new="CongestionAvoidance"),
        ev(250, "longlook:loss_summary"),
    ]
    t = StateTrace.from_qlog(qlog_from_events(events), "run1")
    assert t.states == ["Init", "SlowStart", "Recovery", "CongestionAvoidance"]
    assert t.dwell_ms() == pytest.approx([10, 30, 60, 150])
    assert t.transitions() == [("Init", "SlowStart"), ("SlowStart", "Recovery"), ("Recovery", "CongestionAvoidance")]


def test_tcp_tracepoint_events_out_of_order_are_sorted():
    events = [
        ev(1, "recovery:congestion_state_updated", old="Init", new="Open"),
        ev(30, "recovery:congestion_state_updated", old="Disorder", new="Open"),
        ev(20, "recovery:congestion_state_updated", old="Open", new="Disorder"),
    ]
    t = StateTrace.from_qlog(qlog_from_events(events, "TCP"), "tcp")
    assert t.protocol == "TCP" and t.states == ["Init", "Open", "Disorder", "Open"]


def test_truncated_last_record_is_skipped():
    raw = b'\x1e{"qlog_format":"JSON-SEQ"}\n\x1e{"time":1,"name":"x","data":{}}\n\x1e{"time":2,"na'
    assert len(parse_records(raw)) == 2


def test_transition_graph_counts_probabilities_entries():
    g = TransitionGraph.infer([_trace(T1, "a"), _trace(T2, "b")])
    assert g.n_traces == 2
    assert g.count("Init", "SlowStart") == 2 and g.probability("Init", "SlowStart") == 1.0
    assert g.probability("SlowStart", "Recovery") == 0.5
    assert g.probability("SlowStart", "CongestionAvoidance") == 0.5
    assert g.count("Recovery", "CongestionAvoidance") == 2
    assert g.probability("CongestionAvoidance", "Recovery") == 1.0
    assert g.count("Recovery", "SlowStart") == 0
    assert g.entries("Recovery").to_dict() == {"a": 2, "b": 0}
    assert g.entries("RetransmissionTimeout").sum() == 0
    # probabilities out of each state sum to 1
    sums = g.transitions.groupby("src")["probability"].sum()
    assert all(math.isclose(s, 1.0) for s in sums)
    states = g.states.set_index("state")
    assert states.loc["Recovery", "entries"] == 2 and states.loc["Recovery", "runs"] == 1
    assert states["dwell_share"].sum() == pytest.approx(1.0)
    # each visit lasts 10 ms in the synthetic log (the last one 0: end of log)
    assert states.loc["Recovery", "dwell_total_ms"] == pytest.approx(20)


def test_invariants_that_must_and_must_not_hold():
    traces = [["Init", *T1], ["Init", *T2]]
    found = {str(i) for i in mine_invariants(traces)}
    must = [
        "SlowStart AlwaysFollowedBy CongestionAvoidance",
        "Recovery AlwaysFollowedBy CongestionAvoidance",
        "Init AlwaysPrecedes Recovery",
        "SlowStart AlwaysPrecedes CongestionAvoidance",
        "CongestionAvoidance NeverFollowedBy SlowStart",
        "Recovery NeverFollowedBy SlowStart",
        "SlowStart NeverFollowedBy SlowStart",
    ]
    must_not = [
        "SlowStart AlwaysFollowedBy Recovery",  # trace 2 has no Recovery
        "CongestionAvoidance NeverFollowedBy Recovery",  # trace 1: CA -> Recovery
        "Recovery AlwaysPrecedes CongestionAvoidance",  # trace 2: CA without Recovery
        "CongestionAvoidance AlwaysPrecedes Recovery",  # trace 1: CA only after the first Recovery
        "Recovery NeverFollowedBy Recovery",  # Recovery twice in trace 1
        "CongestionAvoidance AlwaysFollowedBy Recovery",
    ]  # both end in CA
    for inv in must:
        assert inv in found, inv
    for inv in must_not:
        assert inv not in found, inv
    assert holds("AlwaysFollowedBy", "SlowStart", "CongestionAvoidance", traces)
    assert not holds("NeverFollowedBy", "CongestionAvoidance", "Recovery", traces)
    # vacuous invariants (premise never seen) are not listed
    assert not any("Loss" in s for s in found)


def test_quic_loss_accounting_against_the_link():
    log = quic_log(
        T1, batches=["reordering_threshold", "reordering_threshold", "time_threshold"], lost_packets=10, lost_probes=1
    )
    acc = loss_accounting(log, "q", linkem(drops=4, reordered=30))
    assert (acc.declared_lost, acc.loss_events) == (10, 3)
    assert (acc.by_packet_threshold, acc.by_time_threshold) == (2, 1)
    assert acc.network_drops == 4 and acc.network_reordered == 30
    assert acc.spurious == 7  # 10 declared - (4 dropped - 1 lost PLPMTUD probe, not declared)
    clean = loss_accounting(quic_log(T1, batches=["time_threshold"], lost_packets=5), "c", linkem(drops=5))
    assert clean.spurious == 0
    assert loss_accounting(quic_log(T1, lost_packets=5), "x", None).spurious is None


def test_tcp_loss_accounting_dsack_and_link():
    acc = loss_accounting(
        tcp_log(["Open", "Disorder", "Open", "Recovery", "Open"], total_retrans=5, dsack=3), "t", linkem(drops=1)
    )
    assert acc.protocol == "TCP" and acc.declared_lost == 5 and acc.loss_events == 1
    assert acc.dsack_spurious == 3 and acc.spurious_lower_bound == 4 and acc.spurious == 4


def _runs(label, traces, **kw):
    return [
        RunLogs(
            run_id=f"{label}{i}",
            cell_id=label,
            arm="h3",
            round=i,
            log=quic_log(s, lost_packets=kw.get("lost", [0] * len(traces))[i]),
            linkem=linkem(drops=0),
        )
        for i, s in enumerate(traces)
    ]


def test_diff_finds_what_appears_vanishes_and_changes():
    clean = _runs("A", [["SlowStart", "CongestionAvoidance", "Recovery", "CongestionAvoidance"]] * 8)
    reordered = _runs(
        "B",
        [["SlowStart", *(["Recovery", "CongestionAvoidance"] * k), "TailLossProbe"] for k in (5, 6, 7, 8, 5, 6, 7, 8)],
        lost=[20, 25, 30, 35, 20, 25, 30, 35],
    )
    d = compare(clean, reordered, "QUIC", alpha=0.01)
    assert d.n_a == d.n_b == 8
    rec = d.row("enter:Recovery")
    assert rec["status"] == "more" and rec["significant"] and rec["mean_a"] == 1 and rec["mean_b"] == 6.5
    assert d.row("SlowStart->Recovery")["status"] == "appears"
    assert d.row("SlowStart->Recovery")["significant"]  # Fisher 0/8 vs 8/8
    assert d.row("CongestionAvoidance->TailLossProbe")["status"] == "appears"
    assert d.row("SlowStart->CongestionAvoidance")["status"] == "vanishes"
    assert d.row("Init->SlowStart")["status"] == "same"
    assert d.row("loss:spurious")["status"] == "appears" and d.row("loss:spurious")["mean_b"] == 27.5
    # no difference at all: nothing significant
    same = compare(clean[:4], clean[4:], "QUIC")
    assert (same.rows.status == "same").all()


def test_dot_has_states_and_weighted_edges():
    g = TransitionGraph.infer([_trace(T1, "a"), _trace(T2, "b")], group="h3")
    dot = to_dot(g)
    assert dot.startswith("digraph")
    assert '"SlowStart" -> "Recovery" [label="0.50 (1)"' in dot
    assert '"Recovery" -> "CongestionAvoidance" [label="1.00 (2)"' in dot
    assert '"Recovery" [label="Recovery\\n2 entries' in dot


@pytest.mark.skipif(not dot_available(), reason="Graphviz `dot` not installed (apt-get install -y graphviz)")
def test_svg_from_graphviz():
    svg = to_svg(to_dot(TransitionGraph.infer([_trace(T1)])))
    assert svg.startswith("<svg") and "Recovery" in svg


def test_parse_source(tmp_path):
    assert parse_source(str(tmp_path)) == (tmp_path, None)
    assert parse_source(f"{tmp_path}:link=10mbit|wl=1x1m") == (tmp_path, "link=10mbit|wl=1x1m")


def test_cwnd_timeline_marks_losses_and_states():
    from longlook.analyses.states.timeline import cwnd_figure_svg, cwnd_series, loss_times_s

    quic = quic_log(T1, batches=["reordering_threshold", "time_threshold"])
    tcp = tcp_log(["Open", "Recovery", "Open"])
    tcp.events.insert(2, ev(15, "recovery:metrics_updated", congestion_window=20000, total_retrans=2))
    t, w = cwnd_series(quic)
    assert t[0] == pytest.approx(0.010) and w == [12 + i for i in range(len(T1))]
    assert len(loss_times_s(quic)) == 2
    assert loss_times_s(tcp) == [pytest.approx(0.015)]  # one increment of total_retrans
    svg = cwnd_figure_svg([("QUIC", quic), ("TCP", tcp)], "test")
    assert svg.startswith("<svg") and "loss events (2)" in svg and "loss events (1)" in svg


def test_diff_adjusts_with_the_one_holm():
    import numpy as np

    import longlook.analyses.states.diff as diff
    from longlook.core.multiple import holm

    assert not hasattr(diff, "holm_adjust")  # no second Holm
    clean = _runs("A", [["SlowStart", "CongestionAvoidance", "Recovery", "CongestionAvoidance"]] * 8)
    reordered = _runs(
        "B",
        [["SlowStart", *(["Recovery", "CongestionAvoidance"] * k), "TailLossProbe"] for k in (5, 6, 7, 8, 5, 6, 7, 8)],
        lost=[20, 25, 30, 35, 20, 25, 30, 35],
    )
    rows = compare(clean, reordered, "QUIC").rows
    assert np.allclose(rows["p_adjusted"], holm(rows["p"]), equal_nan=True)
    raw = compare(clean, reordered, "QUIC", holm=False).rows
    assert np.allclose(raw["p_adjusted"], raw["p"], equal_nan=True)


def _with_recovery(label, k, n=10):
    """n runs, the first k of which enter Recovery once (CongestionAvoidance->Recovery)."""
    plain = ["SlowStart", "CongestionAvoidance"]
    return _runs(label, [plain + ["Recovery", "CongestionAvoidance"] if i < k else plain for i in range(n)])


def test_one_run_of_ten_is_not_an_appearance():
    """0 of 10 runs against 1 of 10: Fisher p = 1, so "same"; the data's way ("appears", only
    in B, 1 of 10 runs) stays in `direction`, and `p` is Fisher's, not the counts'."""
    from longlook.analyses.states.diff import direction_text

    d = compare(_with_recovery("A", 0), _with_recovery("B", 1), "QUIC", alpha=0.01)
    r = d.row("CongestionAvoidance->Recovery")
    assert r["status"] == "same" and not r["significant"]
    assert r["direction"] == "appears" and r["presence_change"]
    assert r["test"] == "fisher" and r["p"] == r["p_presence"] == pytest.approx(1.0)
    row = d.rows[d.rows["item"] == "CongestionAvoidance->Recovery"].iloc[0]
    assert direction_text(row) == "only in B, 1 of 10 runs"
    assert d.significant().empty
    # the same without Holm (as a claim naming this one item calls it): still "same"
    assert (
        compare(_with_recovery("A", 0), _with_recovery("B", 1), "QUIC", holm=False).row(
            "CongestionAvoidance->Recovery"
        )["status"]
        == "same"
    )
    # and the other way round it does not vanish either
    assert (
        compare(_with_recovery("A", 1), _with_recovery("B", 0), "QUIC").row("CongestionAvoidance->Recovery")["status"]
        == "same"
    )


def test_every_run_against_none_appears():
    d = compare(_with_recovery("A", 0), _with_recovery("B", 10), "QUIC", alpha=0.01)
    r = d.row("CongestionAvoidance->Recovery")
    assert r["status"] == "appears" and r["significant"] and r["test"] == "fisher"
    assert r["p"] == pytest.approx(2 / math.comb(20, 10)) and r["p_adjusted"] < 0.01
    back = compare(_with_recovery("A", 10), _with_recovery("B", 0), "QUIC").row("CongestionAvoidance->Recovery")
    assert back["status"] == "vanishes" and back["direction"] == "vanishes"


def test_compare_is_counting_then_diff_counts():
    """What the calibration entry simulates (diff_counts on per-run counts) is what compare runs."""
    from pandas.testing import assert_frame_equal

    from longlook.analyses.states.diff import diff_counts, per_run_counts

    a, b = _with_recovery("A", 2), _with_recovery("B", 9)
    assert_frame_equal(
        compare(a, b, "QUIC", alpha=0.05).rows, diff_counts(per_run_counts(a), per_run_counts(b), alpha=0.05)
    )


def test_an_item_without_data_on_one_side_is_not_a_change():
    """Loss counts unknown on one side (no link counters): no test, so "same", never "appears"."""
    import numpy as np
    import pandas as pd

    from longlook.analyses.states.diff import diff_counts

    a = pd.DataFrame({"loss:spurious": [np.nan] * 6})
    b = pd.DataFrame({"loss:spurious": [3.0, 4, 5, 6, 7, 8]})
    r = diff_counts(a, b).iloc[0]
    assert r["n_a"] == 0 and not r["presence_change"] and r["status"] == "same" and math.isnan(r["p"])


def test_machines_and_cwnd_timelines_per_server_stack():
    """Two QUIC server stacks in one experiment are two machines labelled by stack and version
    (not one "QUIC"), each with its states' source, and each gets its own cwnd timeline."""
    from longlook.analyses.states import analyse_runs
    from longlook.analyses.states.export import cwnd_groups

    def run(i, arm, log, server=None):
        return RunLogs(run_id=f"{arm}{i}", cell_id="c", arm=arm, round=i, log=log, linkem=linkem(), server=server)

    derived = quic_log(T1)
    derived.header["trace"]["longlook"] = {"stack": "ngtcp2", "states": "derived"}
    runs = [
        *(run(i, "quinn", quic_log(T1)) for i in range(3)),
        *(run(i, "ngtcp2", derived, server="ngtcp2@0.12.1") for i in range(3)),
        *(run(i, "h2", tcp_log(["Open", "Recovery", "Open"])) for i in range(3)),
    ]
    a = analyse_runs(runs)
    labels = {m.arm: (m.stack, m.states_source, m.label) for m in a.machines}
    assert labels == {
        "quinn": ("ours", "emitted", "server ours, arm quinn"),
        "ngtcp2": ("ngtcp2@0.12.1", "derived", "server ngtcp2@0.12.1, arm ngtcp2"),
        "h2": ("TCP", "emitted", "arm h2"),
    }
    from longlook.analyses.states.export import analysis_json

    assert {m["arm"]: m["states_source"] for m in analysis_json(a)["machines"]}["ngtcp2"] == "derived"
    groups = cwnd_groups(a)
    assert [s for s, _ in groups] == ["ours", "ngtcp2@0.12.1"]
    assert all([log.protocol for _, log in logs] == ["QUIC", "TCP"] for _, logs in groups)


def test_logs_without_states_are_not_measured_never_vanished():
    """A release whose logs recorded no state (a stack that stopped writing them) is missing
    data: the diff says "not measured" and the release history's change item says so, instead
    of every transition "vanishing" or "no item changed"."""
    from longlook.report.sections.releases import change_item

    with_states = _runs("A", [["SlowStart", "CongestionAvoidance", "Recovery", "CongestionAvoidance"]] * 8)
    without = _runs("B", [[]] * 8)  # logs with events, but no congestion_state_updated
    assert not without[0].trace().recorded() and with_states[0].trace().recorded()
    d = compare(with_states, without, "QUIC", label_a="v1", label_b="v2")
    assert not d.measured and d.n_a == 8 and d.n_b == 0 and d.unrecorded_b == 8
    assert d.rows.empty and "v2 has no QUIC run with states (8 logs without any)" in d.not_measured_text()
    item = change_item("v1", "v2", "+20%", [d])
    assert "not measured" in item and "vanish" not in item and "no state-machine item changed" not in item
    assert "no run on either side has a state log" in change_item("v1", "v2", "+20%", [])
    partial = compare(with_states, without + _runs("C", [["SlowStart", "CongestionAvoidance"]] * 8), "QUIC")
    assert partial.measured and partial.n_b == 8 and partial.unrecorded_b == 8
