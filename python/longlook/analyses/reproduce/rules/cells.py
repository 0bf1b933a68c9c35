"""`Cells`: per selected cell, arm a against arm b (see the package's docstring)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ....core.multiple import holm
from ....core.stats import (
    CellComparison,
    Verdict,
    equivalence_blocked,
    equivalent,
)
from ....core.verdicts import verdict_producer
from .. import needed
from ..bounds import beyond_p, equivalence_p
from ..measured import Measured
from ..outcome import (
    FAILS,
    HOLDS,
    UNCLEAR,
    Outcome,
    Where,
    kth_smallest,
    name,
    needs_text,
    not_run,
    ordinal,
    p_text,
    where_text,
)
from .common import _a_better, _cell_row, _compare, _n_text, _test_text


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
        # a cell with missing runs shows no equivalence; its row says why
        gates = [self._gate(c) or equivalence_blocked(c) for c in cs]
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
        if m.adaptive:
            # a cell whose pilot looked equal planned few rounds: its interval is too narrow
            # for a claim of equivalence (core/adaptive.py), so it shows "the same" nowhere
            judged = ["unclear" if j == "agree" else j for j in judged]
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
        if m.adaptive:
            detail += (
                "; rounds planned from each cell's own first rounds (adaptive) favour the same, "
                "so no cell counts as shown the same: run fixed rounds"
            )
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
