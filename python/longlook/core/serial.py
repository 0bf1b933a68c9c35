"""Do the runs of a cell drift across rounds? The paired tests (core.effects.paired_effect)
and Welch's test take a cell's rounds as independent draws. A machine that warms up, a
neighbour's load that comes and goes, a link whose state carries over from one round to the
next would make consecutive rounds alike: positive serial correlation, under which a t
interval is too narrow (by sqrt((1 + rho) / (1 - rho)) for an AR(1) process of lag-1
correlation rho) and a test at alpha rejects more often than alpha.

The test pools the lag-1 autocorrelations of many short series (one per cell and compared
pair, a few to a few dozen rounds each: too short to say anything one by one) and asks
whether their weighted mean is above what the same values in random order give. The null
distribution is the permutation one, each cell's rounds shuffled (its series together): exact
for exchangeable rounds whatever the values' distribution (skewed load times, ties,
outliers), where the textbook N(-1/n, 1/n) is not at n = 5.

    drift_test(blocks) -> Drift
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy import stats as sps

from .verdicts import verdict_producer

MIN_ROUNDS = 5  # a shorter series has too few distinct orders to weigh in
PERMUTATIONS = 4000
POWER = 0.8


def _lag1_rows(x: np.ndarray) -> np.ndarray:
    """The lag-1 autocorrelation (over the whole series' variance) of every row of a 2-D
    array."""
    d = x - x.mean(axis=1, keepdims=True)
    return np.einsum("ij,ij->i", d[:, :-1], d[:, 1:]) / np.einsum("ij,ij->i", d, d)


@dataclass(frozen=True)
class Drift:
    """The pooled test of `drift_test`."""

    series: int  # series tested (>= MIN_ROUNDS rounds, not constant)
    rounds: int  # rounds over them
    # pooled lag-1 autocorrelation, corrected for its small-sample bias: in a short series
    # of an AR(1) process the mean-corrected r1 is about rho - (1 + 4 rho) / n (checked by
    # simulation in the calibration suite at 8-20 rounds)
    rho: float
    p: float  # one-sided permutation p of "above the null"
    alpha: float
    detectable: float  # the rho this many series detect with POWER (about)

    @property
    def drifts(self) -> bool:
        return self.p < self.alpha

    @property
    def inflation(self) -> float:
        """How much wider an interval on a cell's mean should be under an AR(1) drift of the
        pooled rho (1 when rho <= 0)."""
        r = max(0.0, min(self.rho, 0.95))
        return math.sqrt((1 + r) / (1 - r))

    def text(self) -> str:
        if self.series == 0:
            return f"no series of {MIN_ROUNDS} or more rounds to test"
        head = (
            f"lag-1 autocorrelation across rounds {self.rho:+.3f} pooled over {self.series} series "
            f"({self.rounds} rounds), permutation p {self.p:.3g}"
        )
        if self.drifts:
            return (
                f"{head}: drift at alpha {self.alpha:g}; an interval on the mean of such a series "
                f"should be {100 * (self.inflation - 1):.0f}% wider"
            )
        if self.detectable >= 1.0:
            return f"{head}: too few rounds to detect any drift"
        return f"{head}: no drift shown at alpha {self.alpha:g} (this many series detect rho >= {self.detectable:.2f})"


def widened_level(level: float, inflation: float) -> float:
    """The two-sided error level whose interval is `inflation` times as wide as at `level`
    (on the normal scale: 2 (1 - Phi(f z))). A test run at it under an AR(1) drift of lag-1
    rho, with f = sqrt((1 + rho) / (1 - rho)) (`Drift.inflation`), rejects a true null at
    most `level` of the time: checked by simulation in the calibration suite (paired t on
    8-20 rounds, rho 0.1-0.3, at 0.05 and 0.01)."""
    if inflation <= 1.0:
        return level
    z = float(sps.norm.ppf(1 - level / 2))
    return float(2 * sps.norm.sf(inflation * z))


def _as_block(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    return x[None, :] if x.ndim == 1 else x


def _usable(block: np.ndarray) -> np.ndarray:
    """The block's series worth testing: finite, not constant; none if too short."""
    if block.shape[1] < MIN_ROUNDS:
        return block[:0]
    ok = np.all(np.isfinite(block), axis=1) & (np.ptp(block, axis=1) > 0)
    return block[ok]


@verdict_producer("core.drift", "runs of a cell drift across rounds")
def drift_test(
    blocks: Sequence[np.ndarray], *, alpha: float = 0.05, permutations: int = PERMUTATIONS, seed: int = 0
) -> Drift:
    """Pool the lag-1 autocorrelation of the series in `blocks`, weighting each by its
    length, and test it against the rounds shuffled. A block is one cell: a series of its
    values in round order, or several over the same rounds (its arms, its compared pairs),
    one per row; they are shuffled together, since series of one cell share its rounds and
    are not independent of each other."""
    kept = [b for b in (_usable(_as_block(x)) for x in blocks) if len(b)]
    if not kept:
        return Drift(0, 0, math.nan, math.nan, alpha, math.nan)
    rng = np.random.default_rng(seed)
    total = float(sum(b.size for b in kept))
    stat, null, null_mean, gain = 0.0, np.zeros(permutations), 0.0, 0.0
    for b in kept:
        k, n = b.shape
        w = n / total
        stat += w * float(_lag1_rows(b).sum())
        order = rng.permuted(np.tile(np.arange(n), (permutations, 1)), axis=1)
        shuffled = b[:, order].reshape(k * permutations, n)
        null += w * _lag1_rows(shuffled).reshape(k, permutations).sum(axis=0)
        null_mean += w * k * -1.0 / n
        gain += w * k * (1 - 4.0 / n)
    p = (1 + int(np.sum(null >= stat - 1e-12))) / (permutations + 1)
    sd = float(np.std(null, ddof=1))
    z = float(sps.norm.ppf(1 - alpha) + sps.norm.ppf(POWER))
    return Drift(
        series=sum(len(b) for b in kept),
        rounds=int(sum(b.size for b in kept)),
        # the correction divides by 1 - 4/n, large for the shortest series: an autocorrelation
        # lies in [-1, 1] whatever a few rounds estimate
        rho=float(np.clip((stat - null_mean) / gain, -1.0, 1.0)),
        p=p,
        alpha=alpha,
        detectable=min(z * sd / gain, 1.0),
    )
