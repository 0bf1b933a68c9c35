"""The median's distribution-free interval (core.effects.median_interval): it covers the true
median at least as often as asked, on skewed samples too, and gives none where n cannot."""

from __future__ import annotations

import math

import numpy as np
import pytest

from longlook.core.effects import median_interval


@pytest.mark.parametrize("n", [6, 10, 25])
@pytest.mark.parametrize("draw", ["lognormal", "exponential"])
def test_coverage_of_a_nominal_95(n, draw):
    rng = np.random.default_rng(7)
    true = {"lognormal": 1.0, "exponential": math.log(2)}[draw]
    sample = {
        "lognormal": lambda: rng.lognormal(0.0, 1.0, n),
        "exponential": lambda: rng.exponential(1.0, n),
    }[draw]
    trials = 1000
    covered = 0
    for _ in range(trials):
        low, high = median_interval(sample())
        covered += low <= true <= high
    # the binomial interval is conservative: at least 95% (the simulation's error at 1,000 trials is ~0.7%)
    assert covered / trials >= 0.93, covered / trials


def test_too_few_values_give_no_interval():
    assert all(math.isnan(v) for v in median_interval([1.0, 2.0, 3.0, 4.0, 5.0]))
    assert all(math.isnan(v) for v in median_interval([]))


def test_the_ends_are_observed_values_and_missing_ones_are_skipped():
    low, high = median_interval([5.0, None, 1.0, float("nan"), 3.0, 2.0, 4.0, 6.0, 7.0, 8.0, 9.0, 10.0])
    assert {low, high} <= {1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0} and low < high
