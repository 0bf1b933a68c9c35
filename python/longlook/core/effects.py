"""Effect sizes with their confidence intervals, one per test the comparison can run.

Each estimates what its test looks at, so the interval and the verdict never disagree on
what "better" means:

- Welch's t-test: the ratio of means A/B, with Fieller's interval (the t-based interval of a
  ratio, Welch-Satterthwaite degrees of freedom). Simulated coverage of a nominal 95%
  (tests/unit/analyses/test_verdicts.py, item 9): 0.95-0.98 from n = 2 per side on normal
  and lognormal (sigma 0.45) samples, where the BCa bootstrap used before gave 0.80 at n = 3
  and 0.90 at n = 10.
  When B's mean cannot be told from 0 the interval is unbounded (nan): it says "no
  information", never a short interval. Heavy skew in one arm only still undercovers
  (0.90 at n = 5, 0.93 at n = 20 for normal vs lognormal sigma 0.6): that is Welch's own limit.
- Mann-Whitney U: the Hodges-Lehmann shift (median of all differences a_i - b_j) with the
  Moses interval from U's exact null distribution (no library offers it: scipy has the test,
  not its interval); its direction is U's (more than half of the pairs favour one side),
  not the medians'.
- Paired designs (flows of one run; QUIC and TCP runs of one round where a claim pairs
  them): the paired t on the per-pair log ratio (the geometric-mean ratio, a t interval),
  or on the differences when a value is not positive.

All return an `Effect`: the relative change of A against B (ratio - 1: 0.25 = A is 25%
above B, whatever the metric's direction) with its interval, and the shift A - B in the
metric's unit with its interval.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import special


@dataclass(frozen=True)
class Effect:
    # (A - B) / |B|: of the means (Welch), A/B - 1 of the geometric means (paired log
    # ratio), the HL shift over |median of B| (Mann-Whitney); nan when B's centre is 0
    relative: float
    relative_low: float  # nan, nan: unbounded (the data cannot bound it at this confidence)
    relative_high: float
    shift: float  # A - B in the metric's unit (difference of means, HL shift, mean pair difference)
    shift_low: float
    shift_high: float
    method: str  # the interval's name, for the report


NAN = math.nan


def _t(confidence: float, df) -> np.ndarray | float:
    # scipy.special's t quantile: what sps.t.ppf computes, without its per-call overhead
    # (simulations run the comparison hundreds of thousands of times)
    return special.stdtrit(df, 0.5 + confidence / 2)


def t_p(t: float, df: float) -> float:
    """Two-sided p of a t statistic (scipy.special, as sps.t.sf does)."""
    return float(2.0 * special.stdtr(df, -abs(t)))


def welch_p(a: np.ndarray, b: np.ndarray) -> float:
    """Welch's t-test, two-sided: what sps.ttest_ind(a, b, equal_var=False) gives (to 1e-14),
    at a fraction of its cost. nan when neither sample has spread."""
    va, vb = np.var(a, ddof=1) / len(a), np.var(b, ddof=1) / len(b)
    se2 = va + vb
    if not se2 > 0:
        return NAN
    df = se2**2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    return t_p((float(np.mean(a)) - float(np.mean(b))) / math.sqrt(se2), df)


def one_sample_p(x: np.ndarray) -> float:
    """The one-sample t-test of mean 0, two-sided (sps.ttest_1samp's p)."""
    sd = float(np.std(x, ddof=1))
    if not sd > 0:
        return NAN if float(np.mean(x)) == 0 else 0.0
    return t_p(float(np.mean(x)) / (sd / math.sqrt(len(x))), len(x) - 1)


def welch_difference(a: np.ndarray, b: np.ndarray, confidence: float) -> tuple[float, float, float]:
    """Mean(A) - mean(B) with Welch's t interval."""
    va, vb = np.var(a, ddof=1) / len(a), np.var(b, ddof=1) / len(b)
    d = float(np.mean(a) - np.mean(b))
    se2 = va + vb
    if se2 == 0:
        return d, NAN, NAN
    df = se2**2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    h = float(_t(confidence, df) * math.sqrt(se2))
    return d, d - h, d + h


def fieller_ratio(a: np.ndarray, b: np.ndarray, confidence: float) -> tuple[float, float, float]:
    """Mean(A)/mean(B) with Fieller's interval for independent samples: the ratios r for
    which (mean_a - r mean_b)^2 <= t^2 (va + r^2 vb), va and vb the squared standard errors,
    t at the Welch-Satterthwaite df of that variance at the estimate. Unbounded (nan, nan)
    when mean_b is not significantly different from 0."""
    ma, mb = float(np.mean(a)), float(np.mean(b))
    if mb == 0:
        return NAN, NAN, NAN
    r = ma / mb
    va, vb = np.var(a, ddof=1) / len(a), np.var(b, ddof=1) / len(b)
    s2 = va + r * r * vb
    den = va**2 / (len(a) - 1) + (r * r * vb) ** 2 / (len(b) - 1)
    df = s2**2 / den if den > 0 else min(len(a), len(b)) - 1  # A constant at 0: B's df
    t2 = float(_t(confidence, df)) ** 2
    qa, qb, qc = mb * mb - t2 * vb, -2 * ma * mb, ma * ma - t2 * va
    disc = qb * qb - 4 * qa * qc
    if qa <= 0 or disc < 0:
        return r, NAN, NAN
    s = math.sqrt(disc)
    return r, (-qb - s) / (2 * qa), (-qb + s) / (2 * qa)


def welch_effect(a: np.ndarray, b: np.ndarray, confidence: float) -> Effect:
    r, rlo, rhi = fieller_ratio(a, b, confidence)
    d, dlo, dhi = welch_difference(a, b, confidence)
    sign = 1.0 if np.mean(b) > 0 else -1.0  # (A - B)/|B| = sign(B) (A/B - 1)
    lo, hi = sorted((sign * (rlo - 1), sign * (rhi - 1)))
    method = (
        "Fieller (t, Welch df)"
        if not math.isnan(rlo)
        else "Fieller: unbounded (the mean of B is not distinguishable from 0)"
    )
    return Effect(sign * (r - 1), lo, hi, d, dlo, dhi, method)


def _u_null_counts(n: int, m: int) -> np.ndarray:
    """How many of the C(n+m, n) orderings give each U = 0..n*m (no ties): the coefficients
    of the Gaussian binomial [n+m choose n]_q, built one factor (1 - q^(m+i)) / (1 - q^i) at
    a time (each step is again a polynomial with non-negative coefficients)."""
    c = np.zeros(n * m + 1)
    c[0] = 1.0
    for i in range(1, n + 1):
        k = m + i
        c[k:] = c[k:] - c[:-k].copy()
        for r in range(i):  # divide by (1 - q^i): a running sum along stride i
            c[r::i] = np.cumsum(c[r::i])
    return c


@lru_cache(maxsize=4096)
def _moses_rank(n: int, m: int, confidence: float) -> int:
    """The largest C with P(U <= C - 1) <= (1 - confidence) / 2 under H0: the Moses
    interval is the C-th smallest to C-th largest of the n*m differences; 0 = unbounded."""
    alpha2 = (1 - confidence) / 2
    if n * m <= 40_000:
        counts = _u_null_counts(min(n, m), max(n, m))
        cdf = np.cumsum(counts) / counts.sum()
        return int(np.searchsorted(cdf, alpha2 + 1e-12, side="right"))
    z = float(special.ndtri(1 - alpha2))
    return max(0, int(math.floor(n * m / 2 - z * math.sqrt(n * m * (n + m + 1) / 12))))


def hodges_lehmann_effect(a: np.ndarray, b: np.ndarray, confidence: float) -> Effect:
    """The Hodges-Lehmann shift A - B and its Moses interval; relative to |median(B)|."""
    diffs = np.sort((a[:, None] - b[None, :]).ravel())
    shift = float(np.median(diffs))
    c = _moses_rank(len(a), len(b), confidence)
    lo, hi = (float(diffs[c - 1]), float(diffs[len(diffs) - c])) if c >= 1 else (NAN, NAN)
    ref = abs(float(np.median(b)))
    rel = (shift / ref, lo / ref, hi / ref) if ref else (NAN, NAN, NAN)
    method = "Moses (Hodges-Lehmann shift)" if c >= 1 else "Moses: unbounded (too few runs for this confidence)"
    return Effect(*rel, shift, lo, hi, method)


def paired_effect(a: np.ndarray, b: np.ndarray, confidence: float) -> tuple[Effect, float]:
    """Paired t: on log(a_i / b_i) when every value is positive (the geometric-mean ratio
    and its t interval), else on a_i - b_i (relative to |mean of B|). Returns the effect and
    the test's p."""
    n = len(a)
    d = a - b
    dm, hd = float(np.mean(d)), float(_t(confidence, n - 1)) * float(np.std(d, ddof=1)) / math.sqrt(n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if np.all(a > 0) and np.all(b > 0):
            lr = np.log(a) - np.log(b)
            m = float(np.mean(lr))
            h = float(_t(confidence, n - 1)) * float(np.std(lr, ddof=1)) / math.sqrt(n)
            p = one_sample_p(lr)
            return Effect(
                math.expm1(m), math.expm1(m - h), math.expm1(m + h), dm, dm - hd, dm + hd, "paired t on the log ratio"
            ), p
        p = one_sample_p(d)
    ref = abs(float(np.mean(b)))
    rel = (dm / ref, (dm - hd) / ref, (dm + hd) / ref) if ref else (NAN, NAN, NAN)
    return Effect(*rel, dm, dm - hd, dm + hd, "paired t on the differences"), p


def median_interval(x, confidence: float = 0.95) -> tuple[float, float]:
    """The distribution-free interval of one sample's median: the order statistics that
    cover it with at least `confidence` (the binomial interval, scipy's quantile_test). Its
    ends are observed values; (nan, nan) below the n that can reach the confidence (n < 6
    at 95%), which says "no interval", never a short one. Coverage simulated in
    tests/unit/core/test_median_interval.py."""
    from scipy import stats

    values = np.sort(np.asarray([v for v in x if v is not None and not math.isnan(float(v))], dtype=float))
    if len(values) < 2:
        return math.nan, math.nan
    ci = stats.quantile_test(values, q=float(np.median(values)), p=0.5).confidence_interval(confidence)
    low, high = float(ci.low), float(ci.high)
    if not (math.isfinite(low) and math.isfinite(high)):
        return math.nan, math.nan
    return low, high
