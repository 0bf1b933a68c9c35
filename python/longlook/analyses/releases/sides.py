"""One bisect step: which side of a change a release is on, with its error rate, and when the
step has seen enough rounds.

A step measures its releases alternating within rounds: the ends alone at step 0 (GOOD, BAD),
then a release M with the two ends of the range still searched (LOW, M, HIGH). Its claims,
each a test at the look's alpha:

- step 0, the ends: "different" when Welch's test (the scenario's) of HIGH against LOW is
  significant (with `--threshold T`: also its interval wholly beyond +-T%); "the same" when
  its interval lies within +-T% (+-5% without --threshold: two one-sided tests);
- a later step, M against both ends:
  - "in between" (or "beyond an end") when M differs significantly from each end: a second
    change, one on either side of M (an intersection-union test: false at most alpha when
    M is truly like either end);
  - "like GOOD" when M lies on LOW's side of the ends' midpoint and differs from HIGH; "like
    BAD" the other way round. The side is a one-sided Welch test of the contrast
    mean_M - (mean_LOW + mean_HIGH) / 2 (Satterthwaite df): the midpoint is estimated from
    the same rounds, so its uncertainty is in the test, and the margin is the ends' own
    difference (a release like one end lies half of it from the midpoint). With
    `--threshold T` the margin is absolute instead: "like GOOD" when M's interval against
    LOW lies within +-T% (and not so against HIGH), "like BAD" the other way round;
    "in between" when M differs from each end beyond +-T%;
  - else "unclear".
  A comparison without a verdict (too few runs, not testable, or runs that completed at
  different rates: core.stats' survivorship check, given every arm's completion) leaves the
  step unclear.

Rounds. Step 0 looks at min, 2 min, 4 min ... and max rounds and stops at the first look
that decides: a large change is decided at the first. Its alpha is split over its looks
(Bonferroni), which holds whatever the looks' correlation and at Welch's small-n df, where
group-sequential boundaries (which assume normal statistics) would not. A later step's
rounds n are planned before it runs, from the previous step's rounds (core.adaptive's
`margin_rounds`): the margin the ends imply (half their difference, or T) and the ends'
within-arm spreads (M taken as the noisier end), for `power` to decide when M is like an
end. Nothing in the step's own rounds plans it, so its tests keep their level as in a fixed
design (a plan from the step's own pilot would favour a side; core.adaptive). It looks at n,
2n, 4n ... and max, the alpha split between its looks and n planned for the first look's
share: a spread measured on few rounds that was too small costs a look, not the budget.

Error rates. Each claim of a step is wrong with probability at most the step's alpha (the
sum over its looks); a step's verdict is wrong (a side, a second change) at most twice that.
The bisect gives each step alpha / (2 * its most steps) (bisect.py), so that a search with
one change names a wrong release with probability at most alpha.

Simulated (tests/calibration/test_bisect.py; lognormal runs, CV 5-15%, 0-10% of runs
failing at random, the plan from a previous step of 6-30 rounds; alpha 0.05 per claim):
a release exactly like GOOD placed "like BAD" in 0 of 400 steps and called a second change
in 3; a release exactly at the ends' midpoint "like GOOD" in 11 of 400 and "like BAD" in 9
(ends 3% to 2x apart); equal ends "different" in 2 of 300, ends exactly 5% apart "the same"
in 0 of 300; with an absolute margin of 10%, a release exactly 10% from GOOD "like GOOD" in
4 of 400. A release like GOOD is placed in 12.9 rounds on average (median 10; 16.7 and 9
with looks at n and max only).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
from scipy import stats as sps

from ...core.adaptive import margin_rounds
from ...core.stats import CellComparison, Completion, Verdict, compare_samples, equivalent
from ...core.verdicts import verdict_producer

# step 0
DIFFERENT, SAME = "different", "same"
# later steps
LIKE_GOOD, LIKE_BAD, BETWEEN, BEYOND = "like GOOD", "like BAD", "in between", "beyond an end"
UNCLEAR = "unclear"
SAME_PCT = 5.0  # step 0 without --threshold: ends within +-this % of each other are "the same"
POWER = 0.9  # a later step plans for this chance of deciding when its release is like an end
UNUSABLE = (Verdict.INSUFFICIENT, Verdict.NOT_TESTABLE, Verdict.SURVIVORSHIP)


@dataclass
class StepRuns:
    """A step's measurements as the store has them: per release, one entry per round begun,
    the counted value (nan: the round's run failed, was flagged or is missing) and whether a
    run was tried; with how the scenario compares them."""

    releases: list[str]  # [LOW, HIGH] or [LOW, M, HIGH]
    values: dict[str, np.ndarray]
    tried: dict[str, np.ndarray]
    metric: str = "plt_ms"
    lower_is_better: bool = True
    test: str = "welch"
    survivorship_alpha: float = 0.05

    @property
    def rounds(self) -> int:
        return max((len(v) for v in self.values.values()), default=0)

    def upto(self, rounds: int) -> "StepRuns":
        return replace(
            self,
            values={r: v[:rounds] for r, v in self.values.items()},
            tried={r: t[:rounds] for r, t in self.tried.items()},
        )

    def sample(self, release: str) -> np.ndarray:
        v = self.values[release]
        return v[~np.isnan(v)]

    def completion(self, release: str) -> Completion:
        return Completion(int(np.sum(~np.isnan(self.values[release]))), int(np.sum(self.tried[release])))


@dataclass(frozen=True)
class StepPlan:
    """What a step needs to know before it runs. `gap`, `spreads` and `means`: from the
    previous step (the ends' difference, their within-arm variances and their means, LOW's
    then HIGH's, in the metric's unit); `sign` +1 when HIGH's metric is above LOW's."""

    alpha: float  # the step's, per claim, split over its looks
    min_rounds: int
    max_rounds: int
    threshold_pct: float | None = None  # an absolute margin; None: the ends' midpoint
    same_pct: float = SAME_PCT
    gap: float = math.nan
    spreads: tuple[float, float] = (math.nan, math.nan)
    means: tuple[float, float] = (math.nan, math.nan)
    sign: int = 0
    power: float = POWER

    def looks(self, ends_only: bool) -> list[int]:
        """The rounds at which the step decides (its alpha split over them)."""
        return doubling(self.min_rounds if ends_only else self.planned(), self.max_rounds)

    def planned(self) -> int:
        """A later step's first look, from the previous step alone (see the module's
        docstring), for the alpha each of its looks gets."""
        n = self.min_rounds
        for _ in range(3):  # the looks depend on n, and n on the looks' alpha: settles at once
            n = self._rounds_for(self.alpha / len(doubling(n, self.max_rounds)))
        return n

    def _rounds_for(self, alpha: float) -> int:
        v_low, v_high = self.spreads
        v_mid = max(v_low, v_high) if not (math.isnan(v_low) or math.isnan(v_high)) else math.nan
        if self.threshold_pct is None:
            return margin_rounds(
                [v_mid, v_low, v_high],
                [1.0, -0.5, -0.5],
                abs(self.gap) / 2,
                alpha,
                self.power,
                self.min_rounds,
                self.max_rounds,
            )
        # M within +-T% of an end: T% of that end's mean (core.stats' % is against the end)
        return max(
            margin_rounds(
                [v_mid, v],
                [1.0, -1.0],
                self.threshold_pct / 100 * abs(m),
                alpha,
                self.power,
                self.min_rounds,
                self.max_rounds,
                equivalence=True,
            )
            for v, m in zip(self.spreads, self.means)
        )


def doubling(first: int, last: int) -> list[int]:
    """Looks at first, 2 first, 4 first ... and last: a plan that was short (a spread
    measured on few rounds) costs one more look, not the whole budget."""
    out, n = [], first
    while n < last:
        out.append(n)
        n *= 2
    return out + [last]


@dataclass
class Contrast:
    """M against the midpoint of the ends, oriented so that positive is HIGH's side."""

    estimate: float  # sign * (mean_M - (mean_LOW + mean_HIGH) / 2)
    se: float
    df: float
    low: float  # its (1 - 2 alpha) interval: each bound one-sided at alpha
    high: float


@dataclass
class Look:
    """A step's verdict at one look."""

    rounds: int
    alpha: float  # each claim's at this look
    verdict: str
    comparisons: dict[tuple[str, str], CellComparison]  # (release, end) -> release against end
    contrast: Contrast | None = None
    share: tuple[float, float, float] = (math.nan, math.nan, math.nan)  # M's place between the ends, 0..1
    reason: str = ""

    @property
    def confidence(self) -> float:
        return 1 - 2 * self.alpha


@dataclass
class Decision:
    done: bool  # no more rounds: a look decided, or the last look was reached
    look: Look | None  # the deciding look, else the last look reached (None: none yet)
    looks: list[int] = field(default_factory=list)


def own_change(c: CellComparison) -> tuple[float, float, float]:
    """The metric's own change of A against B in % of |B| (load time +19% = slower) with its
    interval in the same convention: core.stats states both in the better direction (+ = A
    better), so for a lower-is-better metric both flip."""
    flip = -1.0 if c.lower_is_better else 1.0
    lo, hi = sorted((flip * float(c.ci_low), flip * float(c.ci_high)))
    return flip * float(c.percent_difference), lo, hi


def _compare(runs: StepRuns, a: str, b: str, alpha: float) -> CellComparison:
    return compare_samples(
        runs.sample(a),
        runs.sample(b),
        a_label=a,
        b_label=b,
        alpha=alpha,
        test=runs.test,
        confidence=1 - 2 * alpha,
        metric=runs.metric,
        lower_is_better=runs.lower_is_better,
        completion_a=runs.completion(a),
        completion_b=runs.completion(b),
        survivorship_alpha=runs.survivorship_alpha,
    )


def _unusable(cs) -> str:
    bad = [c for c in cs if c.verdict in UNUSABLE]
    return "; ".join(
        f"{c.a.label} vs {c.b.label}: {c.verdict_text}" + (f" ({c.reason})" if c.reason else "") for c in bad
    )


def contrast(m: np.ndarray, low: np.ndarray, high: np.ndarray, sign: int, alpha: float) -> Contrast:
    """Welch's contrast of M against the ends' midpoint (a few lines: no library offers a
    contrast of three independent means with Satterthwaite df)."""
    terms = np.array([np.var(x, ddof=1) / len(x) * w * w for x, w in ((m, 1.0), (low, 0.5), (high, 0.5))])
    est = sign * (float(np.mean(m)) - (float(np.mean(low)) + float(np.mean(high))) / 2)
    var = float(terms.sum())
    df = var * var / float(np.sum(terms**2 / (np.array([len(m), len(low), len(high)]) - 1))) if var > 0 else math.nan
    se = math.sqrt(var)
    h = float(sps.t.ppf(1 - alpha, df)) * se if var > 0 else math.nan
    return Contrast(est, se, df, est - h, est + h)


def share(m: np.ndarray, low: np.ndarray, high: np.ndarray, alpha: float) -> tuple[float, float, float]:
    """Where M lies between the ends, (mean_M - mean_LOW) / (mean_HIGH - mean_LOW) (0: like
    LOW, 1: like HIGH), with Fieller's (1 - 2 alpha) interval for a ratio whose numerator and
    denominator share LOW's mean; nan bounds when the ends' difference is not clear of 0."""
    vm, vl, vh = (np.var(x, ddof=1) / len(x) for x in (m, low, high))
    a, b = float(np.mean(m) - np.mean(low)), float(np.mean(high) - np.mean(low))
    if b == 0:
        return math.nan, math.nan, math.nan
    va, vb, cov = vm + vl, vh + vl, vl
    terms = np.array([vm, vl, vh])
    ns = np.array([len(m), len(low), len(high)])
    df = float(terms.sum() ** 2 / np.sum(terms**2 / (ns - 1))) if terms.sum() > 0 else math.nan
    t2 = float(sps.t.ppf(1 - alpha, df)) ** 2 if not math.isnan(df) else math.nan
    qa, qb, qc = b * b - t2 * vb, -2 * (a * b - t2 * cov), a * a - t2 * va
    disc = qb * qb - 4 * qa * qc
    if math.isnan(t2) or qa <= 0 or disc < 0:
        return a / b, math.nan, math.nan
    s = math.sqrt(disc)
    return a / b, float((-qb - s) / (2 * qa)), float((-qb + s) / (2 * qa))


@verdict_producer(
    "releases.bisect_step",
    "a bisect step: the ends differ / are the same; a release like GOOD, like BAD, or in between (a second change)",
)
def judge(runs: StepRuns, plan: StepPlan, alpha: float) -> Look:
    """The step's verdict on these rounds, each claim at `alpha` (see the module's docstring)."""
    if len(runs.releases) == 2:
        return _judge_ends(runs, plan, alpha)
    return _judge_middle(runs, plan, alpha)


def _judge_ends(runs: StepRuns, plan: StepPlan, alpha: float) -> Look:
    low, high = runs.releases
    c = _compare(runs, high, low, alpha)
    comps = {(high, low): c}
    if why := _unusable([c]):
        return Look(runs.rounds, alpha, UNCLEAR, comps, reason=why)
    _, lo, hi = own_change(c)
    t = plan.threshold_pct
    if c.verdict.significant and (t is None or lo > t or hi < -t):
        return Look(runs.rounds, alpha, DIFFERENT, comps)
    if equivalent(c, plan.same_pct if t is None else t):
        return Look(runs.rounds, alpha, SAME, comps)
    return Look(runs.rounds, alpha, UNCLEAR, comps, reason="neither different nor within the margin yet")


def _judge_middle(runs: StepRuns, plan: StepPlan, alpha: float) -> Look:
    low, mid, high = runs.releases
    c_low, c_high = _compare(runs, mid, low, alpha), _compare(runs, mid, high, alpha)
    comps = {(mid, low): c_low, (mid, high): c_high}
    if why := _unusable([c_low, c_high]):
        return Look(runs.rounds, alpha, UNCLEAR, comps, reason=why)
    xm, xl, xh = runs.sample(mid), runs.sample(low), runs.sample(high)
    sign = plan.sign or int(np.sign(np.mean(xh) - np.mean(xl))) or 1
    place = share(xm, xl, xh, alpha)
    con = contrast(xm, xl, xh, sign, alpha)
    t = plan.threshold_pct

    def differs(c: CellComparison) -> bool:
        _, lo, hi = own_change(c)
        return c.verdict.significant and (t is None or lo > t or hi < -t)

    look = Look(runs.rounds, alpha, UNCLEAR, comps, con, place)
    if differs(c_low) and differs(c_high):
        # between: M above LOW and below HIGH in the ends' order; beyond: past one of them
        between = c_low.direction == sign and c_high.direction == -sign
        look.verdict = BETWEEN if between else BEYOND
    elif t is None:
        if con.high < 0 and c_high.verdict.significant:
            look.verdict = LIKE_GOOD
        elif con.low > 0 and c_low.verdict.significant:
            look.verdict = LIKE_BAD
    else:
        near_low, near_high = equivalent(c_low, t) is True, equivalent(c_high, t) is True
        if near_low and not near_high:
            look.verdict = LIKE_GOOD
        elif near_high and not near_low:
            look.verdict = LIKE_BAD
    if look.verdict == UNCLEAR:
        look.reason = (
            "on neither side of the midpoint at this precision"
            if t is None
            else f"within +-{t:g}% of neither end alone at this precision"
        )
    return look


def decide(runs: StepRuns, plan: StepPlan) -> Decision:
    """The step at the rounds it has: the first look whose verdict is not unclear decides;
    after the last look there is nothing more to run. The same answer whether asked after
    every round (the experiment's loop) or once on all rounds (a resumed or simulated step):
    a look reads only the rounds before it."""
    looks = plan.looks(ends_only=len(runs.releases) == 2)
    alpha = plan.alpha / len(looks)
    last = None
    for n in looks:
        if runs.rounds < n:
            break
        last = judge(runs.upto(n), plan, alpha)
        if last.verdict != UNCLEAR:
            return Decision(True, last, looks)
    return Decision(runs.rounds >= looks[-1], last, looks)


def runs_of_step(runs: pd.DataFrame, counted: pd.DataFrame, arms: dict[str, str], metric: str, **how) -> StepRuns:
    """A step's StepRuns from its experiment's runs (Store.runs_frame() rows of its one cell)
    and those that count (core.status; with failures counted as outcomes where the scenario
    says so). `arms`: release -> arm label, in the step's order."""
    n = int(runs["round"].max()) + 1 if len(runs) else 0
    values, tried = {}, {}
    for release, label in arms.items():
        v = np.full(n, np.nan)
        t = np.zeros(n, dtype=bool)
        mine = runs[runs["arm"] == label]
        t[mine["round"].astype(int).unique()] = True
        ok = counted[counted["arm"] == label]
        if "attempt" in ok:
            ok = ok.sort_values("attempt")
        for r, x in zip(ok["round"].astype(int), ok[metric].astype(float)):
            v[r] = x  # the last counted attempt of the round
        values[release], tried[release] = v, t
    return StepRuns(list(arms), values, tried, metric=metric, **how)
