"""Null calibration of the one two-sample comparison (core.stats.compare_samples): with the
same distribution in both arms, how often does a cell say "A faster" or "B faster"?

Data with the shapes page loads have: normal (1000 ms, sd 100) and lognormal (median
e^7 ~ 1100 ms, sigma 0.5, a long right tail) load times, unpaired (Welch, Mann-Whitney) and
paired by round (the paired t on the log ratio), each with two nulls:
- complete: every round gave a counted run, 3 to 30 rounds per arm;
- survivorship: A's slow loads time out (the issue's case, 10 rounds): a load of A fails
  when it is slower than the population's 70-80% quantile (drawn per trial), so A keeps
  its fast 70-80% and the failures are told to compare_samples as completions
  (Completion(counted, 10)). The full samples are identical: any verdict is false.
Each side ("A faster", "B faster") is checked against alpha/2 = 0.005 (alpha = 0.01, the
default, two-sided). Before the worst-case check, the survivorship null said "A faster" in
1.4-4.5% of cells (Fisher's completion test alone); see tests/unit/core/test_stats.py for the power
that check costs.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from longlook.core.stats import Completion, Verdict, compare_samples

from .harness import calibrates, check_rate

ALPHA = 0.01
PRODUCER = "stats.two_sample"
DESIGNS = {"welch": ("welch", False), "mannwhitney": ("mannwhitney", False), "paired": ("welch", True)}
TRIALS = {"welch": 1500, "mannwhitney": 800, "paired": 1500}


def _draw(rng, dist: str, n: int) -> tuple[np.ndarray, float]:
    """n load times and the value at standard-normal quantile z of the population (a function)."""
    if dist == "normal":
        return rng.normal(1000.0, 100.0, n), lambda z: 1000.0 + 100.0 * z
    return rng.lognormal(7.0, 0.5, n), lambda z: float(np.exp(7.0 + 0.5 * z))


def _trial(rng, design: str, dist: str, null: str) -> Verdict:
    test, paired = DESIGNS[design]
    n = 10 if null == "survivorship" else int(rng.choice([3, 5, 10, 20, 30]))
    a, quantile = _draw(rng, dist, n)
    b, _ = _draw(rng, dist, n)
    keep = np.ones(n, dtype=bool)
    if null == "survivorship":
        keep = a <= quantile(float(sps.norm.ppf(rng.uniform(0.7, 0.8))))
    done_a, done_b = Completion(int(keep.sum()), n), Completion(n, n)
    xa, xb = (a[keep], b[keep]) if paired else (a[keep], b)
    return compare_samples(
        xa,
        xb,
        a_label="h3",
        b_label="h2",
        alpha=ALPHA,
        test=test,
        paired=paired,
        completion_a=done_a,
        completion_b=done_b,
    ).verdict


@calibrates(PRODUCER)
@pytest.mark.parametrize("design", list(DESIGNS))
def test_no_side_is_called_faster_more_often_than_alpha_over_2(design):
    for k, (dist, null) in enumerate([(d, n) for d in ("normal", "lognormal") for n in ("complete", "survivorship")]):
        rng = np.random.default_rng(4000 + 10 * k + list(DESIGNS).index(design))
        trials = TRIALS[design]
        verdicts = [_trial(rng, design, dist, null) for _ in range(trials)]
        for side in (Verdict.A_FASTER, Verdict.B_FASTER):
            check_rate(
                PRODUCER,
                f"{side.value} ({design}, {dist}, {null})",
                sum(v is side for v in verdicts),
                trials,
                ALPHA / 2,
            )
