"""The audit's reading of linkem's own stalls, without a testbed: the stall events that
overlap a run's window flag it, and the proxy topology's two linkems cover up to the older
of them. A linkem really stopped inside a run:
tests/testbed/core/test_linkem_queue_wait_testbed.py."""

from __future__ import annotations


def test_the_audit_judges_linkem_stalls_that_overlap_the_window():
    """Pure logic: events are [end_mono_ms, length_ms]; one that began in the window and ended
    after it counts, one that ended before it does not; the reason names the stall."""
    from longlook.core.audit import linkem_audit
    from longlook.core.spec import Fidelity

    after = {
        "directions": {
            "up": {"late_read_events": [[900.0, 50.0], [1130.0, 140.2]], "late_wakeup_events": [[1000.0, 3.0]]},
            "down": {"late_read_events": [], "late_wakeup_events": [[2095.0, 120.0]]},
        }
    }
    a = linkem_audit({}, after, 1000.0, 2000.0).judge(Fidelity())
    assert a.max_read_wait_ms == 140.2  # 900 ended before the window
    assert a.max_wakeup_late_ms == 120.0  # began at 1975, inside
    assert "linkem read a packet 140.2 ms after the kernel queued it (linkem stalled; limit 5 ms)" in a.reasons
    assert any(r.startswith("linkem woke 120.0 ms later than it asked") for r in a.reasons)
    quiet = linkem_audit({}, {"directions": {"up": {"late_read_events": [[1500.0, 1.5]]}}}, 1000.0, 2000.0)
    assert not quiet.judge(Fidelity()).flagged and quiet.max_read_wait_ms == 1.5
    old = linkem_audit({}, {"directions": {"up": {"packets": 3}}}, 0.0, 1.0)  # a linkem without them
    assert old.max_read_wait_ms is None and old.max_wakeup_late_ms is None


def test_two_segments_cover_up_to_the_older_of_their_linkems():
    """The proxy topology's merged document covers only what both linkems cover; with one
    linkem that does not say, the audit falls back to waiting an interval."""
    from longlook.testbed.testbed import merged_stats

    a = {"mono_ms": 10.0, "covers_mono_ms": 9.0, "directions": {}}
    b = {"mono_ms": 12.0, "covers_mono_ms": 7.5, "directions": {}}
    assert merged_stats(a, b)["covers_mono_ms"] == 7.5
    assert "covers_mono_ms" not in merged_stats(a, {"mono_ms": 12.0, "directions": {}})
    assert "covers_mono_ms" not in merged_stats({"mono_ms": 12.0, "directions": {}}, b)
