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
from ..bounds import beyond_p, equivalence_p, ratio_p
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
    "a claim over cells holds / does not hold: arm a better, b better, the "
    "same (within a tolerance) or a white cell (no significant difference) in a share of the cells",
)
@dataclass(frozen=True)
class Cells:
    """`expect`: "a" (a better), "b", "same" (within +-tolerance_pct, two one-sided tests) or
    "white": a heatmap's white cell by the paper's own rule, no difference significant at
    the scenario's alpha (the difference test, Holm across the claim's cells): a cell where
    the difference is significant is against the claim however small it is, and one agrees
    only when, besides, two one-sided tests show it within +-tolerance_pct (not significant
    alone is never evidence). The paper's rule belongs to its n: with many more rounds than
    the paper's, a difference too small for its test would be shown.

    `at_most`: a band of shares ("about half" the cells): the claim holds only when at least
    `at_least` of the cells agree and no more than `at_most` could (the agreeing cells plus
    those undecided), and does not hold when more than `at_most` agree."""

    a: str
    b: str
    expect: str  # "a", "b", "same" or "white"
    where: Where = field(default_factory=dict)
    metric: str = "plt_ms"
    lower_is_better: bool = True
    at_least: float = 0.75
    at_most: float | None = None
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
            "white": f"no difference significant at alpha and |diff| <= {self.tolerance_pct:g}% (a white cell)",
        }[self.expect]
        share = (
            "every cell"
            if self.at_least >= 1 and self.at_most is None
            else f">= {self.at_least:.0%} of cells"
            if self.at_most is None
            else f"{self.at_least:.0%} to {self.at_most:.0%} of cells (and no more could)"
        )
        return f"{self.metric}, {name(self.a)} vs {name(self.b)}; {cells}; holds if {want} in {share}"

    def claim_cells(self, m: Measured) -> list[str]:
        """The cells the claim reads in `m`."""
        return m.select(self.where)

    def _verdict(self, total: int, agree: int, against: int, need: int) -> str:
        undecided = total - agree - against
        if self.at_most is None:
            return HOLDS if agree >= need else FAILS if against > total - need else UNCLEAR
        top = math.floor(self.at_most * total + 1e-9)
        if agree > top or agree + undecided < need:
            return FAILS
        return HOLDS if agree >= need and agree + undecided <= top else UNCLEAR

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
        if self.expect in ("same", "white"):
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
        opposite = judged.count("against")
        # a cell is against the claim, too, when its gain is shown short of the claim's
        # resolution (the one-sided test of "better by tolerance_pct", Holm over the cells, at
        # alpha): a claim whose other way cannot happen (0-RTT is never the slower) can fail
        p_short = np.array([math.nan if self._gate(c) or equivalence_blocked(c) else self._short_p(c) for c in cs])
        adj_short = holm(p_short)
        judged = [
            "against" if j == "unclear" and not math.isnan(q) and q < alpha else j for j, q in zip(judged, adj_short)
        ]
        total, agree, against, no_data, need = self._tally(cs, judged)
        rows = [_cell_row(c, j, p_short=ps, p_short_holm=q) for c, j, ps, q in zip(cs, judged, p_short, adj_short)]
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
        number = (
            f"{name(better)} better in {agree}/{total} cells, {name(worse)} better in {opposite}, "
            f"{name(better)}'s gain shown below {self.tolerance_pct:g}% in {len(against) - opposite}{median}"
        )
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
        if self.at_most is not None:
            # a band: as many cells must be shown against as the band's top leaves over, each
            # by its test the other way or its gain shown short; p is the larger of the two ends'
            spare = total - math.floor(self.at_most * total + 1e-9)
            p_other = [
                1.0
                if j == "agree"
                else min(c.p_adjusted if _a_better(c) is (not way) else 1.0, 1.0 if math.isnan(s) else s)
                for c, s, j in zip(cs, adj_short, judged)
            ]
            p = max(p, kth_smallest([1.0 if math.isnan(x) else x for x in p_other], spare) if spare > 0 else 0.0)
        verdict = self._verdict(total, agree, len(against), need)
        number += _effect(cs, need, lambda c: c.ci_low if self.expect == "a" else -c.ci_high)
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
                else needed.paired_cell_rounds(c.a.n, c.pair_sd_log, alpha=alpha / total, effect_pct=resolution)
                if c.paired and not math.isnan(c.pair_sd_log)
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
            f"{agree} agree, {len(against)} against ({opposite} the other way, {len(against) - opposite} with the "
            f"gain shown below {self.tolerance_pct:g}%: one-sided, Holm, alpha {alpha:g}), "
            f"{total - agree - len(against) - no_data} unclear, "
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

    def _short_p(self, c: CellComparison) -> float:
        """One-sided p of "the claimed arm is better by less than tolerance_pct" (nan: the
        comparison ran no test it can be read from)."""
        tau = self.tolerance_pct / 100
        if (self.expect == "a") == self.lower_is_better:  # the claim: mean_a / mean_b <= 1 - tau
            return ratio_p(c, 1 - tau, above=True)
        return ratio_p(c, 1 + tau, above=False)  # the claim: mean_a / mean_b >= 1 + tau

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
        white = self.expect == "white"
        if white:
            # the paper's rule: a difference significant at alpha colours the cell
            sig = {
                c.cell_id: c.verdict
                for c in _compare(
                    m, self.a, self.b, cells, self.metric, self.lower_is_better, self.flows, holm=len(cells) > 1
                )
            }
            coloured = (Verdict.A_FASTER, Verdict.B_FASTER)
            judged = [
                "against" if not g and sig.get(c.cell_id) in coloured else j for c, g, j in zip(cs, gates, judged)
            ]
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
        number = (
            f"white (not significant at {m.statistics.alpha:g}, shown within +-{self.tolerance_pct:g}%) in "
            f"{agree}/{total} cells, significant or beyond in {len(against)}{median}"
            if white
            else f"shown within +-{self.tolerance_pct:g}% in {agree}/{total} cells, beyond in {len(against)}{median}"
        )
        number += _effect(cs, need, lambda c: -max(abs(c.ci_low), abs(c.ci_high)))
        p = kth_smallest(
            [a if j == "agree" else max(a, level) if not math.isnan(a) else 1.0 for a, j in zip(adj_in, judged)], need
        )
        verdict = self._verdict(total, agree, len(against), need)
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
        if white:
            detail += (
                f"; a cell whose difference test is significant at {m.statistics.alpha:g} (Holm) is against "
                "the claim (the paper's white cell), however small the difference"
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


def _effect(cs: list[CellComparison], need: int, favour) -> str:
    """The claim's effect with its interval: the one cell's % difference and interval, or of
    several the need-th most favourable by `favour` (the end of its interval nearest to
    failing the claim), the cell the verdict turns on."""
    ok = [c for c in cs if not math.isnan(c.percent_difference)]
    if not ok or need < 1:
        return ""

    def key(c: CellComparison) -> float:
        v = favour(c)
        return -math.inf if math.isnan(v) else v

    ranked = sorted(ok, key=key, reverse=True)
    c = ranked[min(need, len(ranked)) - 1]
    ci = "" if math.isnan(c.ci_low) else f" [{c.ci_low:+.1f}, {c.ci_high:+.1f}]"
    if len(cs) == 1:
        return f"; {c.percent_difference:+.1f}%{ci} ({c.confidence:.0%})"
    return (
        f"; the {ordinal(need)} most favourable of {len(cs)} cells, {c.cell_id}: "
        f"{c.percent_difference:+.1f}%{ci} ({c.confidence:.4g})"
    )
