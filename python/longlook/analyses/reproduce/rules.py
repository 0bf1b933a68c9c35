"""How a claim on arms and cells turns measured runs into our number, its n and p, and a
verdict (the rules on sessions and state machines are in `sessions` and `stateshift`).

Every test is the core's (core.stats: Welch or Mann-Whitney as the scenario's [statistics]
say, with their intervals, survivorship and not-testable outcomes, Holm from core.multiple)
or a maintained package's; nothing is re-implemented here. Flows of one fairness run share a
bottleneck, so they are compared paired by run (core.stats' paired t on the per-run log
ratio), never as independent samples. Each rule's p is the claim's own test (outcome.py).

- `Cells`: per selected cell, arm a against arm b. `expect = "a"` (a better, by the metric's
  direction), `"b"`, or `"same"` (no difference beyond +-tolerance_pct). A direction cell
  agrees when its verdict (the scenario's test, Holm across the claim's cells, at alpha) is
  the expected one, is against when it is significant the other way. A "same" cell agrees
  when two one-sided tests show |difference| < tolerance (equivalence, never from a test
  that is merely not significant) and is against when the difference is shown beyond it,
  each with Holm across the claim's cells at the level of the scenario's intervals,
  (1 - confidence) / 2 a side; its interval is shown at the family's level (Bonferroni,
  1 - (1 - confidence) / cells), which Holm's verdicts can only be more lenient than. Every
  selected cell is in the denominator, those without data too: the claim holds when at
  least `at_least` of all its cells agree, does not hold when so many are against that it
  could not (against > cells - needed), else it is inconclusive. p: the Holm-adjusted p of
  the needed-th cell, in the claim's direction.
- `Ratio`: mean(a) / mean(b) in one cell against the paper's factor (or range), on the
  interval: holds when the whole interval is at or above the factor, does not hold when it
  is wholly below, else inconclusive (a point estimate near the factor decides nothing). p:
  the one-sided test of the ratio against the factor (bounds.py), below (1 - confidence) / 2
  exactly when the interval clears it.
- `Value`: one arm's mean against a stated range, on its t-interval; p: the larger of the
  two one-sided t tests against the range's ends. Rounds whose run failed are missing
  values: with one, the mean of the survivors decides nothing.
- `Twins`: one arm across twin cells, judged as `Cells`. `Shrinks`: the interaction of log
  means across twin cells, Holm over the pairs.

Simulated (tests/calibration/test_reproduce_rules.py: lognormal rounds, sigma 0.03-0.5, 3-30
per arm, runs failing at 0-10%), the rate of "holds" where the claim is false at its edge /
of "does not hold" where it is true at its edge: a direction claim over 4 cells 0.8% / 1.2%
(alpha 1%); "the same" over 4 cells 1.6% / 2.0% (level 2.5%; with uncorrected 95% intervals
the first was 6.8%); a ratio or range at its bound 1.0-2.0% (2.5%), paired flows 1.6% / 2.0%;
twins 0% / 0%, shrinks 0.3% / 0.7% (1%); a value at an end of its range 2.3% / 3.0% (2.5%,
Student's interval on right-skewed values: see `Value`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

from ...core.multiple import holm
from ...core.stats import (
    CellComparison,
    Verdict,
    compare_cells,
    completion_test,
    completions,
    equivalent,
    options,
    with_failures_as_outcomes,
)
from ...core.status import counted_runs
from ...core.verdicts import verdict_producer
from . import needed
from .bounds import beyond_p, equivalence_p, paired_sd, ratio_p
from .measured import Measured
from .outcome import (
    FAILS,
    HOLDS,
    NOT_RUN,
    UNCLEAR,
    Outcome,
    Where,
    above,
    contains,
    kth_smallest,
    name,
    needs_text,
    not_run,
    num,
    ordinal,
    p_text,
    where_text,
)
from .sessions import Ate, GrangerShare, PairShare
from .stateshift import StateShift

__all__ = [
    "Ate",
    "Cells",
    "FAILS",
    "GrangerShare",
    "HOLDS",
    "NOT_RUN",
    "Outcome",
    "PairShare",
    "Ratio",
    "Rule",
    "Shrinks",
    "StateShift",
    "Twins",
    "UNCLEAR",
    "Value",
    "above",
    "contains",
    "interaction",
    "not_run",
]


def _compare(
    m: Measured,
    a: str,
    b: str,
    cells: list[str],
    metric: str,
    lower_is_better: bool,
    flows: bool,
    holm: bool,
    confidence: float | None = None,
) -> list[CellComparison]:
    runs = m.flow_runs() if flows else m.runs
    if runs.empty or metric not in runs:
        runs = (
            runs.assign(**{metric: np.nan})
            if not runs.empty
            else pd.DataFrame(
                columns=["cell_id", "arm", "round", "status", "protocol_requested", "protocol_negotiated", metric]
            )
        )
    opts = {**options(m.statistics, exclude_flagged=m.exclude_flagged), "holm": holm}
    if confidence is not None:
        opts["confidence"] = confidence
    return compare_cells(
        runs,
        [(a, b)],
        cell_ids=cells,
        metric=metric,
        lower_is_better=lower_is_better,
        pair_on="run_id" if flows else None,
        failure_value=m.failure_values.get(metric),
        **opts,
    )


def _test_text(m: Measured, cs: list[CellComparison]) -> str:
    tests = sorted({c.test_name for c in cs if not math.isnan(c.p_value)}) or [
        "Welch's t-test" if m.statistics.test == "welch" else "Mann-Whitney U"
    ]
    return f"{', '.join(tests)}, alpha {m.statistics.alpha:g}"


def _cell_row(c: CellComparison, judged: str, **extra: Any) -> dict:
    return {
        "cell_id": c.cell_id,
        "n_a": c.a.n,
        "n_b": c.b.n,
        "mean_a": c.a.mean,
        "mean_b": c.b.mean,
        "diff_pct": c.percent_difference,
        "ci": [c.ci_low, c.ci_high],
        "confidence": c.confidence,
        "interval": c.interval,
        "p": c.p_value,
        "p_adjusted": c.p_adjusted,
        "verdict": c.verdict_text,
        "completion": [str(c.completion_a or ""), str(c.completion_b or "")],
        "judged": judged,
        **extra,
    }


def _n_text(cs: list[CellComparison]) -> str:
    if len(cs) == 1:
        return f"{cs[0].a.n}/{cs[0].b.n}"
    lo = min(min(c.a.n, c.b.n) for c in cs)
    hi = max(max(c.a.n, c.b.n) for c in cs)
    return f"{lo}/{lo} per cell" if lo == hi else f"{lo}-{hi} per arm and cell"


def _a_better(c: CellComparison) -> bool | None:
    """Which way the cell's test points (whatever its p): True when a is the better arm."""
    if c.direction == 0:
        return None
    return (c.direction < 0) == c.lower_is_better


@verdict_producer(
    "reproduce.cells",
    "a claim over cells holds / does not hold: arm a better, b better, or the "
    "same (within a tolerance) in at least a share of the cells",
)
@dataclass(frozen=True)
class Cells:
    a: str
    b: str
    expect: str  # "a", "b" or "same"
    where: Where = field(default_factory=dict)
    metric: str = "plt_ms"
    lower_is_better: bool = True
    at_least: float = 0.75
    # "same": the difference within which the arms count as the same; a direction claim's
    # resolution (the smallest difference it counts, for "would need")
    tolerance_pct: float = 5.0
    flows: bool = False  # read the fairness flows table (arms = flow labels)

    def reads(self) -> str:
        cells = ", ".join(f"{k} {where_text(v)}" for k, v in self.where.items()) or "all cells"
        want = {
            "a": f"{name(self.a)} better",
            "b": f"{name(self.b)} better",
            "same": f"|diff| <= {self.tolerance_pct:g}%",
        }[self.expect]
        return (
            f"{self.metric}, {name(self.a)} vs {name(self.b)}; {cells}; "
            f"holds if {want} in >= {self.at_least:.0%} of cells"
        )

    def _gate(self, c: CellComparison) -> str:
        if c.verdict is Verdict.INSUFFICIENT:
            return "no data"
        if c.verdict in (Verdict.NOT_TESTABLE, Verdict.SURVIVORSHIP):
            return c.verdict_text
        return ""

    def evaluate(self, m: Measured) -> Outcome:
        cells = m.select(self.where)
        if not cells:
            return not_run("none of the claim's cells is in this experiment (reduced budget?)")
        if self.expect == "same":
            return self._same(m, cells)
        return self._direction(m, cells)

    def _tally(self, cs: list[CellComparison], judged: list[str]) -> tuple[int, int, list[str], int, int]:
        total = len(judged)
        agree = judged.count("agree")
        against = [c.cell_id for c, j in zip(cs, judged) if j == "against"]
        no_data = judged.count("no data")
        return total, agree, against, no_data, math.ceil(self.at_least * total - 1e-9)

    def _direction(self, m: Measured, cells: list[str]) -> Outcome:
        alpha = m.statistics.alpha
        cs = _compare(m, self.a, self.b, cells, self.metric, self.lower_is_better, self.flows, holm=len(cells) > 1)
        good, bad = (Verdict.A_FASTER, Verdict.B_FASTER) if self.expect == "a" else (Verdict.B_FASTER, Verdict.A_FASTER)
        judged = [
            self._gate(c) or ("agree" if c.verdict is good else "against" if c.verdict is bad else "unclear")
            for c in cs
        ]
        total, agree, against, no_data, need = self._tally(cs, judged)
        rows = [_cell_row(c, j) for c, j in zip(cs, judged)]
        if no_data == total:
            return Outcome(
                UNCLEAR,
                number="no cell with 2 counted runs per arm",
                n=_n_text(cs),
                detail="insufficient data",
                cells=rows,
            )
        diffs = [c.percent_difference for c in cs if not math.isnan(c.percent_difference)]
        median = f"; median diff {np.median(diffs):+.1f}%" if diffs else ""
        better, worse = (self.a, self.b) if self.expect == "a" else (self.b, self.a)
        number = f"{name(better)} better in {agree}/{total} cells, {name(worse)} better in {len(against)}{median}"
        # the claim's p: the needed-th smallest Holm-adjusted p among cells pointing its way
        # (a cell its survivorship or worst case holds back counts at alpha at best)
        way = self.expect == "a"
        q = [
            c.p_adjusted
            if j == "agree"
            else max(c.p_adjusted, alpha)
            if j == "unclear" and _a_better(c) is way and not math.isnan(c.p_adjusted)
            else 1.0
            for c, j in zip(cs, judged)
        ]
        p = kth_smallest(q, need)
        verdict = HOLDS if agree >= need else FAILS if len(against) > total - need else UNCLEAR
        needs = ""
        if verdict == UNCLEAR:
            resolution = self.tolerance_pct
            unclear = [c for c, j in zip(cs, judged) if j == "unclear"]
            short = sum(self._ends_short(c) for c in unclear)
            why = (
                f"no n decides it at a {resolution:g}% difference: the intervals of {short} unclear cell(s) already "
                f"end short of {resolution:g}% {name(better)}'s way; only a smaller difference is left to find"
                if short
                else f"no n up to {needed.LIMIT:,} gives 80% power at a {resolution:g}% difference (or "
                "a cell has no spread to plan from)"
            )
            ns = [
                None
                if self._ends_short(c)
                else needed.cell_rounds(
                    c.a.n, c.a.mean, c.a.sd, c.b.n, c.b.mean, c.b.sd, alpha=alpha / total, effect_pct=resolution
                )
                for c in unclear
            ]  # alpha / cells: Holm's strictest step
            needs = needs_text(
                ns,
                need - agree,
                f"rounds per arm (80% power if {name(better)} is {resolution:g}% better, alpha {alpha:g}/{total})",
                why,
                no_data=no_data,
            )
        paired = " paired by run," if self.flows else ""
        detail = (
            f"{_test_text(m, cs)},{paired}{' Holm over ' + str(len(cs)) + ' cells,' if len(cs) > 1 else ''} "
            f"{cs[0].confidence:.0%} intervals ({cs[0].interval or 'none'}); "
            f"{agree} agree, {len(against)} against, {total - agree - len(against) - no_data} unclear, "
            f"{no_data} without data; needs {need} of all {total}; p: "
            + (
                "the test's, in the claim's direction"
                if total == 1
                else f"the {ordinal(need)} smallest Holm-adjusted p among cells pointing the claim's way"
            )
        )
        if any(c.small_n for c in cs if c.verdict is not Verdict.INSUFFICIENT):
            detail += "; n < 10 in a cell: its interval rests on its method's simulated coverage"
        return Outcome(
            verdict,
            number=number,
            n=_n_text(cs),
            p=p,
            p_text=p_text(p) + (" Holm" if total > 1 else ""),
            detail=detail,
            cells=rows,
            against=against,
            needs=needs,
        )

    def _ends_short(self, c: CellComparison) -> bool:
        """The cell's interval ends short of the claim's resolution in the claim's way (in %,
        positive: a better): no difference that matters is left to find there."""
        far_end = c.ci_high if self.expect == "a" else -c.ci_low
        return not math.isnan(far_end) and far_end < self.tolerance_pct

    def _same(self, m: Measured, cells: list[str]) -> Outcome:
        conf = m.statistics.confidence
        level = (1 - conf) / 2
        cs = _compare(m, self.a, self.b, cells, self.metric, self.lower_is_better, self.flows, holm=False)
        gates = [self._gate(c) for c in cs]
        p_in = np.array([math.nan if g else equivalence_p(c, self.tolerance_pct) for c, g in zip(cs, gates)])
        p_out = np.array([math.nan if g else beyond_p(c, self.tolerance_pct) for c, g in zip(cs, gates)])
        family = max(1, sum(not g for g in gates))
        if family > 1:  # the intervals at the family's level (Bonferroni)
            cs = _compare(
                m,
                self.a,
                self.b,
                cells,
                self.metric,
                self.lower_is_better,
                self.flows,
                holm=False,
                confidence=1 - 2 * level / family,
            )
        adj_in, adj_out = holm(p_in), holm(p_out)
        judged = []
        for c, g, a_in, a_out in zip(cs, gates, adj_in, adj_out):
            if g:
                judged.append(g)
            elif math.isnan(a_in):  # a test read from its interval only (Mann-Whitney's Moses)
                inside = equivalent(c, self.tolerance_pct)
                judged.append("agree" if inside else "against" if inside is False else "unclear")
            else:
                judged.append("agree" if a_in < level else "against" if a_out < level else "unclear")
        total, agree, against, no_data, need = self._tally(cs, judged)
        rows = [
            _cell_row(c, j, p_equivalence=pi, p_equivalence_holm=ai, p_beyond=po, p_beyond_holm=ao)
            for c, j, pi, ai, po, ao in zip(cs, judged, p_in, adj_in, p_out, adj_out)
        ]
        if no_data == total:
            return Outcome(
                UNCLEAR,
                number="no cell with 2 counted runs per arm",
                n=_n_text(cs),
                detail="insufficient data",
                cells=rows,
            )
        diffs = [c.percent_difference for c in cs if not math.isnan(c.percent_difference)]
        median = f"; median diff {np.median(diffs):+.1f}%" if diffs else ""
        number = f"shown within +-{self.tolerance_pct:g}% in {agree}/{total} cells, beyond in {len(against)}{median}"
        p = kth_smallest(
            [a if j == "agree" else max(a, level) if not math.isnan(a) else 1.0 for a, j in zip(adj_in, judged)], need
        )
        verdict = HOLDS if agree >= need else FAILS if len(against) > total - need else UNCLEAR
        needs = ""
        if verdict == UNCLEAR:
            ns = [
                needed.equivalence_rounds(
                    c.a.n, c.a.sd, c.b.n, c.b.mean, c.b.sd, level=level / family, tolerance_pct=self.tolerance_pct
                )
                for c, j in zip(cs, judged)
                if j == "unclear"
            ]
            needs = needs_text(
                ns,
                need - agree,
                f"rounds per arm (80% power to show |diff| < {self.tolerance_pct:g}% if there is "
                f"no difference, level {level:g}/{family})",
                "not estimable: a cell has fewer than 2 counted runs per arm or no spread",
                no_data=no_data,
            )
        paired = " paired by run," if self.flows else ""
        holm_text = f" Holm over {family} cells," if family > 1 else ""
        detail = (
            f"{_test_text(m, cs)},{paired} two one-sided tests against +-{self.tolerance_pct:g}% at "
            f"{level:g} a side,{holm_text} intervals at {cs[0].confidence:.4g} "
            f"({'Bonferroni over ' + str(family) + ' cells, ' if family > 1 else ''}{cs[0].interval or 'none'}); "
            f"{agree} agree, {len(against)} against, {total - agree - len(against) - no_data} unclear, "
            f"{no_data} without data; needs {need} of all {total}; p: the "
            + ("TOST p" if total == 1 else f"{ordinal(need)} smallest Holm-adjusted TOST p")
        )
        if any(c.small_n for c in cs if c.verdict is not Verdict.INSUFFICIENT):
            detail += "; n < 10 in a cell: its interval rests on its method's simulated coverage"
        return Outcome(
            verdict,
            number=number,
            n=_n_text(cs),
            p=p,
            p_text=p_text(p) + (" TOST, Holm" if family > 1 else " TOST"),
            detail=detail,
            cells=rows,
            against=against,
            needs=needs,
        )


def _ratio_target(ratio: float, low: float, high: float | None) -> tuple[float, float]:
    """(bound, true ratio) a ratio claim is planned at: the nearest bound moved by the
    resolution to the side the estimate lies on."""
    if high is None or abs(math.log(ratio / low)) <= abs(math.log(ratio / high)):
        bound = low
        inside = ratio >= low
    else:
        bound = high
        inside = ratio <= high
    step = 1 + needed.RATIO_RESOLUTION
    outward = bound / step if bound == low else bound * step
    inward = bound * step if bound == low else bound / step
    return bound, inward if inside else outward


@verdict_producer(
    "reproduce.ratio",
    "a ratio claim holds / does not hold: mean(a)/mean(b) at least a factor (or inside a range), on its interval",
)
@dataclass(frozen=True)
class Ratio:
    a: str
    b: str
    at_least: float
    where: Where = field(default_factory=dict)
    metric: str = "plt_ms"
    unit: str = "ms"
    flows: bool = False
    at_most: float | None = None  # a range claim (Langley §6.7: 2x to 3.5x): the interval inside it

    def reads(self) -> str:
        cells = ", ".join(f"{k} {where_text(v)}" for k, v in self.where.items()) or "the one cell"
        want = f">= {self.at_least:g}x" if self.at_most is None else f"within {self.at_least:g}x..{self.at_most:g}x"
        return f"{self.metric}, mean {name(self.a)} / mean {name(self.b)}; {cells}; holds if significant and {want}"

    def evaluate(self, m: Measured) -> Outcome:
        cells = m.select(self.where)
        if not cells:
            return not_run("the claim's cell is not in this experiment (reduced budget?)")
        # relative difference (mean_a - mean_b) / mean_b whatever the metric's direction
        c = _compare(m, self.a, self.b, cells[:1], self.metric, False, self.flows, holm=False)[0]
        row = _cell_row(c, "")
        if c.verdict in (Verdict.INSUFFICIENT, Verdict.NOT_TESTABLE, Verdict.SURVIVORSHIP):
            return Outcome(UNCLEAR, number=c.verdict_text, n=f"{c.a.n}/{c.b.n}", detail=c.reason, cells=[row])
        level = (1 - c.confidence) / 2
        ratio = 1 + c.percent_difference / 100
        lo, hi = 1 + c.ci_low / 100, 1 + c.ci_high / 100
        ci = " [unbounded]" if math.isnan(lo) else f" [{lo:.2f}, {hi:.2f}]"
        what = "geometric mean of the per-run ratios" if c.paired else "ratio of means"
        number = f"{ratio:.2f}x{ci} ({num(c.a.mean)} vs {num(c.b.mean)} {self.unit})"
        top = math.inf if self.at_most is None else self.at_most
        if not math.isnan(lo) and lo >= self.at_least and hi <= top:
            verdict = HOLDS
        elif not math.isnan(hi) and (hi < self.at_least or lo > top):
            verdict = FAILS
        else:
            verdict = UNCLEAR
        # the claim's own p: above the factor (and below the range's top)
        p = ratio_p(c, self.at_least, above=True)
        if self.at_most is not None:
            p = max(p, ratio_p(c, self.at_most, above=False))
        span = (
            f"at or above the paper's factor {self.at_least:g}, fails when wholly below"
            if self.at_most is None
            else f"inside the paper's {self.at_least:g}x..{self.at_most:g}x, fails when wholly outside"
        )
        needs = self._needs(c, ratio, level) if verdict == UNCLEAR else ""
        claim_test = (
            f"one-sided test of the ratio > {self.at_least:g}"
            if self.at_most is None
            else f"the larger of the one-sided tests > {self.at_least:g} and < {self.at_most:g}"
        )
        detail = (
            f"{_test_text(m, [c])}; {what}, {c.confidence:.0%} interval ({c.interval}); holds when the whole "
            f"interval is {span}; p: {claim_test} (holds when below {level:g})"
        )
        if c.small_n:
            detail += f"; n = {min(c.a.n, c.b.n)} < 10: the interval rests on its method's simulated coverage"
        return Outcome(
            verdict,
            number=number,
            n=f"{c.a.n}/{c.b.n}",
            p=p,
            p_text=p_text(p),
            detail=detail,
            cells=[row],
            against=[c.cell_id] if verdict == FAILS else [],
            needs=needs,
        )

    def _needs(self, c: CellComparison, ratio: float, level: float) -> str:
        if math.isnan(ratio) or ratio <= 0:
            return ""
        bound, target = _ratio_target(ratio, self.at_least, self.at_most)
        if c.paired:
            sd = paired_sd(c)
            n = None if sd is None else needed.paired_rounds(c.a.n, sd, bound, target, level=level)
            unit = "runs"
        else:
            n = needed.ratio_rounds(c.a.n, c.a.mean, c.a.sd, c.b.n, c.b.mean, c.b.sd, bound, target, level=level)
            unit = "rounds per arm"
        return needs_text(
            [n],
            1,
            f"{unit} (80% power if the true ratio is {target:.3g}x, "
            f"{needed.RATIO_RESOLUTION:.0%} from {bound:g}x the estimate's way)",
            "not estimable (no spread, or beyond 100,000)",
        )


@verdict_producer(
    "reproduce.value", "a stated range holds / does not hold: one arm's mean inside [low, high], on its t-interval"
)
@dataclass(frozen=True)
class Value:
    """One arm's mean of a metric in the selected cells (pooled), with its t-interval,
    against a range the paper states (Langley §3.8: TCP starts after a wait of up to
    300 ms): holds when the whole interval lies inside [at_least, at_most], does not hold
    when it lies wholly outside, else inconclusive. A round whose run failed or timed out
    leaves it inconclusive (the survivors' mean does not bound the arm's) unless the scenario
    gives failures a value. The t-interval is Student's: on right-skewed values its upper
    end errs more often than (1 - confidence) / 2 (simulated, 250 ms + lognormal, 3-30 runs:
    3.1-3.3% at sigma 0.05-0.2, 5% at 0.2-0.5 for a nominal 2.5%)."""

    arm: str
    metric: str
    at_least: float
    at_most: float
    where: Where = field(default_factory=dict)
    unit: str = "ms"

    def reads(self) -> str:
        cells = ", ".join(f"{k} {where_text(v)}" for k, v in self.where.items()) or "all cells"
        return (
            f"{self.metric} of {name(self.arm)}; {cells}; holds if its 95% t-interval lies within "
            f"{self.at_least:g}..{self.at_most:g} {self.unit}"
        )

    def evaluate(self, m: Measured) -> Outcome:
        cells = m.select(self.where)
        if not cells:
            return not_run("none of the claim's cells is in this experiment (reduced budget?)")
        have = self.metric in m.runs if not m.runs.empty else False
        good = (
            counted_runs(m.runs, self.metric if have else None, exclude_flagged=m.exclude_flagged)
            if not m.runs.empty
            else m.runs
        )
        mine = lambda f: f[f["cell_id"].isin(cells) & (f["arm"] == self.arm)]  # noqa: E731
        x = mine(good)[self.metric].dropna().to_numpy(float) if have and not good.empty else np.array([])
        # the rounds whose last attempt failed or timed out: a value the survivors lack
        lost = 0
        if have and not m.runs.empty:
            fail = m.failure_values.get(self.metric)
            full = mine(with_failures_as_outcomes(m.runs, good, self.metric, math.nan if fail is None else fail))
            extra = full[self.metric].to_numpy(float)[len(mine(good)) :]
            if fail is not None:
                x = np.r_[x, extra]
            else:
                lost = len(extra)
        if len(x) < 2:
            return Outcome(UNCLEAR, number=f"{len(x)} counted run(s)", n=str(len(x)), detail="insufficient data")
        conf = m.statistics.confidence
        level = (1 - conf) / 2
        n, mean = len(x), float(x.mean())
        if np.ptp(x) == 0:
            lo = hi = mean
            p = 0.0 if self.at_least <= mean <= self.at_most else 1.0
        else:
            lo, hi = sps.ttest_1samp(x, 0).confidence_interval(conf)
            se = float(x.std(ddof=1)) / math.sqrt(n)
            p = max(
                float(sps.t.sf((mean - self.at_least) / se, n - 1)), float(sps.t.cdf((mean - self.at_most) / se, n - 1))
            )
        inside = self.at_least <= lo and hi <= self.at_most
        outside = hi < self.at_least or lo > self.at_most
        verdict = HOLDS if inside else FAILS if outside else UNCLEAR
        detail = (
            f"mean with its {conf:.0%} t-interval over {len(cells)} cell(s); holds when the whole interval is "
            f"inside {self.at_least:g}..{self.at_most:g} {self.unit}; p: the larger of the one-sided t tests "
            f"against the two ends (holds when below {level:g})"
        )
        if lost:
            verdict = UNCLEAR
            detail += (
                f"; {lost} run(s) failed or timed out: the survivors' mean does not bound the arm's, so no "
                "verdict is drawn (a scenario that counts failures as outcomes gives them a value)"
            )
        needs = ""
        if verdict == UNCLEAR and np.ptp(x) > 0 and not lost:
            width = needed.RATIO_RESOLUTION
            target = (
                (self.at_least + self.at_most) / 2
                if self.at_least <= mean <= self.at_most
                else self.at_least - width * abs(self.at_least)
                if mean < self.at_least
                else self.at_most + width * abs(self.at_most)
            )
            k = needed.value_runs(n, float(x.std(ddof=1)), self.at_least, self.at_most, target, level=level)
            needs = needs_text(
                [k],
                1,
                f"runs (80% power if the true mean is {num(target)} {self.unit})",
                "not estimable (beyond 100,000 runs)",
            )
        return Outcome(
            verdict,
            number=f"{num(mean)} {self.unit} [{num(lo)}, {num(hi)}]",
            n=str(n),
            needs=needs,
            p=p,
            p_text=p_text(p),
            detail=detail,
            cells=[{"cell_id": c} for c in cells],
            against=cells[:1] if verdict == FAILS else [],
        )


def interaction(a_fast, b_fast, a_slow, b_slow, confidence: float = 0.95) -> tuple[float, float, float, float]:
    """(log(a/b) in the slow cell) - (log(a/b) in the fast cell), on the runs' logs: the
    change of a's relative cost from one condition to the other (> 0: a lost ground). A
    difference of four independent means with Welch-Satterthwaite df; returns (effect,
    low, high, two-sided p). tests/test_reproduce_rules.py simulates its coverage."""
    xs = [np.log(np.asarray(v, dtype=float)) for v in (a_slow, b_slow, a_fast, b_fast)]
    if any(len(x) < 2 for x in xs):
        return math.nan, math.nan, math.nan, math.nan
    signs = (1, -1, -1, 1)
    d = float(sum(s * x.mean() for s, x in zip(signs, xs)))
    v = [x.var(ddof=1) / len(x) for x in xs]
    se2 = sum(v)
    if se2 == 0:
        return d, math.nan, math.nan, math.nan
    df = se2**2 / sum(vi**2 / (len(x) - 1) for vi, x in zip(v, xs))
    h = float(sps.t.ppf(0.5 + confidence / 2, df)) * math.sqrt(se2)
    p = float(2 * sps.t.sf(abs(d) / math.sqrt(se2), df))
    return d, d - h, d + h, p


@verdict_producer(
    "reproduce.shrinks",
    "an advantage shrinks holds / does not hold: the interaction of log means across twin cells, Holm over the pairs",
)
@dataclass(frozen=True)
class Shrinks:
    """Kakhki §5 (mobile): arm a's advantage over b shrinks from the `fast` cells to their
    `slow` twins (same other dimensions; `dim` the one that differs). Per twin pair the
    interaction of log means (`interaction`), Holm over the pairs (core.multiple); a pair
    agrees when a's relative cost rose significantly, is against when it fell; holds when at
    least `at_least` of the pairs agree, does not hold when so many are against that it
    could not. A pair whose arms completed at different rates in either cell (core.stats'
    completion test) is not tested: its survivors are not a fair sample."""

    a: str
    b: str
    dim: str
    fast: Any
    slow: Any
    metric: str = "plt_ms"
    at_least: float = 0.5

    def reads(self) -> str:
        return (
            f"{self.metric}: log({name(self.a)}/{name(self.b)}) at {self.dim} = {self.slow} minus at "
            f"{self.fast}, per twin cell pair; holds if {name(self.a)}'s advantage shrinks "
            f"(interaction > 0, Holm) in >= {self.at_least:.0%} of pairs"
        )

    def evaluate(self, m: Measured) -> Outcome:
        fast, slow = m.select({self.dim: self.fast}), m.select({self.dim: self.slow})
        key = lambda c: tuple(sorted((k, repr(v)) for k, v in m.dims(c).items() if k != self.dim))  # noqa: E731
        twins = {key(c): c for c in fast}
        pairs = [(twins[key(c)], c) for c in slow if key(c) in twins]
        if not pairs:
            return not_run(f"no cell pair differing only in {self.dim} ({self.fast} vs {self.slow})")
        good = (
            counted_runs(m.runs, self.metric, exclude_flagged=m.exclude_flagged)
            if self.metric in m.runs
            else m.runs.iloc[0:0]
        )
        done = completions(m.runs, good) if self.metric in m.runs else {}
        groups = {k: g[self.metric].to_numpy(float) for k, g in good.groupby(["cell_id", "arm"])} if len(good) else {}
        xs = lambda c, arm: groups.get((c, arm), np.array([]))  # noqa: E731
        survivors = [
            min(
                (completion_test(done.get((c, self.a)), done.get((c, self.b))) for c in (f, s)),
                key=lambda p: 1.0 if math.isnan(p) else p,
            )
            for f, s in pairs
        ]
        res = [
            (f, s, *interaction(xs(f, self.a), xs(f, self.b), xs(s, self.a), xs(s, self.b), m.statistics.confidence))
            for f, s in pairs
        ]
        unfair = [not math.isnan(q) and q < m.statistics.survivorship_alpha for q in survivors]
        ps = np.array([math.nan if u else r[5] for r, u in zip(res, unfair)])
        adj = holm(ps)
        alpha = m.statistics.alpha
        judged = [
            "inconclusive: survivorship"
            if u
            else "no data"
            if math.isnan(a)
            else "agree"
            if a < alpha and r[2] > 0
            else "against"
            if a < alpha
            else "unclear"
            for r, u, a in zip(res, unfair, adj)
        ]
        tested = [i for i, p in enumerate(ps) if not math.isnan(p)]
        if not tested:
            why = "the arms completed at different rates" if any(unfair) else "insufficient data"
            return Outcome(
                UNCLEAR, number="no twin pair with 2 counted runs per arm and fair completions", n="-", detail=why
            )
        total, agree = len(res), judged.count("agree")
        against = [res[i][1] for i, j in enumerate(judged) if j == "against"]
        need = math.ceil(self.at_least * total - 1e-9)
        verdict = HOLDS if agree >= need else FAILS if len(against) > total - need else UNCLEAR
        effects = [math.exp(res[i][2]) for i in tested]
        number = (
            f"{name(self.a)}'s relative cost rose in {agree}/{total} pairs, fell in {len(against)}; "
            f"median x{np.median(effects):.2f} of {name(self.a)}/{name(self.b)}"
        )
        cells = [
            {
                "cell_id": s,
                "fast_cell": f,
                "interaction": d,
                "ci": [lo, hi],
                "p": p,
                "p_adjusted": None if math.isnan(adj[i]) else float(adj[i]),
                "judged": judged[i],
            }
            for i, (f, s, d, lo, hi, p) in enumerate(res)
        ]
        q = [
            float(adj[i])
            if judged[i] == "agree"
            else max(float(adj[i]), alpha)
            if judged[i] == "unclear" and res[i][2] > 0
            else 1.0
            for i in range(total)
        ]
        p = kth_smallest(q, need)
        ns = [min(len(xs(c, a)) for c in (f, s) for a in (self.a, self.b)) for f, s in pairs]
        return Outcome(
            verdict,
            number=number,
            n=f"{min(ns)}-{max(ns)} per arm and cell",
            p=p,
            p_text=p_text(p) + " Holm",
            detail=f"Welch-Satterthwaite t on the difference of log-ratio means, Holm over {len(tested)} "
            f"pairs, alpha {alpha:g}; needs {need} of {total}; p: the {ordinal(need)} smallest "
            "Holm-adjusted p among pairs whose interaction points the claim's way",
            cells=cells,
            against=against,
        )


@verdict_producer(
    "reproduce.twins",
    "a claim on twin cells holds / does not hold: one arm better, worse or the "
    "same with a dimension changed, judged as Cells",
)
@dataclass(frozen=True)
class Twins:
    """One arm across twin cells that differ only in `dim` (Kakhki §5, proxies: h2 through a
    TCP proxy vs the same h2 without it): per twin pair, the arm's runs in the `a` cell against
    those in the `b` cell, judged exactly as `Cells` judges two arms of one cell (the same
    test, Holm over the pairs, the same holds / does not hold rule)."""

    arm: str
    dim: str
    a: Any  # the dimension's value of the cells the claim is about (e.g. proxy "tcp")
    b: Any  # ... of their twins (e.g. "none")
    expect: str  # "a" (better with a), "b" or "same"
    where: Where = field(default_factory=dict)
    metric: str = "plt_ms"
    at_least: float = 0.5

    def reads(self) -> str:
        cells = ", ".join(f"{k} {where_text(v)}" for k, v in self.where.items()) or "all cells"
        want = {"a": f"better with {self.a}", "b": f"better with {self.b}", "same": "the same"}[self.expect]
        return (
            f"{self.metric} of {name(self.arm)}, {self.dim} = {self.a} vs its twin with {self.b}; {cells}; "
            f"holds if {want} in >= {self.at_least:.0%} of the pairs"
        )

    def evaluate(self, m: Measured) -> Outcome:
        key = lambda c: tuple(sorted((k, repr(v)) for k, v in m.dims(c).items() if k != self.dim))  # noqa: E731
        twins = {key(c): c for c in m.select({self.dim: self.b})}
        pairs = [(c, twins[key(c)]) for c in m.select({**self.where, self.dim: self.a}) if key(c) in twins]
        if not pairs:
            return not_run(f"no cell pair differing only in {self.dim} ({self.a} vs {self.b})")
        la, lb = f"{self.dim}={self.a}", f"{self.dim}={self.b}"
        runs = m.runs[m.runs["arm"] == self.arm] if not m.runs.empty else m.runs
        parts = []
        for ca, cb in pairs:  # the twin's runs become the other arm of the claim's cell
            parts.append(runs[runs["cell_id"] == ca].assign(arm=la))
            parts.append(runs[runs["cell_id"] == cb].assign(arm=lb, cell_id=ca))
        paired = Measured(
            cells=m.cells[m.cells["cell_id"].isin([a for a, _ in pairs])],
            runs=pd.concat(parts),
            statistics=m.statistics,
            exclude_flagged=m.exclude_flagged,
            failure_values=m.failure_values,
        )
        return Cells(la, lb, self.expect, metric=self.metric, at_least=self.at_least).evaluate(paired)


Rule = Cells | Ratio | PairShare | GrangerShare | Value | Shrinks | Twins | StateShift | Ate
