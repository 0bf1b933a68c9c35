"""How many rounds an inconclusive claim's cells would need, from the variance observed.

An estimate, not a promise: it assumes the observed means and spreads are the true ones.
- a two-arm cell (`Cells`): the adaptive-rounds plan's variance (core.adaptive.
  planning_moments) and its blinded half-width of the % difference at level 1 - alpha; the
  fewest rounds whose half-width is below the observed |difference| (a direction claim) or
  below tolerance - |difference| (a "same" claim);
- a ratio (`Ratio`): the delta-method half-width of mean(a)/mean(b) against the distance of
  the observed ratio from the paper's factor;
- a share (`PairShare`, `GrangerShare`): the fewest sessions whose exact interval at the
  observed share leaves `at_least` out.
None: no finite number would do (the observed difference is 0, or the share is at_least).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as sps

from ...core.adaptive import blinded_halfwidth_from_moments, planning_moments

LIMIT = 100_000  # beyond this, "more than" is the honest answer


def _first(ok: np.ndarray, ns: np.ndarray) -> int | None:
    return int(ns[np.argmax(ok)]) if ok.any() else None


def cell_rounds(n_a: int, mean_a: float, sd_a: float, n_b: int, mean_b: float, sd_b: float, *,
                alpha: float, target_pct: float) -> int | None:
    """Rounds per arm at which the planned half-width (in % of the pooled mean) is below
    `target_pct`."""
    if n_a < 2 or n_b < 2 or not target_pct > 0 or any(math.isnan(x) for x in (mean_a, mean_b, sd_a, sd_b)):
        return None
    mean, var = planning_moments(n_a, n_b, n_a * mean_a, n_b * mean_b, (n_a - 1) * sd_a ** 2,
                                 (n_b - 1) * sd_b ** 2)
    ns = np.unique(np.geomspace(2, LIMIT, 400).astype(int))
    hw = blinded_halfwidth_from_moments(ns, ns, mean, var, confidence=1 - alpha)
    n = _first(hw < target_pct, ns)
    if n is None:
        return None
    lo = ns[max(0, np.searchsorted(ns, n) - 1)]  # refine between the grid points
    fine = np.arange(lo, n + 1)
    return _first(blinded_halfwidth_from_moments(fine, fine, mean, var, confidence=1 - alpha) < target_pct, fine)


def ratio_rounds(mean_a: float, sd_a: float, mean_b: float, sd_b: float, factor: float, *,
                 confidence: float = 0.95) -> int | None:
    """Rounds per arm at which the ratio's half-width is below |ratio - factor|."""
    if not mean_b or any(math.isnan(x) for x in (mean_a, sd_a, mean_b, sd_b)):
        return None
    r = mean_a / mean_b
    gap = abs(r - factor)
    if gap == 0:
        return None
    ns = np.arange(2, LIMIT + 1)
    hw = sps.t.ppf(0.5 + confidence / 2, 2 * ns - 2) * np.sqrt((sd_a ** 2 + r * r * sd_b ** 2) / ns) / abs(mean_b)
    return _first(hw < gap, ns)


def share_sessions(share: float, at_least: float, *, confidence: float = 0.95) -> int | None:
    """Sessions (pairs) at which the exact interval at `share` leaves `at_least` out."""
    if math.isnan(share) or share == at_least:
        return None
    for n in (*range(2, 200), *range(200, 5000, 25)):
        k = round(share * n)
        ci = sps.binomtest(k, n).proportion_ci(confidence_level=confidence, method="exact")
        if ci.low > at_least or ci.high < at_least:
            return n
    return None


def difference_sessions(sd_a: float, sd_b: float, diff: float, *, confidence: float = 0.95) -> int | None:
    """Sessions per arm at which Welch's half-width of a difference of means is below |diff|."""
    if not diff or any(math.isnan(x) for x in (sd_a, sd_b, diff)):
        return None
    ns = np.arange(2, LIMIT + 1)
    hw = sps.t.ppf(0.5 + confidence / 2, 2 * ns - 2) * np.sqrt((sd_a ** 2 + sd_b ** 2) / ns)
    return _first(hw < abs(diff), ns)
