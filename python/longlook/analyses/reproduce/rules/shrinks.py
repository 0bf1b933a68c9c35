"""`Shrinks`: the interaction of log means across twin cells, Holm over the pairs (see the
package's docstring)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats as sps

from ....core.multiple import holm
from ....core.stats import (
    completion_test,
    completions,
    paired_values,
)
from ....core.status import counted_runs
from ....core.trace_phase import paired_cells
from ....core.verdicts import verdict_producer
from .. import needed
from ..measured import Measured
from ..outcome import (
    FAILS,
    HOLDS,
    UNCLEAR,
    Outcome,
    kth_smallest,
    name,
    needs_text,
    not_run,
    ordinal,
    p_text,
)
from .common import twin_pairs


def _log_ratio(a, b, paired: np.ndarray | None) -> tuple[float, list[tuple[float, int]]]:
    """log(a/b) of one cell: its mean, and the variance of that mean with its degrees of
    freedom per independent part (two arms, or the pairs of a paired cell); no parts when
    there is too little data."""
    if paired is not None:
        d = np.asarray(paired, dtype=float)
        if len(d) < 2:
            return math.nan, []
        return float(d.mean()), [(float(d.var(ddof=1)) / len(d), len(d) - 1)]
    la, lb = np.log(np.asarray(a, dtype=float)), np.log(np.asarray(b, dtype=float))
    if len(la) < 2 or len(lb) < 2:
        return math.nan, []
    parts = [(float(x.var(ddof=1)) / len(x), len(x) - 1) for x in (la, lb)]
    return float(la.mean() - lb.mean()), parts


def planning_parts(
    a_fast, b_fast, a_slow, b_slow, *, paired_fast: np.ndarray | None = None, paired_slow: np.ndarray | None = None
) -> list[tuple[int, float]]:
    """The interaction's independent parts as (n, sd of one value), what needed.py plans
    from: the arms' log values, or a paired cell's per-round log ratios; none when a cell has
    too little data."""
    slow = _log_ratio(a_slow, b_slow, paired_slow)[1]
    fast = _log_ratio(a_fast, b_fast, paired_fast)[1]
    if not slow or not fast:
        return []
    return [(k + 1, math.sqrt(v * (k + 1))) for v, k in slow + fast]


def interaction(
    a_fast,
    b_fast,
    a_slow,
    b_slow,
    confidence: float = 0.95,
    *,
    paired_fast: np.ndarray | None = None,
    paired_slow: np.ndarray | None = None,
) -> tuple[float, float, float, float]:
    """(log(a/b) in the slow cell) - (log(a/b) in the fast cell), on the runs' logs: the
    change of a's relative cost from one condition to the other (> 0: a lost ground). A
    difference of independent means with Welch-Satterthwaite df; returns (effect, low, high,
    two-sided p). A cell whose arms met the same network in each round (a trace at a phase
    shared by the round's arms, core.trace_phase) gives its per-round log ratios
    (`paired_*`): the network's variation cancels in each pair instead of widening both arms.
    tests/unit/analyses/test_reproduce_rules.py simulates its coverage."""
    slow, slow_parts = _log_ratio(a_slow, b_slow, paired_slow)
    fast, fast_parts = _log_ratio(a_fast, b_fast, paired_fast)
    if not slow_parts or not fast_parts:
        return math.nan, math.nan, math.nan, math.nan
    d = slow - fast
    parts = slow_parts + fast_parts
    se2 = sum(v for v, _ in parts)
    if se2 == 0:
        return d, math.nan, math.nan, math.nan
    df = se2**2 / sum(v**2 / k for v, k in parts)
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
    # the smallest rise of a's relative cost "would need" plans for
    resolution_pct: float = 5.0
    # dimensions that differ with `dim` (a fixed link against a trace: its rate and trace)
    also_differ: tuple[str, ...] = ()

    def reads(self) -> str:
        return (
            f"{self.metric}: log({name(self.a)}/{name(self.b)}) at {self.dim} = {self.slow} minus at "
            f"{self.fast}, per twin cell pair; holds if {name(self.a)}'s advantage shrinks "
            f"(interaction > 0, Holm) in >= {self.at_least:.0%} of pairs"
        )

    def _pairs(self, m: Measured) -> list[tuple[str, str]]:
        slow_fast = twin_pairs(
            m, m.select({self.dim: self.slow}), m.select({self.dim: self.fast}), {self.dim, *self.also_differ}
        )
        return [(fast, slow) for slow, fast in slow_fast]

    def claim_cells(self, m: Measured) -> list[str]:
        """The twin pairs' cells, fast and slow."""
        return [c for pair in self._pairs(m) for c in pair]

    def evaluate(self, m: Measured) -> Outcome:
        pairs = self._pairs(m)
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
        phased = paired_cells(m.runs)

        def by_round(c: str) -> np.ndarray | None:
            """A cell's per-round log ratios where its arms met one trace phase per round."""
            if c not in phased or good.empty:
                return None
            xa, xb = paired_values(good, c, self.a, self.b, self.metric, "round")
            return np.log(xa) - np.log(xb)

        res = [
            (
                f,
                s,
                *interaction(
                    xs(f, self.a),
                    xs(f, self.b),
                    xs(s, self.a),
                    xs(s, self.b),
                    m.statistics.confidence,
                    paired_fast=by_round(f),
                    paired_slow=by_round(s),
                ),
            )
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
        # the pair the verdict turns on: the need-th by the low end of its interval
        ranked = sorted((res[i] for i in tested), key=lambda r: -math.inf if math.isnan(r[3]) else r[3], reverse=True)
        f, s, d, lo, hi, _ = ranked[min(need, len(ranked)) - 1]
        ci = "" if math.isnan(lo) else f" [{math.exp(lo):.2f}, {math.exp(hi):.2f}]"
        number += (
            f"; x{math.exp(d):.2f}{ci} ({m.statistics.confidence:.0%})"
            if total == 1
            else f"; the {ordinal(need)} most favourable of {total} pairs, {s}: x{math.exp(d):.2f}{ci}"
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
        needs = ""
        if verdict == UNCLEAR:
            res_log = math.log1p(self.resolution_pct / 100)
            unclear = [i for i, j in enumerate(judged) if j == "unclear"]
            short = [i for i in unclear if not math.isnan(res[i][4]) and res[i][4] < res_log]
            why = (
                f"no n decides it at a {self.resolution_pct:g}% rise: the intervals of {len(short)} unclear "
                f"pair(s) already end below x{1 + self.resolution_pct / 100:.2f}; only a smaller change is left to find"
                if short
                else f"no n up to {needed.LIMIT:,} gives 80% power at a {self.resolution_pct:g}% rise (or a cell "
                "has no spread to plan from)"
            )
            plans = [
                None
                if i in short
                else needed.interaction_rounds(
                    planning_parts(
                        xs(pairs[i][0], self.a),
                        xs(pairs[i][0], self.b),
                        xs(pairs[i][1], self.a),
                        xs(pairs[i][1], self.b),
                        paired_fast=by_round(pairs[i][0]),
                        paired_slow=by_round(pairs[i][1]),
                    ),
                    alpha=alpha / total,
                    effect_pct=self.resolution_pct,
                )
                for i in unclear
            ]  # alpha / pairs: Holm's strictest step
            needs = needs_text(
                plans,
                need - agree,
                f"rounds per arm and cell (80% power if {name(self.a)}'s relative cost rises "
                f"{self.resolution_pct:g}%, alpha {alpha:g}/{total})",
                why,
            )
        return Outcome(
            verdict,
            number=number,
            n=f"{min(ns)}-{max(ns)} per arm and cell",
            p=p,
            p_text=p_text(p) + " Holm",
            detail=f"Welch-Satterthwaite t on the difference of log-ratio means (per-round ratios in a cell "
            f"whose arms met one trace phase per round), Holm over {len(tested)} "
            f"pairs, alpha {alpha:g}; needs {need} of {total}; p: the {ordinal(need)} smallest "
            "Holm-adjusted p among pairs whose interaction points the claim's way",
            cells=cells,
            against=against,
            needs=needs,
        )
