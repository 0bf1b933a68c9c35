"""A cell's series in round order: the rounds every series has, the last attempt of a retried
round, only runs that count."""

from __future__ import annotations

import numpy as np
import pandas as pd

from longlook.core.round_series import round_series


def _run(cell, arm, rnd, value, *, attempt=1, status="ok", flagged=False):
    return dict(
        run_id=f"{cell}-{arm}-{rnd}-{attempt}",
        cell_id=cell,
        arm=arm,
        round=rnd,
        attempt=attempt,
        status=status,
        protocol_requested=None,
        protocol_negotiated=None,
        audit_flagged=flagged,
        plt_ms=value,
    )


def test_series_are_in_round_order_log_ratios_of_the_compared_pairs():
    rows = [_run("c", "h3", r, 100.0 * (r + 1)) for r in (3, 0, 2, 1)]
    rows += [_run("c", "h2", r, 200.0 * (r + 1)) for r in (1, 3, 0, 2)]
    paired, arms = round_series(pd.DataFrame(rows), [("h3", "h2")], "plt_ms")
    assert paired["c"].shape == (1, 4)
    assert np.allclose(paired["c"][0], np.log(0.5))
    assert np.allclose(np.exp(arms["c"]), [[100, 200, 300, 400], [200, 400, 600, 800]])


def test_only_counted_runs_and_the_last_attempt_of_a_round_enter():
    rows = [_run("c", "h3", r, 100.0 + r) for r in range(6)]
    rows += [_run("c", "h2", r, 200.0 + r) for r in range(6)]
    rows += [_run("c", "h3", 2, 999.0, attempt=2)]  # a retry replaces the first attempt
    rows += [_run("c", "h2", 4, 5.0, attempt=2, status="timeout")]  # a failed retry does not count
    rows += [_run("c", "h2", 5, 7.0, attempt=2, flagged=True)]  # nor one its audit flagged
    paired, arms = round_series(pd.DataFrame(rows), [("h3", "h2")], "plt_ms")
    h3, h2 = np.exp(arms["c"])
    assert np.allclose(h3, [100, 101, 999, 103, 104, 105])
    assert np.allclose(h2, [200, 201, 202, 203, 204, 205])
    assert paired["c"].shape == (1, 6)


def test_a_round_one_arm_lost_leaves_every_series_of_the_cell():
    rows = [_run("c", a, r, 100.0 + r) for a in ("h3", "h2", "kernel") for r in range(5)]
    rows = [r for r in rows if not (r["arm"] == "kernel" and r["round"] == 1)]
    paired, arms = round_series(pd.DataFrame(rows), [("h3", "kernel"), ("h2", "kernel")], "plt_ms")
    assert paired["c"].shape == (2, 4)
    assert arms["c"].shape == (3, 4)
