"""A comparison's one-sided tests against a bound: the p-values of the claims themselves.

A claim is rarely "A differs from B". It is "A/B is at least 2", "A/B lies in 2..3.5", "the
difference is within +-5%" (two one-sided tests, TOST), or "beyond +-5%". Each is a
one-sided test of the ratio of the arms' centres against a bound, which these functions
compute from a core.stats CellComparison, on the test the comparison ran:

- Welch (ratio of means, Fieller's interval): the t test of the contrast mean_a - rho mean_b
  with standard error sqrt(va + rho^2 vb) at the Welch-Satterthwaite df that Fieller's
  interval uses (core.effects.fieller_ratio: the df of the estimate), so a bound lies
  outside the comparison's interval at level c exactly when its one-sided p is below
  (1 - c) / 2 (when that interval is bounded);
- paired t on the log ratio (flows of one run): the one-sample t of the mean log ratio
  against log(rho), its mean and standard error read back from the comparison's symmetric
  interval (the differences' version on the linear scale);
- Mann-Whitney: no p (nan): its Moses interval is the only statement, and callers judge
  from it.

The ratio is mean_a / mean_b whatever the metric's direction; "within +-x%" is the ratio in
[1 - x/100, 1 + x/100] (also when mean_b < 0: the % difference is (A - B)/|B|).
tests/unit/analyses/test_reproduce_rules.py checks the agreement with the intervals.
"""

from __future__ import annotations

import math

from scipy import stats as sps

from ...core.stats import CellComparison, Verdict, equivalence_blocked

UNTESTED = (Verdict.INSUFFICIENT, Verdict.NOT_TESTABLE)


def _paired_moments(c: CellComparison) -> tuple[float, float, int, bool] | None:
    """(mean, standard error, df, on logs) of the paired design, from its interval."""
    if math.isnan(c.ci_low) or math.isnan(c.ci_high) or c.a.n < 2:
        return None
    sign = -1.0 if c.lower_is_better else 1.0  # % difference -> relative change (A - B)/|B|
    lo, hi = sorted((sign * c.ci_low / 100, sign * c.ci_high / 100))
    logs = c.interval.startswith("paired t on the log")
    if logs:
        if lo <= -1:
            return None
        lo, hi = math.log1p(lo), math.log1p(hi)
    df = c.a.n - 1
    half = (hi - lo) / 2
    t = float(sps.t.ppf(0.5 + c.confidence / 2, df))
    return (lo + hi) / 2, half / t, df, logs


def paired_sd(c: CellComparison) -> float | None:
    """The standard deviation of a paired comparison's per-pair log ratios (differences
    relative to |mean B| when a value is not positive), read back from its interval."""
    mom = _paired_moments(c) if c.paired else None
    return None if mom is None else mom[1] * math.sqrt(c.a.n)


def ratio_p(c: CellComparison, bound: float, above: bool) -> float:
    """One-sided p of "A/B is above `bound`" (above=True) or "below `bound`"; nan when the
    comparison ran no test this can be read from."""
    if c.verdict in UNTESTED or math.isnan(c.p_value):
        return math.nan
    if c.paired:
        mom = _paired_moments(c)
        if mom is None:
            return math.nan
        mean, se, df, logs = mom
        if logs and bound <= 0:
            return 0.0 if above else 1.0
        target = math.log(bound) if logs else bound - 1
        if se == 0:
            return 0.0 if (mean > target) == above else 1.0
        t = (mean - target) / se
        return float(sps.t.sf(t, df) if above else sps.t.cdf(t, df))
    if c.test != "welch":
        return math.nan
    ma, mb = c.a.mean, c.b.mean
    if mb == 0 or c.a.n < 2 or c.b.n < 2:
        return math.nan
    va, vb = c.a.sd**2 / c.a.n, c.b.sd**2 / c.b.n
    r = ma / mb
    den = va**2 / (c.a.n - 1) + (r * r * vb) ** 2 / (c.b.n - 1)
    df = (va + r * r * vb) ** 2 / den if den > 0 else min(c.a.n, c.b.n) - 1
    se = math.sqrt(va + bound * bound * vb)
    contrast = ma - bound * mb  # > 0 <=> A/B above the bound when mean_b > 0
    if mb < 0:
        contrast = -contrast
    if se == 0:
        return 0.0 if (contrast > 0) == above else 1.0
    t = contrast / se
    return float(sps.t.sf(t, df) if above else sps.t.cdf(t, df))


def equivalence_p(c: CellComparison, tolerance_pct: float) -> float:
    """TOST p of "the % difference lies within +-tolerance": the larger of the two one-sided
    p-values against the ratio bounds 1 -+ tolerance/100."""
    if equivalence_blocked(c):
        return math.nan
    tau = tolerance_pct / 100
    ps = (ratio_p(c, 1 + tau, above=False), ratio_p(c, 1 - tau, above=True))
    return math.nan if any(math.isnan(p) for p in ps) else max(ps)


def beyond_p(c: CellComparison, tolerance_pct: float) -> float:
    """p of "the % difference lies beyond +-tolerance" (either side: the smaller one-sided
    p, as an interval wholly beyond either bound says)."""
    tau = tolerance_pct / 100
    ps = (ratio_p(c, 1 + tau, above=True), ratio_p(c, 1 - tau, above=False))
    return math.nan if any(math.isnan(p) for p in ps) else min(ps)
