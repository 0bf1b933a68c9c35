"""core.multiple.holm agrees with statsmodels' Holm, ignores nan, and its row form agrees
with it family by family."""

from __future__ import annotations

import math

import numpy as np
from statsmodels.stats.multitest import multipletests

from longlook.core.multiple import holm, holm_rows


def test_holm_matches_statsmodels_on_random_families():
    rng = np.random.default_rng(7)
    for m in (1, 2, 5, 13, 40):
        for _ in range(20):
            p = rng.uniform(size=m) ** 2
            assert np.allclose(holm(p), multipletests(p, method="holm")[1])


def test_holm_leaves_nan_out_of_the_family():
    out = holm([0.01, math.nan, 0.04])
    assert math.isnan(out[1])
    assert np.allclose(out[[0, 2]], multipletests([0.01, 0.04], method="holm")[1])
    assert np.isnan(holm([math.nan])).all()


def test_holm_rows_is_holm_per_row():
    p = np.random.default_rng(3).uniform(size=(50, 6))
    assert np.allclose(holm_rows(p), np.vstack([holm(r) for r in p]))
