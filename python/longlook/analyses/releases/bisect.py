"""`longlook bisect STACK GOOD BAD`: the releases between two where a metric changed, by a
search that places each release it measures on one side of the change, with a test and its
error rate at every step, never a guess.

Step 0 measures GOOD against BAD until their difference is decided (sides.py: looks at 6,
12, 24 ... rounds): "they do not differ" or "inconclusive" ends the search. Otherwise the
range GOOD..BAD holds a change, and each later step measures the middle release M of a range
still to search together with the range's two ends, alternating within rounds (so drift
cannot pass for a release effect), for the rounds planned from the previous step (the margin
the ends imply and their spread), and places it (sides.py):
- like GOOD: the change is after M; the range becomes M..HIGH;
- like BAD: the change is at or before M; the range becomes LOW..M;
- in between (or beyond an end): the metric moved on both sides of M, a second change; both
  LOW..M and M..HIGH are searched, each carrying its share of the change;
- unclear (its budget ended first, or the runs completed unevenly): that range stays
  unplaced, said so, and the search goes on with any other range.
A range of two adjacent releases is a change: the later one changed the metric, carrying
(its level - the level before) / (BAD - GOOD) of the whole change (M's place between the
ends, with its interval, from the step that split it).

Errors. With N releases strictly between the ends a single change is found in at most
ceil(log2(N + 1)) + 1 steps. Each step gets alpha / (2 * that) per claim, so one change is
named wrongly with probability at most alpha (the scenario's, or --alpha); a search that
finds a second change takes more steps, and its bound (2 * alpha per step * steps) is stated
with it. Every step is its own experiment directory (DIR/step-K-VERSION): an interrupted
bisect resumes where it stopped, and replays the same path (every plan comes from the
stored rounds of earlier steps).

Simulated (tests/calibration/test_bisect.py; 8-16 releases, lognormal runs with CV 5-15%,
0-10% of runs failing at random, alpha 0.05): no change, a release named in 0 of 150
searches; one change of 10% to 6x, a wrong release in 0 of 100 (bound 0.043), every change
found in 84 (all of 1.5x or more when at most 5% of runs fail; 65% at 10%, where the
survivorship check's worst case at a step's small alpha leaves steps unclear), 4.2 steps of
13.6 rounds on average (median 8); two changes of 1.5x to 6x in all, each 30-70% of it, a
wrong release in 0 of 60, both found in 43, 5.5 steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ...core.verdicts import verdict_producer
from .history import release_point
from .sides import (
    BETWEEN,
    BEYOND,
    DIFFERENT,
    LIKE_BAD,
    LIKE_GOOD,
    SAME,
    SAME_PCT,
    UNCLEAR,
    Look,
    StepPlan,
    StepRuns,
    decide,
    own_change,
)

FOUND, NO_DIFFERENCE, INCONCLUSIVE = "found", "no difference", "inconclusive"
# which end a step's verdict says its release is like ("both": a change on either side of it)
SIDE_OF = {
    LIKE_GOOD: "GOOD",
    LIKE_BAD: "BAD",
    BETWEEN: "both",
    BEYOND: "both",
    DIFFERENT: "BAD",
    SAME: "GOOD",
    UNCLEAR: "-",
}

# measure(step index, [LOW, (M,) HIGH], plan) -> (the step's runs, its directory): runs the
# step's experiment, stopping when decide(runs, plan) says so
Measure = Callable[[int, list[str], StepPlan], tuple[StepRuns, str]]


@dataclass
class Point:
    """A release's mean over a step's counted runs, with its 95% t-interval (for the path)."""

    release: str
    n: int
    mean: float
    low: float
    high: float
    completion: str


@dataclass
class Step:
    index: int
    release: str  # the release placed (step 0: BAD)
    ends: tuple[str, str]  # LOW, HIGH of the range searched (step 0: GOOD, BAD)
    verdict: str
    rounds: int  # the rounds it ran (its deciding look)
    looks: list[int]
    alpha: float  # each claim's at the deciding look
    confidence: float  # the intervals', 1 - 2 alpha
    points: list[Point]
    # the metric's own change of `release` against LOW and against HIGH (step 0: BAD vs GOOD),
    # in % of the end's mean, with its interval in the same convention
    change_pct: float = math.nan
    interval: tuple[float, float] = (math.nan, math.nan)
    p: float = math.nan
    change_vs_high_pct: float = math.nan
    interval_vs_high: tuple[float, float] = (math.nan, math.nan)
    p_vs_high: float = math.nan
    midpoint_pct: float = math.nan  # the ends' midpoint, % against LOW
    share: tuple[float, float, float] = (math.nan, math.nan, math.nan)  # the release's place, 0 LOW .. 1 HIGH
    reason: str = ""
    directory: str = ""

    @property
    def against(self) -> str:
        return self.ends[0]

    @property
    def n(self) -> tuple[int, ...]:
        return tuple(p.n for p in self.points)


@dataclass
class Change:
    before: str
    after: str  # the release that changed the metric
    share: float  # of the whole change GOOD -> BAD
    share_low: float  # nan: the only change found (no split measured a share)
    share_high: float
    step: int  # the step that measured both releases last
    change_pct: float = math.nan  # the metric's own change, after against before, in that step
    interval: tuple[float, float] = (math.nan, math.nan)
    confidence: float = math.nan


@dataclass
class BisectResult:
    stack: str
    good: str
    bad: str
    releases: list[str]  # good .. bad, oldest first
    alpha: float
    step_alpha: float  # each claim of a step
    threshold_pct: float | None
    steps: list[Step] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    unplaced: list[tuple[str, str, str]] = field(default_factory=list)  # (LOW, HIGH, why)
    outcome: str = ""

    @property
    def first_changed(self) -> str | None:
        return self.changes[0].after if self.changes else None

    def max_steps(self) -> int:
        return max_steps(len(self.releases))

    def error_bound(self) -> float:
        """The chance this path names a wrong release: each step's verdict is wrong at most
        twice its per-claim alpha."""
        return min(1.0, 2 * self.step_alpha * len(self.steps))

    def margin_text(self) -> str:
        return "the ends' midpoint" if self.threshold_pct is None else f"+-{self.threshold_pct:g}% of an end"

    def summary(self) -> str:
        steps = f"{len(self.steps)} step{'s' if len(self.steps) != 1 else ''}"
        rounds = sum(s.rounds for s in self.steps)
        err = f"a wrong release at most {self.error_bound():.2%} of the time"
        if self.outcome == NO_DIFFERENCE:
            within = self.threshold_pct if self.threshold_pct is not None else SAME_PCT
            return f"{self.stack}@{self.good} and @{self.bad} do not differ (within +-{within:g}%), {rounds} rounds"
        if not self.changes:
            where = "; ".join(f"{lo}..{hi}: {why}" for lo, hi, why in self.unplaced)
            return f"{self.stack}: inconclusive: {where or 'nothing decided'}"
        if len(self.changes) == 1 and not self.unplaced:
            c = self.changes[0]
            return (
                f"{self.stack}: the metric first changed in {c.after} (after {c.before}): {_size(c)}; "
                f"{steps}, {rounds} rounds; {err}"
            )
        parts = [f"{c.after} (after {c.before}): {_size(c)}, {_share(c)}" for c in self.changes]
        text = f"{self.stack}: the metric changed in {len(self.changes)} releases: " + ", ".join(parts)
        if self.unplaced:
            text += "; not placed: " + "; ".join(f"{lo}..{hi} ({why})" for lo, hi, why in self.unplaced)
        return f"{text}; {steps}, {rounds} rounds; {err}"


def _size(c: Change) -> str:
    lo, hi = c.interval
    if math.isnan(c.change_pct):
        return "size unknown"
    within = f" ({c.confidence:.2%} interval {lo:+.1f}..{hi:+.1f}%)" if not math.isnan(lo) else ""
    return f"{c.change_pct:+.1f}%{within}"


def _share(c: Change) -> str:
    if math.isnan(c.share_low):
        return f"carries {c.share:.0%} of the change"
    return f"carries {c.share:.0%} of the change ({c.share_low:.0%}..{c.share_high:.0%})"


def max_steps(n_releases: int) -> int:
    """The most steps a search for one change over GOOD .. BAD (n_releases, ends included)
    can take."""
    return math.ceil(math.log2(max(1, n_releases - 2) + 1)) + 1


@dataclass
class _Range:
    lo: int
    hi: int
    pos: tuple[float, float]  # the ends' places in the whole change, GOOD 0 .. BAD 1
    pos_interval: tuple[float, float]  # of the place the last split gave (nan: exact by construction)
    plan: StepPlan
    origin: int  # the step that measured both ends last


@verdict_producer("releases.bisect", "the release(s) where a metric changed between two releases")
def bisect(
    stack: str,
    releases: list[str],
    measure: Measure,
    *,
    alpha: float = 0.01,
    threshold_pct: float | None = None,
    min_rounds: int = 6,
    max_rounds: int = 30,
    same_pct: float = SAME_PCT,
) -> BisectResult:
    """`releases`: GOOD .. BAD oldest first. `measure` runs a step (see Measure). Without
    `threshold_pct` each release is placed against the midpoint of its range's ends; with
    it, against +-threshold_pct% of each end."""
    good, bad = releases[0], releases[-1]
    step_alpha = alpha / (2 * max_steps(len(releases)))
    res = BisectResult(stack, good, bad, releases, alpha, step_alpha, threshold_pct)
    base = StepPlan(step_alpha, min_rounds, max_rounds, threshold_pct, same_pct)
    runs, where = measure(0, [good, bad], base)
    look, looks = _decided(runs, base)
    res.steps.append(_step(0, runs, look, looks, where))
    if look is None or look.verdict != DIFFERENT:
        res.outcome = NO_DIFFERENCE if look is not None and look.verdict == SAME else INCONCLUSIVE
        if res.outcome == INCONCLUSIVE:
            res.unplaced.append((good, bad, _why(look)))
        return res
    todo = [_Range(0, len(releases) - 1, (0.0, 1.0), (math.nan, math.nan), next_plan(base, runs, good, bad), 0)]
    while todo:
        r = todo.pop()
        low, high = releases[r.lo], releases[r.hi]
        if r.hi - r.lo == 1:
            res.changes.append(_change(res.steps[r.origin], low, high, r))
            continue
        mid = (r.lo + r.hi) // 2
        m = releases[mid]
        runs, where = measure(len(res.steps), [low, m, high], r.plan)
        look, looks = _decided(runs, r.plan)
        step = _step(len(res.steps), runs, look, looks, where)
        res.steps.append(step)
        verdict = step.verdict
        if verdict == UNCLEAR:
            res.unplaced.append((low, high, _why(look)))
            continue
        f, f_lo, f_hi = step.share
        span = r.pos[1] - r.pos[0]
        here = step.index
        if verdict == LIKE_GOOD:
            todo.append(_Range(mid, r.hi, r.pos, r.pos_interval, next_plan(base, runs, m, high), here))
        elif verdict == LIKE_BAD:
            todo.append(_Range(r.lo, mid, r.pos, r.pos_interval, next_plan(base, runs, low, m), here))
        else:  # a second change: search both sides, the lower one first
            at = r.pos[0] + span * f
            at_int = (r.pos[0] + span * f_lo, r.pos[0] + span * f_hi)
            low_int = tuple(x - r.pos[0] for x in at_int)
            high_int = tuple(r.pos[1] - x for x in reversed(at_int))
            todo.append(_Range(mid, r.hi, (at, r.pos[1]), high_int, next_plan(base, runs, m, high), here))
            todo.append(_Range(r.lo, mid, (r.pos[0], at), low_int, next_plan(base, runs, low, m), here))
    res.changes.sort(key=lambda c: releases.index(c.after))
    res.outcome = FOUND if res.changes and not res.unplaced else INCONCLUSIVE
    return res


def _change(step: Step, before: str, after: str, r: _Range) -> Change:
    """The change from `before` to `after` as the step that measured both saw it: `after`
    against `before` in the metric's own convention (a release against HIGH inverted)."""
    c = Change(before, after, r.pos[1] - r.pos[0], *r.pos_interval, step.index, confidence=step.confidence)
    if step.release == after and step.ends[0] == before:
        c.change_pct, c.interval = step.change_pct, step.interval
    elif step.release == before and step.ends[1] == after:
        inverse = lambda x: (100 / (1 + x / 100) - 100) if x > -100 else math.nan  # noqa: E731
        lo, hi = step.interval_vs_high
        c.change_pct, c.interval = inverse(step.change_vs_high_pct), (inverse(hi), inverse(lo))
    return c


def _decided(runs: StepRuns, plan: StepPlan) -> tuple[Look | None, list[int]]:
    d = decide(runs, plan)
    return d.look, d.looks


def _why(look: Look | None) -> str:
    if look is None:
        return "no look reached (the step ran fewer rounds than its first look)"
    return (
        f"unclear after {look.rounds} rounds: {look.reason}" if look.reason else f"unclear after {look.rounds} rounds"
    )


def next_plan(base: StepPlan, runs: StepRuns, low: str, high: str) -> StepPlan:
    """The plan of a step on the range low..high, from this step's rounds of those two."""
    xl, xh = runs.sample(low), runs.sample(high)
    var = tuple(float(np.var(x, ddof=1)) if len(x) >= 2 else math.nan for x in (xl, xh))
    ml, mh = (float(np.mean(x)) if len(x) else math.nan for x in (xl, xh))
    gap = mh - ml
    sign = int(np.sign(gap)) if not math.isnan(gap) else 0
    return StepPlan(
        base.alpha,
        base.min_rounds,
        base.max_rounds,
        base.threshold_pct,
        base.same_pct,
        gap=gap,
        spreads=var,
        means=(ml, mh),
        sign=sign,
        power=base.power,
    )


def _point(runs: StepRuns, release: str) -> Point:
    x = runs.sample(release)
    p = release_point(x, release, release)
    return Point(release, p.n, p.mean, p.low, p.high, str(runs.completion(release)))


def _step(index: int, runs: StepRuns, look: Look | None, looks: list[int], where: str) -> Step:
    if look is not None:
        runs = runs.upto(look.rounds)
    ends = (runs.releases[0], runs.releases[-1])
    release = runs.releases[1] if len(runs.releases) == 3 else runs.releases[-1]
    points = [_point(runs, r) for r in runs.releases]
    if look is None:
        return Step(
            index,
            release,
            ends,
            UNCLEAR,
            runs.rounds,
            looks,
            math.nan,
            math.nan,
            points,
            reason="no look reached",
            directory=where,
        )
    step = Step(
        index,
        release,
        ends,
        look.verdict,
        look.rounds,
        looks,
        look.alpha,
        look.confidence,
        points,
        reason=look.reason,
        share=look.share,
        directory=where,
    )
    c = look.comparisons[(release, ends[0])]
    step.change_pct, *interval = own_change(c)
    step.interval, step.p = tuple(interval), c.p_value
    if len(runs.releases) == 3:
        h = look.comparisons[(release, ends[1])]
        step.change_vs_high_pct, *interval = own_change(h)
        step.interval_vs_high, step.p_vs_high = tuple(interval), h.p_value
        lo_mean, hi_mean = c.b.mean, h.b.mean
        step.midpoint_pct = ((lo_mean + hi_mean) / 2 - lo_mean) / abs(lo_mean) * 100 if lo_mean else math.nan
    return step
