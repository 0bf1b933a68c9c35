"""Null calibration of `longlook compare --history` (analyses/compare/history.py,
mark_change_points): over many experiments of one scenario with no change, how often does
any cell x arm's series show a change point?

The data: per experiment and cell x arm, the mean of a page-load metric with 10% CV between
experiments (what one cell's mean does from day to day here), 8-12 experiments, 1-4 cells x
2 arms; the family is the whole history (the command's Bonferroni over the tested series).
Checked: a change point anywhere at most `pvalue` (0.05, 0.10). Printed beside it: the old
code's rate before the correction and the tie-counting p (tests/unit/analyses/test_compare_history.py's
table: 0.10-0.43).
"""

from __future__ import annotations

import numpy as np
import pytest

from longlook.analyses.compare.history import CellSeries, mark_change_points, series_threshold

from .harness import calibrates, check_rate

PRODUCER = "compare.history"


def _flat_family(rng, experiments: int, cells: int) -> list[CellSeries]:
    return [
        CellSeries(
            f"c{c}", arm, "plt_ms", list(1000 * (1 + 0.2 * c) * rng.normal(1, 0.10, experiments)), [10] * experiments
        )
        for c in range(cells)
        for arm in ("h2", "h3")
    ]


@calibrates(PRODUCER)
@pytest.mark.parametrize("pvalue, families", [(0.05, 150), (0.10, 150)])
def test_a_flat_history_shows_a_change_point_at_most_pvalue(pvalue, families):
    rng = np.random.default_rng(int(pvalue * 1000))
    false = 0
    for _ in range(families):
        series = _flat_family(rng, int(rng.integers(8, 13)), int(rng.integers(1, 5)))
        _, threshold, permutations = series_threshold(series, pvalue)
        mark_change_points(series, threshold, permutations)
        false += any(s.change_points for s in series)
    check_rate(PRODUCER, f"a change point in any series, flat history (pvalue {pvalue:g})", false, families, pvalue)
