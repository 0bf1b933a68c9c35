"""One parameter of a stack across its runs: "deviates", "conforms", "inconclusive" or
"not measurable", held against the kernel's runs of the same cell (the reference
implementation) and the specification's bound (params/: `bound_of`).

A single run's value against the bound (the verdict each run stores) says little: in a
3-round run of our endpoint, the kernel's own Cubic, the reference, was "deviates" in two of
its runs (a slow-start exit 14.7 ms against a 13 ms bound; a decrease of 0.75 from three
episodes of 0.60-0.80). Across runs, therefore:

- **deviates** only when a test says the stack's values differ from the reference's, and on
  the side that takes the stack out of the bound: the scenario's test
  (core.stats.compare_samples: both sides' spread, both sides' completions) of the stack's
  values against the kernel's, each kernel value moved by the difference of the two
  specifications' values (TCP's initial window of 10 x 1448 B is QUIC's 12000 B), at
  alpha after Holm over the stack's parameters (over every cell's with the scenario's
  `holm`); and the stack's centre outside the bound, beyond the reference. Where the
  reference has no values (its log lacks the parameter: pacing and ACKs in a TCP log; no
  kernel runs), the stack's centre is tested against the bound's nearer edge with its own
  spread (compare_samples, paired with the edge: a one-sample t on the log scale,
  two-sided), in the same Holm family. A run without the value is a missing value for the
  comparison's survivorship check (core.stats), as a failed run is.
- **conforms** only from an equivalence statement: the (1 - 2 alpha) interval of the
  stack's centre lies within the bound (two one-sided tests at alpha).
- **inconclusive** otherwise (one run, an interval across the bound, a difference the test
  does not see); **not measurable** when no run measured it.

No order of rows or verdicts enters. The centre is the mean of the per-run values on the
log scale (their geometric mean; the median of a lognormal), or the plain mean where a
value is 0 or below: the timings and counts measured here are right-skewed, and on the raw
scale a t interval calls a skewed parameter whose median sits at the bound's upper edge
"conforms" 1.3-1.8 times as often as alpha at 3-5 runs (lognormal, sd of the log 0.2-0.5;
on the log scale 1.0 times). Values the same in every run (two or more) are taken as
exact: their interval is that value, and two constant sides differ exactly or not at all.
Parameters the sender sets rather than shows (the initial window, the datagram size) are
like that; a measured parameter that jumps between a few values could look constant over
a few runs, where this rule would say too much (the reference against itself, below,
shows it for the reference).

The reference's own row: "conforms" when the interval of its centre lies within the bound,
"outside the bound" when it lies wholly beyond it (then the bound, or the extractor, does not
fit the reference implementation), else inconclusive; beside it, the reference against
itself: its runs split in two, every split (at most MAX_SPLITS) judged by the rule above
with one half as the stack, and how often it said "deviates".

Calibration (tests/calibration/test_conformance.py, alpha 0.05): a stack drawn like the
reference (slow-start exits lognormal around 9 ms, decreases the median of 2-6 episodes of
0.6-0.8, C lognormal, the initial window and datagram size constant, 3-10 rounds, runs
without a value at the same rate on both sides) was "deviates" on any of its 7 parameters in
0.8% of 900 trials; a stack whose median sits on the bound's edge was "conforms" in 4.0%
(slow-start exit), 4.9% and 5.6% (decrease at 0.75 and 0.65) of 900; the reference on the
edge was "outside the bound" in 5.2% of 3000.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ...core.stats import (
    MIN_N,
    SURVIVORSHIP_ALPHA,
    CellComparison,
    Completion,
    Verdict,
    compare_samples,
    holm_family,
    missing_values,
)
from ...core.verdicts import verdict_producer
from .envelope import mean_interval

CONFORMS, DEVIATES, INCONCLUSIVE, NOT_MEASURABLE = "conforms", "deviates", "inconclusive", "not measurable"
OUTSIDE = "outside the bound"  # the reference's row only
AGAINST_REFERENCE, AGAINST_BOUND = "the kernel's runs", "the bound (no kernel values)"
MAX_SPLITS = 10  # splits of the reference's runs judged against each other
MIN_SPLIT_RUNS = 4  # two halves of two runs each


@dataclass(frozen=True)
class ParameterInput:
    """One parameter of one stack: its per-run values (the runs that measured it), the
    reference's in the stack's specification, and what conforms (low, high)."""

    parameter: str
    stack: np.ndarray
    reference: np.ndarray
    bound: tuple[float, float]
    stack_completion: Completion | None = None
    reference_completion: Completion | None = None
    key: Any = None  # the caller's (cell, parameter)


@dataclass(frozen=True)
class ParameterVerdict:
    parameter: str
    verdict: str
    centre: float  # geometric mean (or mean) of the stack's values
    low: float  # its (1 - 2 alpha) interval
    high: float
    n: int
    n_reference: int
    against: str  # AGAINST_REFERENCE | AGAINST_BOUND | ""
    p_value: float  # the deviation test's
    p_adjusted: float  # after Holm over the family
    direction: int  # +1: the stack above the reference (or the bound), -1 below
    reason: str = ""
    key: Any = field(default=None, compare=False)


def _finite(x) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    return x[np.isfinite(x)]


def constant(x: np.ndarray) -> bool:
    return x.size >= MIN_N and float(np.ptp(x)) == 0.0


def centre_interval(values, confidence: float) -> tuple[float, float, float]:
    """(centre, low, high): the mean on the log scale when every value is positive (back on
    the values' scale), else the plain mean, with Student's t interval at `confidence`
    (envelope.mean_interval); a constant sample is its value exactly; nan bounds below
    two values."""
    x = _finite(values)
    if x.size == 0:
        return math.nan, math.nan, math.nan
    if x.size == 1 or constant(x):
        v = float(x[0]) if constant(x) else math.nan
        return float(x[0]), v, v
    if np.all(x > 0):
        c, lo, hi, _ = mean_interval(np.log(x), confidence)
        return math.exp(c), math.exp(lo), math.exp(hi)
    c, lo, hi, _ = mean_interval(x, confidence)
    return c, lo, hi


@dataclass(frozen=True)
class _Test:
    """One parameter's deviation test: a comparison (Holm adjusts it by its family_p, the
    survivorship check included) or, for sides that are the same in every run, an exact p."""

    comparison: CellComparison | None = None
    p: float = math.nan
    significant: bool = False
    direction: int = 0
    against: str = ""
    reason: str = ""


def _exact(a: np.ndarray, b: np.ndarray, done_a: Completion | None, done_b: Completion | None, against: str) -> _Test:
    """Both sides the same in every run: they differ exactly or not at all, provided no round
    lacks its value (a missing value could be anything: the difference is then not shown)."""
    differ = float(a[0]) != float(b[0])
    lost = missing_values(a.size, done_a) + missing_values(b.size, done_b)
    reason = f"{lost} round{'s' if lost > 1 else ''} without a value" if lost and differ else ""
    return _Test(
        None, 0.0 if differ and not lost else 1.0, differ and not lost, int(np.sign(a[0] - b[0])), against, reason
    )


def _deviation_test(item: ParameterInput, alpha: float, test: str, survivorship_alpha: float) -> _Test:
    a, b = _finite(item.stack), _finite(item.reference)
    if a.size < MIN_N:
        return _Test(reason=f"{a.size} run{'s' if a.size != 1 else ''} with a value")
    # no side of a parameter is better: "lower" names the direction (A_FASTER: the stack lower)
    common = dict(
        alpha=alpha,
        metric=item.parameter,
        survivorship_alpha=survivorship_alpha,
        completion_a=item.stack_completion,
        lower_is_better=True,
        better_word="lower",
    )
    if b.size >= MIN_N:
        if constant(a) and constant(b) and test == "welch":
            return _exact(a, b, item.stack_completion, item.reference_completion, AGAINST_REFERENCE)
        c = compare_samples(
            a, b, a_label="stack", b_label="kernel", test=test, completion_b=item.reference_completion, **common
        )
        return _Test(c, c.p_value, c.verdict.significant, c.direction, AGAINST_REFERENCE)
    # no reference values: the stack against the bound's edge on the side its centre lies,
    # as a paired comparison with the edge (a one-sample t on the log scale, two-sided)
    low, high = item.bound
    centre = centre_interval(a, 0.5)[0]
    edge = high if centre > high else low if centre < low else math.nan
    if not math.isfinite(edge):
        return _Test(p=1.0, against=AGAINST_BOUND)  # within the bound: nothing to show
    e = np.full(a.size, edge)
    if constant(a):
        return _exact(a, e, item.stack_completion, None, AGAINST_BOUND)
    c = compare_samples(a, e, a_label="stack", b_label="bound", paired=True, **common)
    return _Test(c, c.p_value, c.verdict.significant, c.direction, AGAINST_BOUND)


@verdict_producer(
    "conformance.parameter",
    "a stack's parameter deviates (against the kernel's runs) / conforms (interval within the bound)",
)
def judge_parameters(
    items: Sequence[ParameterInput],
    *,
    alpha: float = 0.01,
    test: str = "welch",
    survivorship_alpha: float = SURVIVORSHIP_ALPHA,
) -> list[ParameterVerdict]:
    """The verdict of each parameter (the module's rule), Holm over `items` as one family
    (core.stats.holm_family: each comparison by its family_p, the exact p-values beside)."""
    tests = [_deviation_test(it, alpha, test, survivorship_alpha) for it in items]
    comparisons, exact = holm_family(
        [t.comparison for t in tests if t.comparison is not None], [t.p for t in tests if t.comparison is None]
    )
    comparisons, exact = iter(comparisons), iter(exact)
    out = []
    for it, t in zip(items, tests):
        if t.comparison is not None:
            c = next(comparisons)
            significant, p_adjusted = c.verdict.significant, c.p_adjusted
            why = c.reason if c.verdict in (Verdict.SURVIVORSHIP, Verdict.NOT_TESTABLE, Verdict.INSUFFICIENT) else ""
            if t.significant and not significant and not why:
                why = f"not significant after Holm over {len(items)} parameters"
        else:
            p_adjusted = float(next(exact))
            significant, why = t.significant and p_adjusted < alpha, t.reason
        a = _finite(it.stack)
        centre, lo, hi = centre_interval(a, 1 - 2 * alpha)
        low, high = it.bound
        common = dict(
            parameter=it.parameter,
            centre=centre,
            low=lo,
            high=hi,
            n=int(a.size),
            n_reference=int(_finite(it.reference).size),
            against=t.against,
            p_value=t.p,
            p_adjusted=p_adjusted,
            direction=t.direction,
            key=it.key,
        )
        if a.size == 0:
            out.append(ParameterVerdict(verdict=NOT_MEASURABLE, reason="no run measured it", **common))
            continue
        if not (math.isfinite(low) or math.isfinite(high)):
            out.append(ParameterVerdict(verdict=INCONCLUSIVE, reason="no bound known", **common))
            continue
        outside = (t.direction > 0 and centre > high) or (t.direction < 0 and centre < low)
        if significant and outside:
            verdict, reason = DEVIATES, ""
        elif math.isfinite(lo) and math.isfinite(hi) and low <= lo and hi <= high:
            verdict, reason = CONFORMS, ""
        else:
            verdict = INCONCLUSIVE
            reason = why or (
                "differs from the reference, not on the side out of the bound"
                if significant
                else f"interval {lo:.3g}-{hi:.3g} not within the bound"
                if math.isfinite(lo)
                else ""
            )
        out.append(ParameterVerdict(verdict=verdict, reason=reason, **common))
    return out


def judge_reference(values, bound: tuple[float, float], alpha: float = 0.01) -> tuple[str, float, float, float]:
    """The reference's own row: (verdict, centre, low, high): conforms when the (1 - 2 alpha)
    interval of its centre lies within the bound, OUTSIDE when wholly beyond it."""
    x = _finite(values)
    centre, lo, hi = centre_interval(x, 1 - 2 * alpha)
    low, high = bound
    if x.size == 0:
        return NOT_MEASURABLE, centre, lo, hi
    if not (math.isfinite(lo) and math.isfinite(hi)) or not (math.isfinite(low) or math.isfinite(high)):
        return INCONCLUSIVE, centre, lo, hi
    if low <= lo and hi <= high:
        return CONFORMS, centre, lo, hi
    if lo > high or hi < low:
        return OUTSIDE, centre, lo, hi
    return INCONCLUSIVE, centre, lo, hi


def splits(n: int, max_splits: int = MAX_SPLITS, seed: int = 0) -> list[tuple[int, ...]]:
    """Index sets of the first half of n runs (size n // 2): all of them, or max_splits
    drawn at random (fixed seed) when there are more."""
    half = n // 2
    total = math.comb(n, half)
    if total <= max_splits:
        return list(itertools.combinations(range(n), half))
    rng = np.random.default_rng(seed)
    seen: set[tuple[int, ...]] = set()
    while len(seen) < max_splits:
        seen.add(tuple(sorted(rng.choice(n, half, replace=False).tolist())))
    return sorted(seen)


def reference_against_itself(
    per_run: dict[str, np.ndarray],
    bounds: dict[str, tuple[float, float]],
    *,
    alpha: float = 0.01,
    test: str = "welch",
    max_splits: int = MAX_SPLITS,
) -> dict[str, tuple[int, int]]:
    """The reference's runs split in two, one half judged as the stack against the other by
    judge_parameters (Holm over the parameters): parameter -> (splits called "deviates",
    splits). `per_run`: parameter -> one value per run (nan: not measured), the runs in the
    same order for every parameter. Empty below MIN_SPLIT_RUNS runs."""
    n = len(next(iter(per_run.values()))) if per_run else 0
    if n < MIN_SPLIT_RUNS:
        return {}
    counts = {p: 0 for p in per_run}
    chosen = splits(n, max_splits)
    for first in chosen:
        mask = np.zeros(n, dtype=bool)
        mask[list(first)] = True
        items = []
        for p, v in per_run.items():
            v = np.asarray(v, dtype=float)
            a, b = v[mask], v[~mask]
            items.append(
                ParameterInput(
                    p,
                    a,
                    b,
                    bounds[p],
                    Completion(int(np.isfinite(a).sum()), int(a.size)),
                    Completion(int(np.isfinite(b).sum()), int(b.size)),
                )
            )
        for r in judge_parameters(items, alpha=alpha, test=test):
            counts[r.parameter] += r.verdict == DEVIATES
    return {p: (k, len(chosen)) for p, k in counts.items()}
