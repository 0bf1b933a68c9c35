"""qlog.controllers: the sender's congestion controller across a path change."""

from __future__ import annotations

from longlook.qlog.controllers import ControllerChange, controllers
from longlook.qlog.reader import qlog_from_events


def _cc(t):
    return {"time": t, "name": "longlook:congestion_control", "data": {"algorithm": "cubic"}}


def _cwnd(t, w):
    return {"time": t, "name": "recovery:metrics_updated", "data": {"congestion_window": w}}


def test_a_new_controller_after_an_address_change_shows_the_reset_window():
    log = qlog_from_events([_cc(0.0), _cwnd(5, 12_000), _cwnd(900, 103_070), _cc(1020.5), _cwnd(1083, 12_000)])
    assert controllers(log) == (2, [ControllerChange(1020.5, 103_070, 12_000)])


def test_one_controller_is_state_kept_and_another_stacks_log_says_nothing():
    assert controllers(qlog_from_events([_cc(0.0), _cwnd(5, 12_000), _cwnd(900, 50_000)])) == (1, [])
    assert controllers(qlog_from_events([_cwnd(5, 12_000)])) is None


def test_the_old_controllers_last_window_may_share_the_new_ones_timestamp():
    """quinn logs the old path's metrics, then makes the new path's controller, in the same
    millisecond: file order decides which window is before the change."""
    log = qlog_from_events([_cc(0.0), _cwnd(955.345, 103_117), _cc(955.345), _cwnd(982.5, 12_000)])
    assert controllers(log) == (2, [ControllerChange(955.345, 103_117, 12_000)])
