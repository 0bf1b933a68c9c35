"""The migration fingerprint section's summaries of its runs: a share counts only the runs
whose capture could show the item, and the unvalidated bytes are judged against 3x."""

from __future__ import annotations

from longlook.report.sections.migration import _amplification, _mode, _seen, _share


def test_an_item_not_shown_is_counted_apart():
    prints = [
        {"challenge_ms": 30.0, "hidden": 0},
        {"challenge_ms": None, "hidden": 0},
        {"challenge_ms": None, "hidden": 3},
    ]
    assert _seen(prints, "challenge_ms") == [True, False, None]
    assert _share(_seen(prints, "challenge_ms"), 3) == "1 of 2 (1 not shown)"
    assert _share([None, None], 2) == "–"


def test_the_worst_run_decides_the_amplification():
    prints = [
        {"unvalidated_sent": 2500, "unvalidated_received": 1200},
        {"unvalidated_sent": 4000, "unvalidated_received": 1200},
        {"unvalidated_sent": 10, "unvalidated_received": 0},
    ]
    assert _amplification(prints) == "3.3x (over 3x)"
    assert _amplification(prints[:1]) == "2.1x (within 3x)"
    assert _amplification([]) == "–"


def test_the_mode_says_when_runs_disagree():
    assert _mode([True, True, False]) == "yes (2 of 3)"
    assert _mode([4, 4]) == "4"
    assert _mode([None]) == "–"
