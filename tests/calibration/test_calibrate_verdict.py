"""Null calibration of `longlook calibrate`'s verdict (analyses/calibrate/search.py,
calibration_verdict): "calibrated" claims that our endpoint's page load times are within
+-tolerance of the reference's in every cell. Its null is the boundary: every cell exactly
`tolerance` off (ours slower, or faster), where "calibrated" must come at most
(1 - confidence) / 2 of the time (the interval's one-sided error at the bound it crosses).

The data: what the confirmation experiment and the reference give the verdict, per cell
3-10 fresh rounds of ours and 3-10 of the reference, lognormal with CV 2-10% (page loads on
one cell of this testbed), 1-4 cells; each trial runs compare_samples (Welch, as the search
does) and the verdict. The old rule, "calibrated" when no cell differed significantly, is
counted on the same data for the note: it said "calibrated" for most of these searches.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from longlook.analyses.calibrate.search import CALIBRATED, Residual, calibration_verdict
from longlook.core.stats import compare_samples, equivalent

from .harness import calibrates, check_rate

PRODUCER = "calibrate.search"
CONFIDENCE = 0.95
TOLERANCE = 5.0


def _lognormal(rng, mean: float, cv: float, n: int) -> np.ndarray:
    s = math.sqrt(math.log1p(cv * cv))
    return mean * np.exp(rng.normal(-s * s / 2, s, n))


def _residuals(rng, cells: int, n_ours: int, n_ref: int, cv: float, ratio: float) -> tuple[list[Residual], bool]:
    """Residuals of `cells` cells whose true mean ratio ours / reference is `ratio`; and
    whether the old rule (no cell significant) would have said calibrated."""
    out, old = [], True
    for i in range(cells):
        ref_mean = 400.0 * (1 + i)
        ours = _lognormal(rng, ref_mean * ratio, cv, n_ours)
        ref = _lognormal(rng, ref_mean, cv, n_ref)
        c = compare_samples(ours, ref, a_label="ours", b_label="reference", alpha=0.01, confidence=CONFIDENCE)
        old &= c.verdict_text == "inconclusive"
        out.append(
            Residual(
                f"c{i}",
                c.a.n,
                c.b.n,
                c.a.mean,
                c.b.mean,
                -c.percent_difference,
                -c.ci_high,
                -c.ci_low,
                c.p_value,
                c.verdict_text,
                equivalent(c, TOLERANCE),
            )
        )
    return out, old


@calibrates(PRODUCER)
@pytest.mark.parametrize("slower", [True, False], ids=["ours-slower", "ours-faster"])
def test_a_point_exactly_at_the_tolerance_is_called_calibrated_at_most_half_of_one_minus_confidence(slower):
    rng = np.random.default_rng(7 if slower else 8)
    # ours slower by 5% of the reference (percent difference -5), or faster by 5%
    ratio = 1 + TOLERANCE / 100 if slower else 1 - TOLERANCE / 100
    trials, false, old = 1200, 0, 0
    for _ in range(trials):
        cells = int(rng.integers(1, 5))
        res, said = _residuals(
            rng, cells, int(rng.integers(3, 11)), int(rng.integers(3, 11)), float(rng.uniform(0.02, 0.10)), ratio
        )
        false += calibration_verdict(res) == CALIBRATED
        old += said
    print(f"old rule (no cell significant) said calibrated in {old / trials:.1%}")
    side = "slower" if slower else "faster"
    check_rate(
        PRODUCER,
        f"calibrated with every cell exactly {TOLERANCE:g}% {side} (old rule {old / trials:.0%})",
        false,
        trials,
        (1 - CONFIDENCE) / 2,
    )


def test_a_point_at_the_reference_is_called_calibrated_with_enough_rounds():
    """Power, so the verdict is not "never calibrated": the same mean as the reference, 10
    rounds a side, 2 cells: calibrated in at least 90% of searches at CV 2% (measured 99%);
    at CV 3% about 80% (each cell's interval about +-2.8% must fit inside +-5%)."""
    rng = np.random.default_rng(9)
    hits = sum(calibration_verdict(_residuals(rng, 2, 10, 10, 0.02, 1.0)[0]) == CALIBRATED for _ in range(300))
    assert hits / 300 >= 0.9, hits / 300
