"""qlog.window_across: any stack's server window across a change of its peer's address, read
around its first PATH_CHALLENGE. The shapes are those of the stacks' logs across a NAT
rebinding (quic-go, ngtcp2, aioquic, gm-quic, 20 Mbit/s x 20 ms)."""

from __future__ import annotations

from longlook.qlog.reader import qlog_from_events
from longlook.qlog.window_across import window_across


def _cwnd(t, w, path=None):
    e = {"time": t, "name": "recovery:metrics_updated", "data": {"congestion_window": w}}
    if path is not None:
        e["path"] = path
    return e


def _challenge(t):
    return {"time": t, "name": "transport:packet_sent", "data": {"frames": [{"frame_type": "path_challenge"}]}}


def _sent(t):
    return {"time": t, "name": "transport:packet_sent", "data": {"frames": [{"frame_type": "stream"}]}}


def test_a_cut_back_to_the_initial_window_is_a_reset_even_after_a_loss_response_in_the_same_ms():
    """quic-go: x0.7 for the packets lost to the dead binding, then the new path's window
    (32 packets of 1200 bytes where the first path had 32 of 1280), one millisecond."""
    log = qlog_from_events(
        [_cwnd(5, 40_960), _cwnd(940, 122_305), _cwnd(972, 123_735), _challenge(1000), _sent(1001)]
        + [_cwnd(1050.3, 86_614), _cwnd(1050.4, 38_400), _cwnd(1071, 39_600), _cwnd(1300, 110_400)]
    )
    w = window_across(log)
    assert (w.outcome, w.before, w.lowest, w.reductions) == ("reset", 123_735, 38_400, 1)
    assert round(w.lowest_at_ms, 1) == 50.4 and w.initial == 40_960


def test_a_reset_just_before_the_challenge_counts_and_one_loss_response_is_kept():
    """ngtcp2: a new address resets at the packet from it, within the millisecond before its
    challenge; a port change only brings one x0.7 for the lost packets."""
    reset = qlog_from_events([_cwnd(3, 14_520), _cwnd(950, 118_862), _cwnd(999.5, 14_520), _challenge(1000)])
    assert window_across(reset).outcome == "reset"
    kept = qlog_from_events(
        [_cwnd(3, 14_520), _cwnd(1050, 127_410), _challenge(1078), _cwnd(1099, 89_209), _cwnd(1140, 89_300)]
    )
    w = window_across(kept)
    assert (w.outcome, w.before, w.lowest, w.reductions) == ("reduced", 127_410, 89_209, 1)


def test_growing_back_through_the_initial_window_after_a_collapse_is_not_a_reset():
    """aioquic: one cut to about the minimum window, then slow start back up through 12,000."""
    events = [_cwnd(2, 12_000), _cwnd(975, 140_657), _challenge(1000), _cwnd(1077, 4_270)]
    events += [_cwnd(1077 + i, 4_270 + 1_200 * i) for i in range(1, 20)]
    w = window_across(qlog_from_events(events))
    assert (w.outcome, w.lowest, w.reductions) == ("reduced", 4_270, 1)


def test_a_window_on_a_path_first_seen_at_the_change_is_a_new_controller():
    """gm-quic: each path has its own controller, and the log names the path of each window
    (its state marks `<->` and `---` are the same path)."""
    old, new = "0.0.0.0:4436<->198.18.5.1:20000", "0.0.0.0:4436<->198.18.6.1:20001"
    events = [_cwnd(1, 12_656, old), _cwnd(900, 46_740, old.replace("<->", "---")), _challenge(1010)]
    events += [_cwnd(1030, 23_000, old), _cwnd(1054, 10_800, new), _cwnd(1100, 14_000, new)]
    w = window_across(qlog_from_events(events))
    assert (w.outcome, w.before, w.lowest, round(w.lowest_at_ms)) == ("new controller", 46_740, 10_800, 44)


def test_no_cut_is_kept_and_a_small_window_cannot_show_a_reset():
    kept = qlog_from_events([_cwnd(1, 12_000), _cwnd(900, 60_000), _challenge(1000), _cwnd(1040, 61_000)])
    assert window_across(kept).outcome == "kept"
    small = qlog_from_events([_cwnd(1, 12_000), _cwnd(900, 15_000), _challenge(1000), _cwnd(1040, 12_000)])
    assert window_across(small).outcome == "indistinct"


def test_nothing_is_said_without_a_challenge_or_a_window():
    assert window_across(qlog_from_events([_cwnd(1, 12_000), _cwnd(900, 60_000)])) is None
    assert window_across(qlog_from_events([_challenge(1000)])) is None
