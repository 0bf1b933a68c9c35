"""`longlook bisect STACK GOOD BAD`: the first release between two where a metric changed,
by binary search with a statistical test at every step, never a guess.

Step 0 measures GOOD against BAD; if they do not differ (the interval of their difference
lies within +-threshold) the answer is "they do not differ", and if it cannot tell, the
answer is "inconclusive". Each later step measures the middle release of the remaining
range with both ends, alternating within every round (so time drift cannot pass for a
release effect), with adaptive rounds planned for an interval of half the threshold
(core.adaptive), up to the step's budget. The middle release is compared with GOOD
(core.stats, the scenario's test, two-sided):
- different (significant and its whole interval beyond the threshold): the change is at or
  before it, the range's upper end moves down to it;
- the same (interval within +-threshold): the change is after it, the lower end moves up;
- neither: "inconclusive" at this release, and the search stops there.
With N releases strictly between GOOD and BAD it ends in at most ceil(log2(N + 1)) + 1 steps.
Every step is its own experiment directory (DIR/step-K-VERSION), so an interrupted bisect
resumes where it stopped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

from ...core.stats import CellComparison, Verdict, equivalent

DIFFERENT, SAME, UNCLEAR = "different", "same", "inconclusive"


@dataclass
class Step:
    index: int
    release: str  # the release measured against the ends (step 0: BAD against GOOD)
    against: str
    n: tuple[int, int]
    change_pct: float
    p: float
    interval: tuple[float, float]
    verdict: str  # different | same | inconclusive
    directory: str = ""


@dataclass
class BisectResult:
    stack: str
    good: str
    bad: str
    releases: list[str]  # good .. bad, oldest first
    threshold_pct: float
    steps: list[Step] = field(default_factory=list)
    first_changed: str | None = None  # the first release whose metric differs from GOOD's
    outcome: str = ""  # "found" | "no difference" | "inconclusive"

    def max_steps(self) -> int:
        return max_steps(len(self.releases))

    def summary(self) -> str:
        if self.outcome == "found":
            return (f"{self.stack}: the metric first changed in {self.first_changed} "
                    f"(after {self._before_first()}), {len(self.steps)} steps")
        if self.outcome == "no difference":
            return f"{self.stack}@{self.good} and @{self.bad} do not differ (within +-{self.threshold_pct:g}%)"
        last = self.steps[-1] if self.steps else None
        where = f" at {last.release} vs {last.against}" if last else ""
        return f"{self.stack}: inconclusive{where}: its budget ended before the comparison could decide"

    def _before_first(self) -> str:
        i = self.releases.index(self.first_changed)
        return self.releases[i - 1]


def max_steps(n_releases: int) -> int:
    """The most steps a search over GOOD .. BAD (n_releases, ends included) can take."""
    return math.ceil(math.log2(max(1, n_releases - 2) + 1)) + 1


def judge(c: CellComparison, threshold_pct: float) -> str:
    """different: significant with its whole interval beyond +-threshold; same: its whole
    interval inside +-threshold; otherwise inconclusive."""
    if c.verdict in (Verdict.INSUFFICIENT, Verdict.NOT_TESTABLE, Verdict.SURVIVORSHIP):
        return UNCLEAR
    if equivalent(c, threshold_pct):
        return SAME
    significant = c.verdict in (Verdict.A_FASTER, Verdict.B_FASTER)
    lo, hi = c.ci_low, c.ci_high
    beyond = not math.isnan(lo) and (lo > threshold_pct or hi < -threshold_pct)
    return DIFFERENT if significant and beyond else UNCLEAR


def bisect(stack: str, releases: list[str], threshold_pct: float,
           measure: Callable[[int, list[str]], tuple[dict[tuple[str, str], CellComparison], str]]) -> BisectResult:
    """`releases`: GOOD .. BAD oldest first. `measure(step, [releases]) -> ({(a, b):
    comparison of a against b}, directory)` runs one step's experiment (the releases
    alternating within rounds) and compares each release with each end."""
    good, bad = releases[0], releases[-1]
    res = BisectResult(stack, good, bad, releases, threshold_pct)
    comparisons, where = measure(0, [good, bad])
    res.steps.append(_step(0, bad, good, comparisons[(bad, good)], threshold_pct, where))
    if res.steps[0].verdict == SAME:
        res.outcome = "no difference"
        return res
    if res.steps[0].verdict == UNCLEAR:
        res.outcome = "inconclusive"
        return res
    lo, hi = 0, len(releases) - 1  # lo: same as GOOD; hi: differs from GOOD
    while hi - lo > 1:
        mid = (lo + hi) // 2
        comparisons, where = measure(len(res.steps), [good, releases[mid], bad])
        step = _step(len(res.steps), releases[mid], good, comparisons[(releases[mid], good)], threshold_pct, where)
        res.steps.append(step)
        if step.verdict == DIFFERENT:
            hi = mid
        elif step.verdict == SAME:
            lo = mid
        else:
            res.outcome = "inconclusive"
            return res
    res.first_changed = releases[hi]
    res.outcome = "found"
    return res


def _step(index: int, release: str, against: str, c: CellComparison, threshold: float, where: str) -> Step:
    # the metric's own change, release against GOOD (e.g. page load time +20%); the
    # interval is the comparison's (its % in the metric's better direction)
    change = (c.a.mean - c.b.mean) / c.b.mean * 100 if c.b.mean else math.nan
    return Step(index, release, against, (c.a.n, c.b.n), change, c.p_value,
                (c.ci_low, c.ci_high), judge(c, threshold), where)
