"""Null calibration of the drift test (core.serial.drift_test): with rounds that are
exchangeable, how often does it say the runs drift?

The data have the reproduction's shapes: 8-40 cells, 5-20 rounds each, two arms per cell
whose load times are lognormal with a shared per-round factor (both arms of a round meet the
same conditions, which is not drift: rounds stay exchangeable), heavy tails (a round in 20 a
few times slower), and some cells with a third arm (two compared pairs sharing an arm, so
their series are correlated). Checked at alpha 0.05 on the arms' series and on the pairs'
log ratios, as the reproduction runs it; and its power at the drift it says it detects,
which must be found, or the entry could pass by never saying "drift".
"""

from __future__ import annotations

import numpy as np

from longlook.core.serial import drift_test

from .harness import calibrates, check_rate

ALPHA = 0.05
PRODUCER = "core.drift"
PERMUTATIONS = 499


def _cell(rng, n: int, arms: int, rho: float = 0.0) -> np.ndarray:
    """arms x n log load times: a shared round factor, each arm's own noise, rare slow
    rounds, and an AR(1) drift of lag-1 correlation rho common to the cell."""
    shared = rng.normal(0, 0.2, n)
    drift = np.zeros(n)
    e = rng.normal(0, 0.3, n)
    for t in range(n):
        drift[t] = (rho * drift[t - 1] if t else 0.0) + e[t] * np.sqrt(1 - rho**2)
    own = rng.normal(0, 0.1, (arms, n)) + rng.standard_t(3, (arms, n)) * 0.05
    slow = (rng.random((arms, n)) < 0.05) * rng.uniform(0.5, 1.5, (arms, n))
    return np.log(1500) + shared + drift + own + slow + np.arange(arms)[:, None] * 0.1


def _world(rng, rho: float = 0.0) -> tuple[list[np.ndarray], list[np.ndarray]]:
    arms, pairs = [], []
    for _ in range(int(rng.integers(8, 41))):
        n, k = int(rng.integers(5, 21)), 3 if rng.random() < 0.25 else 2
        x = _cell(rng, n, k, rho)
        arms.append(x)
        pairs.append(np.vstack([x[i] - x[-1] for i in range(k - 1)]))
    return arms, pairs


@calibrates(PRODUCER)
def test_exchangeable_rounds_are_called_drifting_at_most_alpha():
    rng = np.random.default_rng(20261129)
    trials = 300
    false_arms = false_pairs = 0
    for t in range(trials):
        arms, pairs = _world(rng)
        false_arms += drift_test(arms, alpha=ALPHA, permutations=PERMUTATIONS, seed=t).drifts
        false_pairs += drift_test(pairs, alpha=ALPHA, permutations=PERMUTATIONS, seed=t).drifts
    check_rate(PRODUCER, "arms drift (exchangeable rounds)", false_arms, trials, ALPHA)
    check_rate(PRODUCER, "pairs drift (exchangeable rounds)", false_pairs, trials, ALPHA)


def _ar1(rng, n: int, rho: float) -> np.ndarray:
    y = np.empty(n)
    y[0] = rng.normal()
    for t in range(1, n):
        y[t] = rho * y[t - 1] + rng.normal() * np.sqrt(1 - rho**2)
    return y


@calibrates(PRODUCER)
def test_the_drift_it_says_it_detects_is_found_and_estimated():
    """At the rho the test says it detects with 80% power, it finds the drift about that
    often and estimates rho without the short series' bias; or "no drift shown" would
    promise more than it tests."""
    rng = np.random.default_rng(7)
    for cells, n in ((30, 10), (60, 8), (20, 20)):
        d = drift_test([rng.normal(size=n) for _ in range(cells)], permutations=999).detectable
        runs = [
            drift_test([_ar1(rng, n, d) for _ in range(cells)], alpha=ALPHA, permutations=PERMUTATIONS, seed=t)
            for t in range(100)
        ]
        found = sum(r.drifts for r in runs)
        assert found >= 65, f"{cells} cells x {n} rounds: rho {d:.3f} found {found} of 100 times, said 80"
        est = float(np.mean([r.rho for r in runs]))
        assert abs(est - d) < 0.25 * d, f"{cells} cells x {n} rounds: rho {d:.3f} estimated {est:.3f}"


def test_series_of_one_cell_are_shuffled_together():
    """Two copies of one series: shuffled apart, their pooled null would be too narrow and a
    chance lag-1 correlation would look significant twice over."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=12)
    one = drift_test([x], permutations=999, seed=1)
    twice = drift_test([np.vstack([x, x])], permutations=999, seed=1)
    assert abs(one.p - twice.p) < 1e-9
    assert abs(one.rho - twice.rho) < 1e-9


@calibrates(PRODUCER)
def test_widened_intervals_hold_the_paired_test_at_its_alpha_under_drift():
    """What the reproduction does when the drift test says the rounds drift: every test runs
    at `widened_level(alpha, Drift.inflation)`. A paired t on an AR(1) series of log ratios
    with a true mean of 0 (rho 0.1-0.3, 8-20 rounds): at the plain alpha it says "differ" too
    often (the reason to widen; else this entry could pass with no drift to correct), at the
    widened level at most alpha of the time."""
    from scipy import stats as sps

    from longlook.core.serial import Drift, widened_level

    rng = np.random.default_rng(20261129)
    trials = 4000
    for rho, n, alpha in ((0.1, 12, 0.05), (0.2, 8, 0.05), (0.3, 20, 0.05), (0.2, 12, 0.01), (0.3, 16, 0.01)):
        inflation = Drift(1, n, rho, 0.0, ALPHA, 0.1).inflation
        x = np.stack([_ar1(rng, n, rho) for _ in range(trials)])
        t = np.abs(x.mean(axis=1) / (x.std(axis=1, ddof=1) / np.sqrt(n)))
        plain = int(np.sum(t > sps.t.ppf(1 - alpha / 2, n - 1)))
        level = widened_level(alpha, inflation)
        widened = int(np.sum(t > sps.t.ppf(1 - level / 2, n - 1)))
        assert plain > 1.25 * alpha * trials, f"rho {rho}, {n} rounds: plain t said differ {plain} times"
        check_rate(
            PRODUCER, f"paired t, widened for drift rho {rho}, {n} rounds, alpha {alpha:g}", widened, trials, alpha
        )


def test_widened_level_leaves_independent_rounds_alone():
    from longlook.core.serial import widened_level

    assert widened_level(0.01, 1.0) == 0.01 and widened_level(0.05, 0.9) == 0.05
    assert 0.0046 < widened_level(0.01, 1.097) < 0.0048  # the standard stores' +0.092: 10% wider
