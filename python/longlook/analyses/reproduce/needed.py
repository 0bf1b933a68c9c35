"""How many rounds (sessions, runs) would decide an inconclusive claim: the n at which the
claim's own test has 80% power at a stated effect, the smallest the claim counts.

What is stated: "at N rounds per arm, the test the claim uses would decide it with
probability 80% if the true effect were E". E is the claim's resolution, never the effect
observed (an observed effect is mostly noise when a claim is inconclusive: planning on it
gave 50% power at a real effect, and under no effect a median of 53 rounds that decided
0.5% of re-runs):

- a direction claim on cells (`Cells`, `Twins`): a difference of the claim's tolerance in
  its direction, Welch's two-sided test at alpha / cells, Holm's strictest step (a cell
  compared paired by round: the paired t on the log ratio, planned on its sd); none when
  the cell's interval already ends short of that difference the claim's way;
- a "same" claim: no difference at all, two one-sided tests at the claim's level / cells;
- a ratio: the factor moved by `RATIO_RESOLUTION` (10%) to the side the estimate lies on,
  the one-sided Fieller contrast (or the paired t on the log ratio for flows) at its level;
- a share: the threshold moved by `SHARE_RESOLUTION` (10 points) to the side of the
  observed share, the exact one-sided binomial test;
- a range (`Value`): the range's centre, or 10% beyond the nearest bound when the mean lies
  outside, the t test(s);
- an ATE: half a standard deviation of the sessions, Welch one-sided at its level;
- a shrinking advantage (`Shrinks`): an interaction of the claim's resolution (a's relative
  cost up by that much from one cell to its twin), the interaction's Welch-Satterthwaite t at
  alpha / pairs; none when the pair's interval already ends short of it.

The spreads are the pilot's: each arm's standard deviation is planned at its 80% upper
confidence bound (chi-square), so that a pilot that happened to be quiet does not promise
too much (the plug-in spreads gave 61-79% instead of 80%). Simulated
(tests/calibration/test_reproduce_rules.py): cells with QUIC truly 5% faster, pilots of 3-10
lognormal rounds (sigma 0.03-0.3) left inconclusive, re-run at the stated N: decided in 94%
of 300 re-runs (80% required). None: no n up to LIMIT would do, or the data cannot be
planned from (fewer than 2 values per arm, no spread).
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np
from scipy import stats as sps

from ...core.verdicts import verdict_producer

LIMIT = 100_000  # beyond this, "more than" is the honest answer
POWER = 0.8
VARIANCE_BOUND = 0.8  # each arm's sd is planned at this upper confidence bound
RATIO_RESOLUTION = 0.10
SHARE_RESOLUTION = 0.10
ATE_RESOLUTION_SD = 0.5


def _upper_sd(sd: float, n: int) -> float:
    """The VARIANCE_BOUND upper confidence bound of a standard deviation from n values."""
    return float(sd * math.sqrt((n - 1) / sps.chi2.ppf(1 - VARIANCE_BOUND, n - 1)))


def _smallest(power: Callable[[np.ndarray], np.ndarray]) -> int | None:
    """The smallest n in 2..LIMIT with power(n) >= POWER (power grows with n)."""
    grid = np.unique(np.geomspace(2, LIMIT, 400).astype(int))
    ok = power(grid) >= POWER
    if not ok.any():
        return None
    i = int(np.argmax(ok))
    fine = np.arange(grid[max(0, i - 1)], grid[i] + 1)
    return int(fine[np.argmax(power(fine) >= POWER)])


def _welch_df(va: np.ndarray | float, vb: np.ndarray | float, n: np.ndarray) -> np.ndarray:
    return (va + vb) ** 2 / (va**2 / (n - 1) + vb**2 / (n - 1))


def _planned(n_a: int, sd_a: float, n_b: int, sd_b: float) -> tuple[float, float] | None:
    if n_a < 2 or n_b < 2 or any(math.isnan(x) for x in (sd_a, sd_b)) or sd_a + sd_b == 0:
        return None
    return _upper_sd(sd_a, n_a), _upper_sd(sd_b, n_b)


@verdict_producer(
    "reproduce.needed", "an inconclusive claim's 'would need ~N rounds': 80% power at the claim's resolution"
)
def cell_rounds(
    n_a: int, mean_a: float, sd_a: float, n_b: int, mean_b: float, sd_b: float, *, alpha: float, effect_pct: float
) -> int | None:
    """Rounds per arm at which Welch's two-sided test at `alpha` shows a true difference of
    `effect_pct`% of mean_b, in its direction, with 80% power."""
    sds = _planned(n_a, sd_a, n_b, sd_b)
    if sds is None or not effect_pct > 0 or math.isnan(mean_b) or mean_b == 0:
        return None
    va, vb = sds[0] ** 2, sds[1] ** 2
    shift = abs(mean_b) * effect_pct / 100

    def power(n: np.ndarray) -> np.ndarray:
        df = _welch_df(va / n, vb / n, n)
        return sps.nct.sf(sps.t.ppf(1 - alpha / 2, df), df, shift / np.sqrt((va + vb) / n))

    return _smallest(power)


def paired_cell_rounds(n: int, sd_log: float, *, alpha: float, effect_pct: float) -> int | None:
    """Pairs (rounds) at which the paired t on the log ratio, two-sided at `alpha`, shows a
    true difference of `effect_pct`% with 80% power: a cell whose arms met the same stretch of
    a trace each round (core.trace_phase), where the trace's variation cancels in the ratio
    and the arms' own spreads would overstate what is needed."""
    if n < 2 or math.isnan(sd_log) or sd_log == 0 or not 0 < effect_pct < 100:
        return None
    s = _upper_sd(sd_log, n)
    gap = -math.log1p(-effect_pct / 100)

    def power(k: np.ndarray) -> np.ndarray:
        return sps.nct.sf(sps.t.ppf(1 - alpha / 2, k - 1), k - 1, gap / (s / np.sqrt(k)))

    return _smallest(power)


def equivalence_rounds(
    n_a: int, sd_a: float, n_b: int, mean_b: float, sd_b: float, *, level: float, tolerance_pct: float
) -> int | None:
    """Rounds per arm at which two one-sided tests at `level` show |difference| <
    tolerance with 80% power when there is no difference (Bonferroni's bound on the pair:
    power >= 2 P(one side) - 1)."""
    sds = _planned(n_a, sd_a, n_b, sd_b)
    if sds is None or not tolerance_pct > 0 or math.isnan(mean_b) or mean_b == 0:
        return None
    va, vb = sds[0] ** 2, sds[1] ** 2
    bound = abs(mean_b) * tolerance_pct / 100

    def power(n: np.ndarray) -> np.ndarray:
        df = _welch_df(va / n, vb / n, n)
        one = sps.nct.sf(sps.t.ppf(1 - level, df), df, bound / np.sqrt((va + vb) / n))
        return 2 * one - 1

    return _smallest(power)


def ratio_rounds(
    n_a: int,
    mean_a: float,
    sd_a: float,
    n_b: int,
    mean_b: float,
    sd_b: float,
    factor: float,
    target: float,
    *,
    level: float,
) -> int | None:
    """Rounds per arm at which the one-sided Fieller contrast at `level` tells a true ratio
    `target` from `factor` with 80% power; each arm's spread kept in proportion to its mean
    (its coefficient of variation)."""
    sds = _planned(n_a, sd_a, n_b, sd_b)
    if sds is None or not mean_a or not mean_b or target == factor:
        return None
    cv_a, cv_b = sds[0] / abs(mean_a), sds[1] / abs(mean_b)
    va, vb = (cv_a * target) ** 2, (factor * cv_b) ** 2  # in units of mean_b^2

    def power(n: np.ndarray) -> np.ndarray:
        df = _welch_df(va / n, vb / n, n)
        return sps.nct.sf(sps.t.ppf(1 - level, df), df, abs(target - factor) / np.sqrt((va + vb) / n))

    return _smallest(power)


def paired_rounds(n: int, sd_log: float, factor: float, target: float, *, level: float) -> int | None:
    """Runs at which the one-sided paired t on the log ratio tells `target` from `factor`
    with 80% power, sd_log the per-run log ratios' standard deviation."""
    if n < 2 or math.isnan(sd_log) or sd_log == 0 or target <= 0 or factor <= 0 or target == factor:
        return None
    s = _upper_sd(sd_log, n)
    gap = abs(math.log(target / factor))

    def power(k: np.ndarray) -> np.ndarray:
        return sps.nct.sf(sps.t.ppf(1 - level, k - 1), k - 1, gap / (s / np.sqrt(k)))

    return _smallest(power)


def share_sessions(share: float, threshold: float, *, level: float) -> int | None:
    """Sessions (pairs) at which the exact one-sided binomial test at `level` against
    `threshold` has 80% power when the true share is `share`."""
    if math.isnan(share) or share == threshold or not 0 < share < 1:
        return None
    ns = np.arange(2, 5001)
    if share > threshold:
        k = sps.binom.isf(level, ns, threshold)  # reject when X > k (P(X > k) <= level)
        k = np.where(sps.binom.sf(k, ns, threshold) > level, k + 1, k)
        power = sps.binom.sf(k, ns, share)
    else:
        k = sps.binom.ppf(level, ns, threshold)  # reject when X <= k (P(X <= k) <= level)
        k = np.where(sps.binom.cdf(k, ns, threshold) > level, k - 1, k)
        power = np.where(k >= 0, sps.binom.cdf(k, ns, share), 0.0)
    ok = power >= POWER
    return int(ns[np.argmax(ok)]) if ok.any() else None


def value_runs(n: int, sd: float, low: float, high: float, target: float, *, level: float) -> int | None:
    """Runs at which the mean's one-sided t test(s) at `level` place it inside [low, high]
    (target inside) or outside (target outside) with 80% power when the true mean is
    `target`."""
    if n < 2 or math.isnan(sd) or sd == 0:
        return None
    s = _upper_sd(sd, n)

    def one(k: np.ndarray, gap: float) -> np.ndarray:
        return sps.nct.sf(sps.t.ppf(1 - level, k - 1), k - 1, gap / (s / np.sqrt(k)))

    if low <= target <= high:
        return _smallest(lambda k: one(k, target - low) + one(k, high - target) - 1)
    return _smallest(lambda k: one(k, min(abs(target - low), abs(target - high))))


def difference_sessions(n_a: int, sd_a: float, n_b: int, sd_b: float, effect: float, *, level: float) -> int | None:
    """Sessions per arm at which Welch's one-sided test at `level` shows a true difference
    of means `effect` with 80% power."""
    sds = _planned(n_a, sd_a, n_b, sd_b)
    if sds is None or not effect:
        return None
    va, vb = sds[0] ** 2, sds[1] ** 2

    def power(n: np.ndarray) -> np.ndarray:
        df = _welch_df(va / n, vb / n, n)
        return sps.nct.sf(sps.t.ppf(1 - level, df), df, abs(effect) / np.sqrt((va + vb) / n))

    return _smallest(power)


def interaction_rounds(parts: Sequence[tuple[int, float]], *, alpha: float, effect_pct: float) -> int | None:
    """Rounds per arm and cell at which the interaction of log ratios across twin cells
    (rules/shrinks.py), two-sided Welch-Satterthwaite t at `alpha`, shows a true rise of
    `effect_pct`% in a's relative cost with 80% power. `parts`: each independent part of the
    estimate as (n, sd of one value): an arm's log values, or a paired cell's per-round log
    ratios; each sd planned at its upper bound."""
    if not parts or not effect_pct > 0 or any(n < 2 or math.isnan(sd) for n, sd in parts):
        return None
    vs = np.array([_upper_sd(sd, n) ** 2 for n, sd in parts])
    if not vs.sum() > 0:
        return None
    gap = math.log1p(effect_pct / 100)

    def power(k: np.ndarray) -> np.ndarray:
        per = vs[:, None] / k[None, :]
        se2 = per.sum(axis=0)
        df = se2**2 / (per**2 / (k[None, :] - 1)).sum(axis=0)
        return sps.nct.sf(sps.t.ppf(1 - alpha / 2, df), df, gap / np.sqrt(se2))

    return _smallest(power)
