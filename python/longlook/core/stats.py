"""The one two-sample comparison of longlook: arm A against arm B on any metric of a kind.

For a metric where lower is better (page load time), % difference = (mean_B - mean_A) /
|mean_B| * 100 with B the baseline (TCP in the papers), so a positive number means A (QUIC)
is better; where higher is better (throughput, QoE), (mean_A - mean_B) / |mean_B| * 100,
positive again meaning A is better. A difference counts only when the test says so at
p < alpha; otherwise the cell is "inconclusive".

Every input has one explicit outcome, never a silent default:
- fewer than two counted runs on a side: "insufficient data";
- a value that is not a number, or no spread to test against (both arms constant, every
  pair's difference the same): "not testable", with why;
- arms that completed at different rates (Fisher's exact test on counted / tried rounds, at
  `survivorship_alpha`): "inconclusive: survivorship" — the survivors of a condition that
  kills one protocol's runs say nothing about that protocol (unless the scenario counts a
  failed run as an outcome, core.failures);
- otherwise the test's verdict, its direction the one the test looked at (means for Welch,
  U for Mann-Whitney, the mean log ratio for a paired t);
- and where any round of either arm gave no counted run (Completion.counted < tried), a
  significant verdict for arm X stands only if it survives those runs at their worst
  (`survivorship_p`, Manski's bounds in ranks): X's missing values counted worse than every
  observed value, the other arm's better than every one, Mann-Whitney U on the completed
  samples (unpaired) or Wilcoxon's signed-rank test with each lost pair a difference
  against X larger than every observed one (paired), at the same alpha; else "inconclusive:
  survivorship", the reason in words ("h3 completed 7/10, h2 10/10: the difference does not
  hold if the 3 missing h3 runs were the slowest"). The added values only move X's ranks
  the wrong way, so under any null this says "X better" no more often than that rank test
  on the full data would: Fisher's test at a small n has no power (identical load times,
  h3's slowest 20-30% timing out, 10 rounds: "h3 faster" in 1.4-4.5% of cells at alpha
  0.01 before; at most alpha/2 per side now, tests/calibration/test_two_sample.py).
  The price, simulated in tests/unit/core/test_stats.py (20 rounds, lognormal, alpha 0.01): nothing
  when no run is missing (the same verdicts, the check does not run); with one random run
  of 20 missing, the power of "h3 faster" falls from 0.77 to 0.63 (Welch), 0.81 to 0.69
  (Mann-Whitney) and 0.81 to 0.42 (paired: the lost pair takes the largest signed rank)
  where the survivors alone would have had it. A multiple-testing family adjusts the larger
  of the test's and the worst case's p (`CellComparison.family_p`).

Intervals are those of core.effects: Fieller's for Welch (coverage simulated from n = 2),
Moses' for Mann-Whitney, a t interval for paired designs. Only the runs that count
(core.status) enter: a QUIC run that fell back to TCP is never counted as QUIC, and a run
whose path audit failed is left out.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, replace
from enum import Enum
from functools import lru_cache
from typing import Collection, Iterable, Literal, Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps

from ..render.names import display_name
from .multiple import holm
from .effects import Effect, hodges_lehmann_effect, paired_effect, welch_effect, welch_p
from .status import counted_runs, failed_rounds
from .verdicts import verdict_producer

Test = Literal["welch", "mannwhitney"]
MIN_N = 2  # per side; below it no test is possible
SMALL_N = 10  # below it the report says the interval rests on its method's simulated coverage
SURVIVORSHIP_ALPHA = 0.05

TEST_NAMES = {"welch": "Welch's t-test", "mannwhitney": "Mann-Whitney U", "paired_t": "paired t-test"}


class Verdict(str, Enum):
    # "faster" for the papers' time metrics; for any metric it means "better"
    A_FASTER = "a_faster"
    B_FASTER = "b_faster"
    INCONCLUSIVE = "inconclusive"
    INSUFFICIENT = "insufficient_data"
    NOT_TESTABLE = "not_testable"
    SURVIVORSHIP = "survivorship"  # inconclusive: the arms completed at different rates

    @property
    def significant(self) -> bool:
        return self in (Verdict.A_FASTER, Verdict.B_FASTER)


@dataclass(frozen=True)
class SampleSummary:
    label: str
    n: int
    mean: float
    median: float
    sd: float

    @classmethod
    def of(cls, label: str, x: np.ndarray) -> "SampleSummary":
        n = len(x)
        return cls(
            label=label,
            n=n,
            mean=float(np.mean(x)) if n else math.nan,
            median=float(np.median(x)) if n else math.nan,
            sd=float(np.std(x, ddof=1)) if n > 1 else math.nan,
        )


@dataclass(frozen=True)
class Completion:
    """Rounds of an arm that ended with a counted run, of the rounds tried."""

    counted: int
    tried: int

    @property
    def share(self) -> float:
        return self.counted / self.tried if self.tried else math.nan

    def __str__(self) -> str:
        return f"{self.counted}/{self.tried}"


@dataclass(frozen=True)
class CellComparison:
    """A vs B in one cell. `p_value` is the raw test p; `p_adjusted` equals it unless Holm
    correction was applied across cells; the verdict uses `p_adjusted`. `test` is the test
    that ran ("welch", "mannwhitney", "paired_t"); `interval` names the interval's method;
    `reason` says why a cell is not testable, insufficient or inconclusive by survivorship."""

    cell_id: str
    a: SampleSummary
    b: SampleSummary
    percent_difference: float
    ci_low: float
    ci_high: float
    confidence: float
    test: str
    p_value: float
    p_adjusted: float
    alpha: float
    holm: bool
    verdict: Verdict
    metric: str = "value"
    lower_is_better: bool = True
    better_word: str = "faster"  # "better" for metrics that are not times
    interval: str = ""
    reason: str = ""
    paired: bool = False
    direction: int = 0  # the test's: +1 A above B, -1 below, 0 none (whatever the p)
    diff: float = math.nan  # A - B in the metric's unit (see core.effects), with its interval
    diff_low: float = math.nan
    diff_high: float = math.nan
    completion_a: Completion | None = None
    completion_b: Completion | None = None
    completion_p: float = math.nan  # Fisher's exact test of the two completions
    # the rank test with each arm's missing runs at their worst for the verdict's side (see
    # survivorship_p); nan when no run was missing or no verdict was significant
    worst_case_p: float = math.nan
    # a paired design's sd of the per-pair log ratio, what a plan for more pairs needs (nan:
    # not paired, or a value not positive)
    pair_sd_log: float = math.nan

    @property
    def family_p(self) -> float:
        """The p a multiple-testing family adjusts: the larger of the test's and the worst
        case's, so that a verdict needs both after the correction too."""
        if math.isnan(self.worst_case_p):
            return self.p_value
        return max(self.p_value, self.worst_case_p)

    @property
    def pair(self) -> tuple[str, str]:
        return (self.a.label, self.b.label)

    @property
    def small_n(self) -> bool:
        return min(self.a.n, self.b.n) < SMALL_N

    @property
    def test_name(self) -> str:
        return TEST_NAMES.get(self.test, self.test)

    @property
    def verdict_text(self) -> str:
        if self.verdict is Verdict.A_FASTER:
            return f"{display_name(self.a.label)} {self.better_word}"
        if self.verdict is Verdict.B_FASTER:
            return f"{display_name(self.b.label)} {self.better_word}"
        return {
            Verdict.INSUFFICIENT: "insufficient data",
            Verdict.SURVIVORSHIP: "inconclusive: survivorship",
            Verdict.NOT_TESTABLE: f"not testable: {self.reason}",
        }.get(self.verdict, "inconclusive")

    def as_row(self) -> dict:
        return {
            "cell_id": self.cell_id,
            "a": self.a.label,
            "b": self.b.label,
            "n_a": self.a.n,
            "n_b": self.b.n,
            "mean_a": self.a.mean,
            "mean_b": self.b.mean,
            "median_a": self.a.median,
            "median_b": self.b.median,
            "sd_a": self.a.sd,
            "sd_b": self.b.sd,
            "percent_difference": self.percent_difference,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "test": self.test,
            "interval": self.interval,
            "paired": self.paired,
            "diff": self.diff,
            "diff_low": self.diff_low,
            "diff_high": self.diff_high,
            "p_value": self.p_value,
            "p_adjusted": self.p_adjusted,
            "alpha": self.alpha,
            "holm": self.holm,
            "verdict": self.verdict.value,
            "verdict_text": self.verdict_text,
            "reason": self.reason,
            "metric": self.metric,
            "completion_a": str(self.completion_a or ""),
            "completion_b": str(self.completion_b or ""),
            "completion_p": self.completion_p,
            "worst_case_p": self.worst_case_p,
        }


def percent_difference(a: Sequence[float], b: Sequence[float], lower_is_better: bool = True) -> float:
    """(mean_B - mean_A) / |mean_B| * 100 for lower-is-better metrics, the opposite sign for
    higher-is-better ones: positive when A is better. |mean_B| keeps the sign right for
    metrics that can be negative (QoE); with mean_B = 0 (no stall on the baseline) there is
    no percentage (nan), while the test still runs and `diff` gives the change in units."""
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    mb = float(np.mean(xb))
    if mb == 0:
        return math.nan
    d = (mb - float(np.mean(xa))) / abs(mb) * 100.0
    return d if lower_is_better else -d


def _pct(relative: float, lower_is_better: bool) -> float:
    """core.effects' relative change (A - B)/|B| as the papers' % difference."""
    return -100.0 * relative if lower_is_better else 100.0 * relative


def equivalent(c: CellComparison, tolerance_pct: float) -> bool | None:
    """Equivalence from the interval (two one-sided tests at (1 - confidence)/2 each), never
    from non-significance: True when the whole interval of the % difference lies within
    +-tolerance, False when it lies wholly beyond it, None when it straddles a bound or
    there is no bounded interval (too few runs, untestable, survivorship) or a run is missing
    (equivalence_blocked)."""
    if equivalence_blocked(c):
        return None
    lo, hi = c.ci_low, c.ci_high
    if math.isnan(lo) or math.isnan(hi):
        return None
    if -tolerance_pct <= lo and hi <= tolerance_pct:
        return True
    if lo > tolerance_pct or hi < -tolerance_pct:
        return False
    return None


def equivalence_blocked(c: CellComparison) -> str:
    """Why this cell can show no equivalence, in words ("" when it can). Beside the verdicts
    that test nothing, a round that ended without a counted run on either side: a missing
    value could lie anywhere (Manski's bounds, as for a difference, but an equivalence has
    no worst case that is still bounded), and arms whose slow runs fail look alike in their
    survivors. Fisher's test on the completions cannot guard this: at 10 rounds it misses
    7/10 against 10/10."""
    if c.verdict in (Verdict.INSUFFICIENT, Verdict.NOT_TESTABLE, Verdict.SURVIVORSHIP):
        return c.verdict_text
    lost = [(label, d) for label, d in ((c.a.label, c.completion_a), (c.b.label, c.completion_b)) if _lost_rounds(d)]
    if lost:
        done = ", ".join(f"{label} completed {d}" for label, d in lost)
        return f"{done}: the missing runs could lie anywhere, so no equivalence is shown"
    return ""


def _not_testable_reason(xa: np.ndarray, xb: np.ndarray, test: str) -> str:
    """Why these samples admit no test ("" when they do)."""
    for label, x in (("A", xa), ("B", xb)):
        bad = int(np.sum(~np.isfinite(x)))
        if bad:
            return f"{bad} value{'s' if bad > 1 else ''} of arm {label} not a number"
    if test == "paired_t":
        d = xa - xb
        if np.ptp(d) == 0:
            return "every pair differs by the same amount (no spread to test against)"
        if np.all(xa > 0) and np.all(xb > 0) and np.ptp(np.log(xa) - np.log(xb)) == 0:
            return "every pair has the same ratio (no spread to test against)"
        return ""
    if np.ptp(xa) == 0 and np.ptp(xb) == 0:
        if test == "mannwhitney" and xa[0] != xb[0]:
            return ""  # ranks still say something; its exact p decides
        how = "equal" if xa[0] == xb[0] else "different"
        return f"both arms constant ({how}: {xa[0]:g} vs {xb[0]:g}), no spread to test against"
    return ""


def _test(xa: np.ndarray, xb: np.ndarray, test: str, confidence: float) -> tuple[float, Effect, int]:
    """The test's p, the effect it looks at, and its direction (+1: A above B)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # nearly equal samples: p is still defined
        if test == "paired_t":
            eff, p = paired_effect(xa, xb, confidence)
            return p, eff, int(np.sign(eff.relative if not math.isnan(eff.relative) else eff.shift))
        if test == "welch":
            p = welch_p(xa, xb)
            eff = welch_effect(xa, xb, confidence)
            return p, eff, int(np.sign(eff.shift))
        if test == "mannwhitney":
            res = sps.mannwhitneyu(xa, xb, alternative="two-sided")
            eff = hodges_lehmann_effect(xa, xb, confidence)
            # U counts the pairs where A is above B: its side of n_a n_b / 2 is the direction
            return float(res.pvalue), eff, int(np.sign(float(res.statistic) - len(xa) * len(xb) / 2))
    raise ValueError(f"unknown test {test!r}; known: welch, mannwhitney")


def share_test(k_a: int, n_a: int, k_b: int, n_b: int) -> float:
    """Fisher's exact test (two-sided) of two shares k/n (runs that completed, runs that
    show a transition); nan when a side has no runs."""
    return _fisher(int(k_a), int(n_a), int(k_b), int(n_b))


@lru_cache(maxsize=65536)
def _fisher(k_a: int, n_a: int, k_b: int, n_b: int) -> float:
    # a pure function of four small counts: cached, since simulations ask for the same
    # tables again and again (scipy's exact test costs a millisecond)
    if not n_a or not n_b:
        return math.nan
    return float(sps.fisher_exact([[k_a, n_a - k_a], [k_b, n_b - k_b]]).pvalue)


def completion_test(a: Completion | None, b: Completion | None) -> float:
    """share_test of two arms' completions; nan without both."""
    if a is None or b is None:
        return math.nan
    return share_test(a.counted, a.tried, b.counted, b.tried)


def missing_values(n_values: int, done: Completion | None) -> int:
    """How many values an arm lacks: its rounds without a counted run, times its values per
    counted round (one, unless a round gives several, e.g. flows); 0 when not known."""
    if done is None or done.tried <= done.counted:
        return 0
    lost = done.tried - done.counted
    per_round = n_values / done.counted if done.counted else 1.0
    return int(math.ceil(lost * max(1.0, per_round) - 1e-9))


def missing_pairs(n_pairs: int, done_a: Completion | None, done_b: Completion | None) -> int:
    """How many pairs a paired design lacks: with one pair per round, the rounds tried that
    gave none (at most the two arms' losses together); with several pairs per round, the
    losses at the most pairs per round the counted rounds allow (an overcount, never under)."""
    lost = sum(d.tried - d.counted for d in (done_a, done_b) if d is not None and d.tried > d.counted)
    if not lost:
        return 0
    tried = max(d.tried for d in (done_a, done_b) if d is not None)
    if n_pairs <= tried:
        return min(tried - n_pairs, lost)
    return int(math.ceil(lost * n_pairs / max(1, tried - lost) - 1e-9))


def survivorship_p(
    xa: np.ndarray,
    xb: np.ndarray,
    claim: Verdict,
    *,
    lower_is_better: bool,
    paired: bool,
    lost_a: int = 0,
    lost_b: int = 0,
) -> float:
    """The claim `claim` (A_FASTER or B_FASTER) tested with the missing values at their worst
    for it (Manski's bounds, in ranks): the claimed winner's missing values worse than every
    observed value, the other arm's better than every one. Unpaired: Mann-Whitney U on the
    completed samples (lost_a, lost_b values added); paired: Wilcoxon's signed-rank test on
    the pairs' log ratios (differences where a value is not positive), each of the lost_a
    missing pairs a difference against the claim larger than every observed one. Returns
    twice the one-sided p in the claimed direction (the two-sided p at the verdict's
    alpha). The added values only move the winner's ranks the wrong way, so under any null
    this rejects no more often than the same rank test on the full data would."""
    a_wins = claim is Verdict.A_FASTER
    a_low = a_wins == lower_is_better  # the claim: A's values are the lower ones
    alternative = "less" if a_low else "greater"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if paired:
            d = (np.log(xa) - np.log(xb)) if np.all(xa > 0) and np.all(xb > 0) else xa - xb
            step = float(np.max(np.abs(d))) + 1.0
            against = step * np.arange(1, lost_a + 1) * (1.0 if a_low else -1.0)
            try:
                p1 = float(sps.wilcoxon(np.r_[d, against], alternative=alternative).pvalue)
            except ValueError:  # every difference 0: nothing can be shown
                return 1.0
            return min(1.0, 2.0 * p1)
        x = np.r_[xa, xb]
        step = float(np.ptp(x)) + 1.0
        high = lambda k: float(np.max(x)) + step * np.arange(1, k + 1)  # noqa: E731
        low = lambda k: float(np.min(x)) - step * np.arange(1, k + 1)  # noqa: E731
        worse, better = (high, low) if lower_is_better else (low, high)
        ya = np.r_[xa, (worse if a_wins else better)(lost_a)]
        yb = np.r_[xb, (better if a_wins else worse)(lost_b)]
        p1 = float(sps.mannwhitneyu(ya, yb, alternative=alternative).pvalue)
    return min(1.0, 2.0 * p1)


def _survivorship_reason(c: CellComparison, lost_a: int, lost_b: int) -> str:
    """Why a significant difference does not survive the missing runs, in words."""
    a_wins = c.verdict is Verdict.A_FASTER
    (win, w_lost), (lose, l_lost) = (
        ((c.a.label, lost_a), (c.b.label, lost_b)) if a_wins else ((c.b.label, lost_b), (c.a.label, lost_a))
    )
    worst, best = ("slowest", "fastest") if c.better_word == "faster" else ("worst", "best")
    ifs = []
    if w_lost:
        ifs.append(
            f"the {w_lost} missing {win} run{'s' if w_lost > 1 else ''} {'were' if w_lost > 1 else 'was'} the {worst}"
        )
    if l_lost:
        ifs.append(
            f"the {l_lost} missing {lose} run{'s' if l_lost > 1 else ''} "
            f"{'' if ifs else ('were ' if l_lost > 1 else 'was ')}the {best}"
        )
    done = ", ".join(
        f"{label} completed {d if d is not None else 'all'}" if i == 0 else f"{label} {d if d is not None else 'all'}"
        for i, (label, d) in enumerate(((c.a.label, c.completion_a), (c.b.label, c.completion_b)))
    )
    return f"{done}: the difference does not hold if {' and '.join(ifs)} (worst case p = {c.worst_case_p:.2g})"


def _lost_rounds(done: Completion | None) -> int:
    return max(0, done.tried - done.counted) if done is not None else 0


@verdict_producer("stats.two_sample", "A faster / B faster (or better) in one cell, survivorship-checked")
def compare_samples(
    a: Iterable[float],
    b: Iterable[float],
    *,
    a_label: str = "A",
    b_label: str = "B",
    cell_id: str = "",
    alpha: float = 0.01,
    test: Test = "welch",
    confidence: float = 0.95,
    metric: str = "value",
    lower_is_better: bool = True,
    better_word: str = "faster",
    paired: bool = False,
    completion_a: Completion | None = None,
    completion_b: Completion | None = None,
    survivorship_alpha: float = SURVIVORSHIP_ALPHA,
) -> CellComparison:
    """Compare two samples of a metric (by default page load times: lower is better).
    `paired`: a[i] and b[i] belong together (flows of one run, runs of one round); the test
    is then the paired t on their log ratio whatever `test` says. `completion_*`: the arms'
    completions, for the survivorship check."""
    xa = np.asarray(list(a), dtype=float)
    xb = np.asarray(list(b), dtype=float)
    if paired and len(xa) != len(xb):
        raise ValueError(f"paired samples of different lengths ({len(xa)} vs {len(xb)})")
    ran = "paired_t" if paired else test
    sa, sb = SampleSummary.of(a_label, xa), SampleSummary.of(b_label, xb)
    p_surv = completion_test(completion_a, completion_b)
    common = dict(
        cell_id=cell_id,
        a=sa,
        b=sb,
        confidence=confidence,
        test=ran,
        alpha=alpha,
        holm=False,
        metric=metric,
        lower_is_better=lower_is_better,
        better_word=better_word,
        paired=paired,
        completion_a=completion_a,
        completion_b=completion_b,
        completion_p=p_surv,
    )
    nan = math.nan
    if len(xa) < MIN_N or len(xb) < MIN_N:
        what = "pairs" if paired else "counted runs"
        return CellComparison(
            percent_difference=nan,
            ci_low=nan,
            ci_high=nan,
            p_value=nan,
            p_adjusted=nan,
            verdict=Verdict.INSUFFICIENT,
            reason=f"fewer than {MIN_N} {what} per arm ({len(xa)} vs {len(xb)})",
            **common,
        )
    why = _not_testable_reason(xa, xb, ran)
    if why:
        pct = percent_difference(xa, xb, lower_is_better) if np.all(np.isfinite(np.r_[xa, xb])) else nan
        return CellComparison(
            percent_difference=pct,
            ci_low=nan,
            ci_high=nan,
            p_value=nan,
            p_adjusted=nan,
            verdict=Verdict.NOT_TESTABLE,
            reason=why,
            **common,
        )
    p, eff, direction = _test(xa, xb, ran, confidence)
    lo, hi = sorted((_pct(eff.relative_low, lower_is_better), _pct(eff.relative_high, lower_is_better)))
    verdict, reason = _verdict(p, alpha, direction, lower_is_better), ""
    if math.isnan(p):
        verdict, reason = Verdict.NOT_TESTABLE, "the test gave no p-value"
    elif p_surv < survivorship_alpha:
        verdict = Verdict.SURVIVORSHIP
        reason = (
            f"{a_label} completed {completion_a}, {b_label} {completion_b} "
            f"(Fisher p = {p_surv:.2g}): the runs that finished are not a fair sample"
        )
    sd_log = math.nan
    if paired and np.all(xa > 0) and np.all(xb > 0):
        sd_log = float(np.std(np.log(xa) - np.log(xb), ddof=1))
    c = CellComparison(
        percent_difference=_pct(eff.relative, lower_is_better),
        ci_low=lo,
        ci_high=hi,
        p_value=p,
        p_adjusted=p,
        verdict=verdict,
        reason=reason,
        interval=eff.method,
        direction=direction,
        diff=eff.shift,
        diff_low=eff.shift_low,
        diff_high=eff.shift_high,
        pair_sd_log=sd_log,
        **common,
    )
    return _survives(c, xa, xb) if verdict.significant else c


def _survives(c: CellComparison, xa: np.ndarray, xb: np.ndarray) -> CellComparison:
    """A significant verdict when some rounds gave no counted run: it stands when it still
    holds with those runs at their worst for it (survivorship_p at the same alpha), else
    it is "inconclusive: survivorship" with the reason."""
    if c.paired:
        lost_a, lost_b = missing_pairs(len(xa), c.completion_a, c.completion_b), 0
    else:
        lost_a, lost_b = missing_values(len(xa), c.completion_a), missing_values(len(xb), c.completion_b)
    if not lost_a and not lost_b:
        return c
    worst = survivorship_p(
        xa, xb, c.verdict, lower_is_better=c.lower_is_better, paired=c.paired, lost_a=lost_a, lost_b=lost_b
    )
    c = replace(c, worst_case_p=worst)
    if worst < c.alpha:
        return c
    return replace(
        c,
        verdict=Verdict.SURVIVORSHIP,
        reason=_survivorship_reason(c, _lost_rounds(c.completion_a), _lost_rounds(c.completion_b)),
    )


def _verdict(p: float, alpha: float, direction: int, lower_is_better: bool) -> Verdict:
    if math.isnan(p) or p >= alpha or direction == 0:
        return Verdict.INCONCLUSIVE
    return Verdict.A_FASTER if (direction < 0) == lower_is_better else Verdict.B_FASTER


def holm_adjust(comparisons: Sequence[CellComparison]) -> list[CellComparison]:
    """Holm-Bonferroni across the given comparisons (those with a p-value; each enters by its
    family_p, so a verdict that had to survive missing runs still has to after the
    correction). An adjusted p is never below the raw one, so a verdict can only turn
    inconclusive, never change side; not-testable and survivorship verdicts stay what they
    are."""
    return holm_family(comparisons)[0]


def holm_family(
    comparisons: Sequence[CellComparison], others: Sequence[float] = ()
) -> tuple[list[CellComparison], np.ndarray]:
    """Holm over the comparisons (each by its family_p) and `others` (more p-values of the same
    family, e.g. the gate's completion tests) at once: the comparisons adjusted as
    holm_adjust says, and the others' adjusted p-values (nan stays nan, outside the family)."""
    idx = [i for i, c in enumerate(comparisons) if not math.isnan(c.p_value)]
    out = [replace(c, holm=True) for c in comparisons]
    extra = np.asarray(others, dtype=float)
    p_adj = holm(np.r_[[comparisons[i].family_p for i in idx], extra])
    for i, pa in zip(idx, p_adj[: len(idx)]):
        c = out[i]
        verdict = Verdict.INCONCLUSIVE if c.verdict.significant and not pa < c.alpha else c.verdict
        out[i] = replace(c, p_adjusted=float(pa), verdict=verdict)
    return out, p_adj[len(idx) :]


def paired_values(
    good: pd.DataFrame, cid: str, a: str, b: str, metric: str, pair_on: str
) -> tuple[np.ndarray, np.ndarray]:
    """Values of arms a and b of one cell matched on `pair_on` (the last attempt of each)."""
    g = good[good["cell_id"] == cid]
    if "attempt" in g:
        g = g.sort_values("attempt")
    sides = [g[g["arm"] == arm].drop_duplicates(pair_on, keep="last")[[pair_on, metric]] for arm in (a, b)]
    m = sides[0].merge(sides[1], on=pair_on, suffixes=("_a", "_b"))
    return m[f"{metric}_a"].to_numpy(dtype=float), m[f"{metric}_b"].to_numpy(dtype=float)


def with_failures_as_outcomes(runs: pd.DataFrame, good: pd.DataFrame, metric: str, value: float) -> pd.DataFrame:
    """`good` plus, for every (cell, arm, round) without a counted run whose last attempt
    failed or timed out, that run with `metric` = `value` (e.g. a page load that never
    finished as the timeout: censored, not dropped)."""
    lost = failed_rounds(runs, good)
    return pd.concat([good, lost.assign(**{metric: float(value)})], ignore_index=True)


def completions(runs: pd.DataFrame, good: pd.DataFrame) -> dict[tuple[str, str], Completion]:
    """(cell, arm) -> rounds with a counted run (or a failure counted as an outcome) of the
    rounds tried."""
    if runs.empty or "round" not in runs:
        return {}
    tried = runs.groupby(["cell_id", "arm"])["round"].nunique()
    counted = good.groupby(["cell_id", "arm"])["round"].nunique() if not good.empty else {}
    return {k: Completion(int(counted.get(k, 0)), int(n)) for k, n in tried.items()}


def compare_cells(
    runs: pd.DataFrame,
    pairs: Sequence[tuple[str, str]],
    *,
    cell_ids: Sequence[str] | None = None,
    alpha: float = 0.01,
    test: Test = "welch",
    holm: bool = False,
    confidence: float = 0.95,
    metric: str,
    lower_is_better: bool = True,
    better_word: str = "faster",
    exclude_flagged: bool = True,
    pair_on: str | None = None,
    survivorship_alpha: float = SURVIVORSHIP_ALPHA,
    failure_value: float | None = None,
    paired_cells: Collection[str] = (),
) -> list[CellComparison]:
    """One CellComparison per (cell, pair) over the runs that count (core.status). `runs`
    needs columns cell_id, arm, round, status, protocol_requested, protocol_negotiated and
    `metric` (Store.runs_frame() has them). `pair_on` (e.g. "run_id" for the flows of one
    run, "round" for the arms of one round): a paired design. Each arm's completion is
    checked for survivorship; `failure_value` (core.failures) makes a failed or timed-out
    round an outcome with that value instead. `paired_cells`: cells paired by round whatever
    `pair_on` says (their arms met the same network in each round: core.trace_phase). Holm
    correction, when asked for, is applied across the cells of each pair."""
    good = counted_runs(runs, metric, exclude_flagged=exclude_flagged)
    if failure_value is not None and not runs.empty:
        good = with_failures_as_outcomes(runs, good, metric, failure_value)
    if cell_ids is None:
        cell_ids = list(dict.fromkeys(runs["cell_id"]))
    groups = {k: g[metric].to_numpy(dtype=float) for k, g in good.groupby(["cell_id", "arm"])}
    done = completions(runs, good)
    empty = np.array([], dtype=float)
    result: list[CellComparison] = []
    for a_label, b_label in pairs:
        batch = []
        for cid in cell_ids:
            on = pair_on or ("round" if cid in paired_cells else None)
            if on:
                xa, xb = paired_values(good, cid, a_label, b_label, metric, on)
            else:
                xa, xb = groups.get((cid, a_label), empty), groups.get((cid, b_label), empty)
            batch.append(
                compare_samples(
                    xa,
                    xb,
                    a_label=a_label,
                    b_label=b_label,
                    cell_id=cid,
                    alpha=alpha,
                    test=test,
                    confidence=confidence,
                    metric=metric,
                    lower_is_better=lower_is_better,
                    better_word=better_word,
                    paired=on is not None,
                    completion_a=done.get((cid, a_label)),
                    completion_b=done.get((cid, b_label)),
                    survivorship_alpha=survivorship_alpha,
                )
            )
        result.extend(holm_adjust(batch) if holm else batch)
    return result


def options(statistics, *, metric=None, timeout_s: float | None = None, exclude_flagged: bool = True) -> dict:
    """compare_cells' keyword arguments from a scenario's [statistics] (a core.spec.Statistics)
    and the metric compared (a core.kind.Metric): the one place a scenario's settings become
    how its cells are compared. `timeout_s` is the run timeout a failure is worth when the
    scenario counts failures as outcomes."""
    out = dict(
        alpha=statistics.alpha,
        test=statistics.test,
        holm=statistics.holm,
        confidence=statistics.confidence,
        exclude_flagged=exclude_flagged,
        survivorship_alpha=statistics.survivorship_alpha,
    )
    if metric is not None:
        out.update(metric=metric.name, lower_is_better=metric.lower_is_better)
        if statistics.failures == "outcome" and timeout_s is not None:
            out["failure_value"] = metric.failure_value(timeout_s)
    return out


def comparisons_frame(comparisons: Iterable[CellComparison]) -> pd.DataFrame:
    return pd.DataFrame([c.as_row() for c in comparisons])
