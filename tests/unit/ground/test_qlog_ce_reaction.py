"""qlog.ce_reaction: the window's answer to CE marks and to losses, from a sender's qlog."""

from __future__ import annotations

from longlook.qlog.ce_reaction import reactions
from longlook.qlog.reader import qlog_from_events


def _ack(t, ce):
    return {"time": t, "name": "transport:packet_received", "data": {"frames": [{"frame_type": "ack", "ce": ce}]}}


def _w(t, w, srtt=20.0):
    return {"time": t, "name": "recovery:metrics_updated", "data": {"congestion_window": w, "smoothed_rtt": srtt}}


def _lost(t):
    return {"time": t, "name": "recovery:packet_lost", "data": {}}


def test_a_ce_mark_that_cuts_the_window_once_by_its_factor():
    log = qlog_from_events(
        [_w(0, 100_000), _ack(10, 0), _ack(20, 1), _w(21, 70_000), _ack(25, 3), _w(26, 70_500), _w(60, 71_000)]
    )
    r = reactions(log)
    assert r.ce_reported and (r.ce.signals, r.ce.reduced, r.ce.factors, r.ce.again_within_rtt) == (1, 1, [0.7], 0)
    assert r.loss.signals == 0


def test_a_second_cut_within_one_round_trip_is_counted_apart_and_ignored_marks_are_no_reaction():
    twice = qlog_from_events([_w(0, 100_000), _ack(20, 1), _w(21, 50_000), _ack(25, 2), _w(30, 25_000)])
    r = reactions(twice)
    assert (r.ce.signals, r.ce.reduced, r.ce.again_within_rtt) == (1, 1, 1)
    ignored = reactions(qlog_from_events([_w(0, 100_000), _ack(20, 1), _w(30, 101_000), _w(70, 102_000)]))
    assert (ignored.ce.signals, ignored.ce.reduced) == (1, 0)


def test_a_loss_beside_a_mark_is_not_credited_to_either_and_a_log_without_counts_says_so():
    mixed = reactions(qlog_from_events([_w(0, 100_000), _ack(20, 1), _lost(21), _w(22, 70_000)]))
    assert (mixed.ce.signals, mixed.ce.reduced, mixed.ce.factors) == (1, 0, [])
    loss = reactions(qlog_from_events([_w(0, 100_000), _lost(21), _w(22, 50_000)]))
    assert (loss.loss.reduced, loss.loss.factors, loss.ce_reported) == (1, [0.5], False)


def test_our_endpoints_own_ce_event_is_a_signal():
    our = {"time": 20, "name": "longlook:ecn_ce", "data": {"largest_marked_sent_time": 15.0}}
    r = reactions(qlog_from_events([_w(0, 100_000), our, _w(20, 70_000)]))
    assert r.ce_reported and (r.ce.signals, r.ce.reduced, r.ce.factors) == (1, 1, [0.7])


def test_a_cut_logged_just_before_the_ack_that_caused_it_is_its_reaction():
    """quic-go logs the window it cut while processing an ACK, then the packet's frames."""
    r = reactions(qlog_from_events([_w(0, 209_920), _w(177.9, 146_944), _ack(177.9, 1), _w(200, 147_000)]))
    assert (r.ce.signals, r.ce.reduced, r.ce.factors) == (1, 1, [0.7])
