"""How a claim turns measured runs into our number, its n and p, and a verdict.

Every test is the core's (core.stats: Welch or Mann-Whitney as the scenario's [statistics]
say, with their intervals, survivorship and not-testable outcomes, Holm across a claim's
cells) or a maintained package's (the exact binomial test of scipy for shares of sessions);
nothing is re-implemented here. Flows of one fairness run share a bottleneck, so they are
compared paired by run (core.stats' paired t on the per-run log ratio), never as
independent samples.

- `Cells`: per selected cell, arm a against arm b. `expect = "a"` (a better, by the metric's
  direction), `"b"`, or `"same"` (no difference beyond +-tolerance_pct). A cell agrees when
  its verdict is the expected one, is against when it is significant the other way; for
  "same" it agrees only when its whole interval lies within the tolerance (equivalence, never
  from a test that is merely not significant) and is against when the whole interval lies
  beyond it. Every selected cell is in the denominator, those without data too: the claim
  holds when at least `at_least` of all its cells agree, does not hold when so many are
  against that it could not (against > cells - needed), else it is inconclusive.
- `Ratio`: mean(a) / mean(b) in one cell against the paper's factor, on the interval:
  holds when the whole interval is at or above the factor, does not hold when it is wholly
  below, else inconclusive (a point estimate near the factor decides nothing).
- `PairShare`, `GrangerShare` (Chaudhary et al.): a share of session pairs or sessions with
  its exact binomial interval; holds when the interval lies above `at_least`, does not hold
  when it lies below, else inconclusive.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pandas as pd
from scipy import stats as sps

from ...core.stats import CellComparison, Verdict, compare_cells, equivalent, options
from ...errors import LonglookError
from ...render.names import display_name
from .measured import Measured

HOLDS, FAILS, UNCLEAR, NOT_RUN = "holds", "does not hold", "inconclusive", "not run"


@dataclass
class Outcome:
    """A claim measured: our number in words, n, p, the verdict and how it was reached."""

    verdict: str
    number: str = "-"
    n: str = "-"
    p: float | None = None
    p_text: str = "-"
    detail: str = ""
    cells: list[dict] = field(default_factory=list)  # per cell: id, n, diff, p, judged
    against: list[str] = field(default_factory=list)  # cells against the claim (to explain)
    # inconclusive: the rounds (sessions for a share) its cells would need, from the observed
    # variance (needed.py); None: not estimated or no finite number would do
    needs: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "number": self.number, "n": self.n,
                "p": None if self.p is None or math.isnan(self.p) else self.p, "p_text": self.p_text,
                "detail": self.detail, "cells": self.cells, "against": self.against, "needs": self.needs}


def _needs_text(values: list[int | None], missing: int, unit: str = "rounds per arm", no_data: int = 0) -> str:
    """The rounds at which `missing` more cells would turn (the missing-th smallest need);
    `no_data`: cells without counted runs, which must be measured before anything is known."""
    finite = sorted(v for v in values if v is not None)
    if missing <= 0:
        return ""
    if len(finite) < missing and no_data:
        return f"{no_data} cell(s) without 2 counted runs per arm: measure them first (the standard budget re-measures flagged runs)"
    if len(finite) < missing:
        return f"not reachable by more rounds (the observed difference points the other way or is 0 in {len(values) - len(finite)} cell(s))"
    return f"~{finite[missing - 1]:,} {unit} (observed variance)"


def not_run(reason: str) -> Outcome:
    return Outcome(NOT_RUN, detail=reason)


def _p_text(p: float) -> str:
    if p is None or math.isnan(p):
        return "-"
    return "<0.001" if p < 0.001 else f"{p:.2g}" if p < 0.1 else f"{p:.2f}"


def _num(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def _name(label: str) -> str:
    return display_name(label)


Where = dict[str, Any]  # dim -> value, list of values, or predicate


def _compare(m: Measured, a: str, b: str, cells: list[str], metric: str, lower_is_better: bool,
             flows: bool, holm: bool) -> list[CellComparison]:
    runs = m.flow_runs() if flows else m.runs
    if runs.empty or metric not in runs:
        runs = runs.assign(**{metric: np.nan}) if not runs.empty else pd.DataFrame(
            columns=["cell_id", "arm", "round", "status", "protocol_requested", "protocol_negotiated", metric])
    opts = {**options(m.statistics, exclude_flagged=m.exclude_flagged), "holm": holm}
    return compare_cells(runs, [(a, b)], cell_ids=cells, metric=metric, lower_is_better=lower_is_better,
                         pair_on="run_id" if flows else None, failure_value=m.failure_values.get(metric),
                         **opts)


def _test_text(m: Measured, cs: list[CellComparison]) -> str:
    tests = sorted({c.test_name for c in cs if not math.isnan(c.p_value)}) or [
        "Welch's t-test" if m.statistics.test == "welch" else "Mann-Whitney U"]
    return f"{', '.join(tests)}, alpha {m.statistics.alpha:g}"


def _cell_row(c: CellComparison, judged: str) -> dict:
    return {"cell_id": c.cell_id, "n_a": c.a.n, "n_b": c.b.n, "mean_a": c.a.mean, "mean_b": c.b.mean,
            "diff_pct": c.percent_difference, "ci": [c.ci_low, c.ci_high], "interval": c.interval,
            "p": c.p_value, "p_adjusted": c.p_adjusted, "verdict": c.verdict_text,
            "completion": [str(c.completion_a or ""), str(c.completion_b or "")], "judged": judged}


def _n_text(cs: list[CellComparison]) -> str:
    if len(cs) == 1:
        return f"{cs[0].a.n}/{cs[0].b.n}"
    lo = min(min(c.a.n, c.b.n) for c in cs)
    hi = max(max(c.a.n, c.b.n) for c in cs)
    return f"{lo}/{lo} per cell" if lo == hi else f"{lo}-{hi} per arm and cell"


@dataclass(frozen=True)
class Cells:
    a: str
    b: str
    expect: str  # "a", "b" or "same"
    where: Where = field(default_factory=dict)
    metric: str = "plt_ms"
    lower_is_better: bool = True
    at_least: float = 0.75
    tolerance_pct: float = 5.0
    flows: bool = False  # read the fairness flows table (arms = flow labels)

    def reads(self) -> str:
        cells = ", ".join(f"{k} {_where_text(v)}" for k, v in self.where.items()) or "all cells"
        want = {"a": f"{_name(self.a)} better", "b": f"{_name(self.b)} better",
                "same": f"|diff| <= {self.tolerance_pct:g}%"}[self.expect]
        return (f"{self.metric}, {_name(self.a)} vs {_name(self.b)}; {cells}; "
                f"holds if {want} in >= {self.at_least:.0%} of cells")

    def _judge(self, c: CellComparison) -> str:
        if c.verdict is Verdict.INSUFFICIENT:
            return "no data"
        if c.verdict in (Verdict.NOT_TESTABLE, Verdict.SURVIVORSHIP):
            return c.verdict_text
        if self.expect == "same":
            inside = equivalent(c, self.tolerance_pct)
            return "agree" if inside else "against" if inside is False else "unclear"
        good, bad = (Verdict.A_FASTER, Verdict.B_FASTER) if self.expect == "a" else (Verdict.B_FASTER, Verdict.A_FASTER)
        return "agree" if c.verdict is good else "against" if c.verdict is bad else "unclear"

    def evaluate(self, m: Measured) -> Outcome:
        cells = m.select(self.where)
        if not cells:
            return not_run("none of the claim's cells is in this experiment (reduced budget?)")
        cs = _compare(m, self.a, self.b, cells, self.metric, self.lower_is_better, self.flows,
                      holm=len(cells) > 1)
        judged = [(c, self._judge(c)) for c in cs]
        rows = [_cell_row(c, j) for c, j in judged]
        total = len(judged)
        agree = sum(j == "agree" for _, j in judged)
        against = [c.cell_id for c, j in judged if j == "against"]
        no_data = sum(j == "no data" for _, j in judged)
        other = total - agree - len(against) - no_data
        if no_data == total:
            return Outcome(UNCLEAR, number="no cell with 2 counted runs per arm", n=_n_text(cs),
                           detail="insufficient data", cells=rows)
        need = math.ceil(self.at_least * total - 1e-9)
        diffs = [c.percent_difference for c, _ in judged if not math.isnan(c.percent_difference)]
        median = f"; median diff {np.median(diffs):+.1f}%" if diffs else ""
        if self.expect == "same":
            number = (f"interval within +-{self.tolerance_pct:g}% in {agree}/{total} cells, "
                      f"wholly beyond in {len(against)}{median}")
        else:
            better, worse = (self.a, self.b) if self.expect == "a" else (self.b, self.a)
            number = (f"{_name(better)} better in {agree}/{total} cells, {_name(worse)} better in "
                      f"{len(against)}{median}")
        ps = [c.p_adjusted for c, _ in judged if not math.isnan(c.p_adjusted)]
        if len(cs) == 1:
            p, p_text = cs[0].p_value, _p_text(cs[0].p_value)
        else:
            p = float(np.median(ps)) if ps else None
            p_text = f"Holm {_p_text(min(ps))}..{_p_text(max(ps))}" if ps else "-"
        verdict = HOLDS if agree >= need else FAILS if len(against) > total - need else UNCLEAR
        needs = _needs_text([self._rounds_needed(c, m.statistics.alpha) for c, j in judged if j == "unclear"],
                            need - agree, no_data=no_data) if verdict == UNCLEAR else ""
        paired = " paired by run," if self.flows else ""
        detail = (f"{_test_text(m, cs)},{paired}{' Holm over ' + str(len(cs)) + ' cells,' if len(cs) > 1 else ''} "
                  f"{cs[0].confidence:.0%} intervals ({cs[0].interval or 'none'}); "
                  f"{agree} agree, {len(against)} against, {other} unclear, {no_data} without data; "
                  f"needs {need} of all {total}")
        if any(c.small_n for c in cs if c.verdict is not Verdict.INSUFFICIENT):
            detail += "; n < 10 in a cell: its interval rests on its method's simulated coverage"
        return Outcome(verdict, number=number, n=_n_text(cs), p=p, p_text=p_text, detail=detail,
                       cells=rows, against=against, needs=needs)

    def _rounds_needed(self, c: CellComparison, alpha: float) -> int | None:
        from .needed import cell_rounds

        d = c.percent_difference
        if math.isnan(d):
            return None
        if self.expect == "same":
            target = self.tolerance_pct - abs(d)
        else:
            target = d if self.expect == "a" else -d  # positive: the way the claim points
        return cell_rounds(c.a.n, c.a.mean, c.a.sd, c.b.n, c.b.mean, c.b.sd, alpha=alpha, target_pct=target)


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
        cells = ", ".join(f"{k} {_where_text(v)}" for k, v in self.where.items()) or "the one cell"
        want = f">= {self.at_least:g}x" if self.at_most is None else f"within {self.at_least:g}x..{self.at_most:g}x"
        return (f"{self.metric}, mean {_name(self.a)} / mean {_name(self.b)}; {cells}; "
                f"holds if significant and {want}")

    def evaluate(self, m: Measured) -> Outcome:
        cells = m.select(self.where)
        if not cells:
            return not_run("the claim's cell is not in this experiment (reduced budget?)")
        # relative difference (mean_a - mean_b) / mean_b whatever the metric's direction
        c = _compare(m, self.a, self.b, cells[:1], self.metric, False, self.flows, holm=False)[0]
        row = _cell_row(c, "")
        if c.verdict in (Verdict.INSUFFICIENT, Verdict.NOT_TESTABLE, Verdict.SURVIVORSHIP):
            return Outcome(UNCLEAR, number=c.verdict_text, n=f"{c.a.n}/{c.b.n}", detail=c.reason, cells=[row])
        ratio = 1 + c.percent_difference / 100
        lo, hi = 1 + c.ci_low / 100, 1 + c.ci_high / 100
        ci = " [unbounded]" if math.isnan(lo) else f" [{lo:.2f}, {hi:.2f}]"
        what = "geometric mean of the per-run ratios" if c.paired else "ratio of means"
        number = f"{ratio:.2f}x{ci} ({_num(c.a.mean)} vs {_num(c.b.mean)} {self.unit})"
        top = math.inf if self.at_most is None else self.at_most
        if not math.isnan(lo) and lo >= self.at_least and hi <= top:
            verdict = HOLDS
        elif not math.isnan(hi) and (hi < self.at_least or lo > top):
            verdict = FAILS
        else:
            verdict = UNCLEAR
        span = (f"at or above the paper's factor {self.at_least:g}, fails when wholly below" if self.at_most is None
                else f"inside the paper's {self.at_least:g}x..{self.at_most:g}x, fails when wholly outside")
        needs = ""
        if verdict == UNCLEAR and not c.paired:
            from .needed import ratio_rounds
            bound = self.at_least if self.at_most is None or abs(ratio - self.at_least) < abs(ratio - self.at_most) \
                else self.at_most
            needs = _needs_text([ratio_rounds(c.a.mean, c.a.sd, c.b.mean, c.b.sd, bound,
                                              confidence=c.confidence)], 1)
        detail = f"{_test_text(m, [c])}; {what}, {c.confidence:.0%} interval ({c.interval}); holds when the whole interval is {span}"
        if c.small_n:
            detail += f"; n = {min(c.a.n, c.b.n)} < 10: the interval rests on its method's simulated coverage"
        return Outcome(verdict, number=number, n=f"{c.a.n}/{c.b.n}", p=c.p_value, p_text=_p_text(c.p_value),
                       detail=detail, cells=[row], against=[c.cell_id] if verdict == FAILS else [], needs=needs)


def _share_outcome(k: int, n: int, at_least: float, what: str, confidence: float = 0.95) -> Outcome:
    """A share k/n with its exact (Clopper-Pearson) interval against `at_least`; p of the
    one-sided exact binomial test of share > at_least."""
    if n == 0:
        return Outcome(UNCLEAR, number=f"no {what}", n="0", detail="no data")
    test = sps.binomtest(k, n, at_least, alternative="greater")
    ci = sps.binomtest(k, n).proportion_ci(confidence_level=confidence, method="exact")
    verdict = HOLDS if ci.low > at_least else FAILS if ci.high < at_least else UNCLEAR
    needs = ""
    if verdict == UNCLEAR:
        from .needed import share_sessions
        sessions = share_sessions(k / n, at_least, confidence=confidence)
        needs = (_needs_text([sessions], 1, "sessions (pairs)") if sessions is not None else
                 f"none expected to decide: the observed share ({k / n:.0%}) is the threshold ({at_least:.0%}) itself")
    return Outcome(verdict, number=f"{k / n:.0%} of {n} {what} [{ci.low:.0%}, {ci.high:.0%}]",
                   n=str(n), p=float(test.pvalue), p_text=_p_text(float(test.pvalue)), needs=needs,
                   detail=f"exact binomial test of share > {at_least:.0%}, {confidence:.0%} Clopper-Pearson interval")


@dataclass(frozen=True)
class PairShare:
    """Chaudhary §5: per cell and round, the TCP-only session against the QUIC-enabled one by
    the paper's test (Welch on the two sessions' temporal QoE, analyses.fallback.pair_verdict);
    the share of testable pairs where TCP did better or QUIC was not significantly better
    (the paper's "the same"). A QUIC-enabled session that ended on TCP (protocol_mismatch,
    "mixed") is data here; a pair without temporal QoE is not testable and counted apart."""

    quic_arm: str = "h3"
    tcp_arm: str = "h2"
    at_least: float = 0.5

    def reads(self) -> str:
        return (f"temporal QoE per session pair ({self.quic_arm} QUIC-enabled vs {self.tcp_arm} TCP-only, "
                f"same cell and round), Welch per pair; holds if TCP better or not significantly "
                f"worse in > {self.at_least:.0%}")

    def evaluate(self, m: Measured) -> Outcome:
        from ..fallback.qoe import NOT_TESTABLE, pair_verdict, session_pairs, tcp_better_or_same_share, temporal_samples
        from ..fallback.store import SETTLED

        r = m.runs
        if r.empty or m.series is None or m.series.empty:
            return not_run("no session recorded its temporal QoE (series qoe_t)")
        r = r[r["status"].isin(SETTLED)]
        if m.exclude_flagged and "audit_flagged" in r:
            r = r[~r["audit_flagged"].fillna(False).astype(bool)]
        temporal = temporal_samples(m.series)
        r = r.assign(samples=[temporal.get(x, np.array([])) for x in r["run_id"]])
        pairs = session_pairs(r, self.quic_arm, self.tcp_arm)
        outcomes = [pair_verdict(q, t, alpha=m.statistics.alpha) for q, t in zip(pairs["samples_q"], pairs["samples_t"])]
        verdicts = [v for v, _ in outcomes]
        k, n = tcp_better_or_same_share(verdicts)
        out = _share_outcome(k, n, self.at_least, "testable session pairs TCP better or not significantly worse")
        untestable = len(verdicts) - n
        if untestable:
            why = next(w for v, w in outcomes if v == NOT_TESTABLE)
            out.detail += f"; {untestable} of {len(verdicts)} pairs not testable ({why})"
        out.cells = [{"cell_id": c, "round": int(rd), "verdict": v, "why": w}
                     for c, rd, (v, w) in zip(pairs["cell_id"], pairs["round"], outcomes)]
        return out


@dataclass(frozen=True)
class GrangerShare:
    """Chaudhary §6: among QUIC-enabled sessions where TCP did better or the same, the share
    where fallback F Granger-causes a quality drop B or a stall S (analyses.fallback)."""

    at_least: float = 0.5

    def reads(self) -> str:
        return ("series F, B, S of the QUIC-enabled sessions where TCP did better or the same; "
                f"Granger F -> B or S; holds if the share > {self.at_least:.0%}")

    def evaluate(self, m: Measured) -> Outcome:
        from ..fallback.store import analyze_store

        if m.directory is None:
            return not_run("needs an experiment directory")
        try:
            s = analyze_store(m.directory, alpha=m.statistics.alpha,
                              include_flagged=not m.exclude_flagged).summary["tcp_better_or_same"]
        except LonglookError as e:
            return Outcome(UNCLEAR, number="no fallback series to test", detail=e.message)
        n = int(s["tested_either"])
        share = s["granger_either_share"]
        k = 0 if n == 0 or share != share else int(round(share * n))
        out = _share_outcome(k, n, self.at_least, "tested sessions where F Granger-causes B or S")
        out.detail += (f"; {s['sessions']} sessions, {s['fell_back']} fell back, {s['suitable']} suitable "
                       f"for Granger, {n} testable (F and B or S not constant)")
        return out


@dataclass(frozen=True)
class Value:
    """One arm's mean of a metric in the selected cells (pooled), with its t-interval,
    against a range the paper states (Langley §3.8: TCP starts after a wait of up to
    300 ms): holds when the whole interval lies inside [at_least, at_most], does not hold
    when it lies wholly outside, else inconclusive."""

    arm: str
    metric: str
    at_least: float
    at_most: float
    where: Where = field(default_factory=dict)
    unit: str = "ms"

    def reads(self) -> str:
        cells = ", ".join(f"{k} {_where_text(v)}" for k, v in self.where.items()) or "all cells"
        return (f"{self.metric} of {_name(self.arm)}; {cells}; holds if its 95% t-interval lies within "
                f"{self.at_least:g}..{self.at_most:g} {self.unit}")

    def evaluate(self, m: Measured) -> Outcome:
        from ...core.status import counted_runs

        cells = m.select(self.where)
        if not cells:
            return not_run("none of the claim's cells is in this experiment (reduced budget?)")
        good = counted_runs(m.runs, self.metric if self.metric in m.runs else None, exclude_flagged=m.exclude_flagged) \
            if not m.runs.empty else m.runs
        x = good[good["cell_id"].isin(cells) & (good["arm"] == self.arm)][self.metric].dropna().to_numpy(float) \
            if self.metric in good and not good.empty else np.array([])
        if len(x) < 2:
            return Outcome(UNCLEAR, number=f"{len(x)} counted run(s)", n=str(len(x)), detail="insufficient data")
        conf = m.statistics.confidence
        if np.ptp(x) == 0:
            lo = hi = float(x[0])
        else:
            lo, hi = sps.ttest_1samp(x, 0).confidence_interval(conf)
        inside = self.at_least <= lo and hi <= self.at_most
        outside = hi < self.at_least or lo > self.at_most
        verdict = HOLDS if inside else FAILS if outside else UNCLEAR
        needs = ""
        if verdict == UNCLEAR and np.ptp(x) > 0:  # runs until the t-interval clears the nearest bound
            gap = min(abs(x.mean() - self.at_least), abs(x.mean() - self.at_most))
            ns = np.arange(2, 100_001)
            ok = sps.t.ppf(0.5 + conf / 2, ns - 1) * x.std(ddof=1) / np.sqrt(ns) < gap
            needs = _needs_text([int(ns[np.argmax(ok)]) if ok.any() and gap > 0 else None], 1, "runs")
        return Outcome(verdict, number=f"{_num(x.mean())} {self.unit} [{_num(lo)}, {_num(hi)}]", n=str(len(x)), needs=needs,
                       detail=f"mean with its {conf:.0%} t-interval over {len(cells)} cell(s); holds when the "
                              f"whole interval is inside {self.at_least:g}..{self.at_most:g} {self.unit}",
                       cells=[{"cell_id": c} for c in cells], against=cells[:1] if verdict == FAILS else [])


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
    df = se2 ** 2 / sum(vi ** 2 / (len(x) - 1) for vi, x in zip(v, xs))
    h = float(sps.t.ppf(0.5 + confidence / 2, df)) * math.sqrt(se2)
    p = float(2 * sps.t.sf(abs(d) / math.sqrt(se2), df))
    return d, d - h, d + h, p


@dataclass(frozen=True)
class Shrinks:
    """Kakhki §5 (mobile): arm a's advantage over b shrinks from the `fast` cells to their
    `slow` twins (same other dimensions; `dim` the one that differs). Per twin pair the
    interaction of log means (`interaction`), Holm over the pairs; a pair agrees when a's
    relative cost rose significantly, is against when it fell; holds when at least
    `at_least` of the pairs agree, does not hold when so many are against that it could not."""

    a: str
    b: str
    dim: str
    fast: Any
    slow: Any
    metric: str = "plt_ms"
    at_least: float = 0.5

    def reads(self) -> str:
        return (f"{self.metric}: log({_name(self.a)}/{_name(self.b)}) at {self.dim} = {self.slow} minus at "
                f"{self.fast}, per twin cell pair; holds if {_name(self.a)}'s advantage shrinks "
                f"(interaction > 0, Holm) in >= {self.at_least:.0%} of pairs")

    def evaluate(self, m: Measured) -> Outcome:
        from ...core.status import counted_runs

        fast, slow = m.select({self.dim: self.fast}), m.select({self.dim: self.slow})
        key = lambda c: tuple(sorted((k, repr(v)) for k, v in m.dims(c).items() if k != self.dim))  # noqa: E731
        twins = {key(c): c for c in fast}
        pairs = [(twins[key(c)], c) for c in slow if key(c) in twins]
        if not pairs:
            return not_run(f"no cell pair differing only in {self.dim} ({self.fast} vs {self.slow})")
        good = counted_runs(m.runs, self.metric, exclude_flagged=m.exclude_flagged) if self.metric in m.runs \
            else m.runs.iloc[0:0]
        xs = lambda c, arm: good[(good["cell_id"] == c) & (good["arm"] == arm)][self.metric].to_numpy(float)  # noqa: E731
        res = [(f, s, *interaction(xs(f, self.a), xs(f, self.b), xs(s, self.a), xs(s, self.b),
                                   m.statistics.confidence)) for f, s in pairs]
        ps = [r[5] for r in res]
        tested = [i for i, p in enumerate(ps) if not math.isnan(p)]
        adj: dict[int, float] = {}  # Holm step-down adjusted p
        order = sorted(tested, key=lambda i: ps[i])
        running = 0.0
        for rank, i in enumerate(order):
            running = max(running, min(1.0, (len(order) - rank) * ps[i]))
            adj[i] = running
        alpha = m.statistics.alpha
        judged = ["no data" if i not in adj else "agree" if adj[i] < alpha and res[i][2] > 0
                  else "against" if adj[i] < alpha else "unclear" for i in range(len(res))]
        total, agree = len(res), judged.count("agree")
        against = [res[i][1] for i, j in enumerate(judged) if j == "against"]
        if not tested:
            return Outcome(UNCLEAR, number="no twin pair with 2 counted runs per arm", n="-", detail="insufficient data")
        need = math.ceil(self.at_least * total - 1e-9)
        verdict = HOLDS if agree >= need else FAILS if len(against) > total - need else UNCLEAR
        effects = [math.exp(res[i][2]) for i in tested]
        number = (f"{_name(self.a)}'s relative cost rose in {agree}/{total} pairs, fell in {len(against)}; "
                  f"median x{np.median(effects):.2f} of {_name(self.a)}/{_name(self.b)}")
        cells = [{"cell_id": s, "fast_cell": f, "interaction": d, "ci": [lo, hi], "p": p, "p_adjusted": adj.get(i),
                  "judged": judged[i]} for i, (f, s, d, lo, hi, p) in enumerate(res)]
        ns = [min(len(xs(c, a)) for c in (f, s) for a in (self.a, self.b)) for f, s in pairs]
        return Outcome(verdict, number=number, n=f"{min(ns)}-{max(ns)} per arm and cell", p=float(np.median([ps[i] for i in tested])),
                       p_text=f"Holm {_p_text(min(adj.values()))}..{_p_text(max(adj.values()))}",
                       detail=f"Welch-Satterthwaite t on the difference of log-ratio means, Holm over {len(tested)} pairs, "
                              f"alpha {alpha:g}; needs {need} of {total}", cells=cells, against=against)


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
        cells = ", ".join(f"{k} {_where_text(v)}" for k, v in self.where.items()) or "all cells"
        want = {"a": f"better with {self.a}", "b": f"better with {self.b}", "same": "the same"}[self.expect]
        return (f"{self.metric} of {_name(self.arm)}, {self.dim} = {self.a} vs its twin with {self.b}; {cells}; "
                f"holds if {want} in >= {self.at_least:.0%} of the pairs")

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
        paired = Measured(cells=m.cells[m.cells["cell_id"].isin([a for a, _ in pairs])], runs=pd.concat(parts),
                          statistics=m.statistics, exclude_flagged=m.exclude_flagged, failure_values=m.failure_values)
        return Cells(la, lb, self.expect, metric=self.metric, at_least=self.at_least).evaluate(paired)


@dataclass(frozen=True)
class StateShift:
    """Kakhki §5 (mobile): a transition of the inferred state machine (analyses.states) is
    taken more often on the slow device: per run counts of `item` (e.g.
    "SlowStart->ApplicationLimited") in the `fast` cells against the `slow` ones, by
    `states diff`'s tests (Fisher on presence, Mann-Whitney on counts), uncorrected: the
    claim names one item in advance. Holds when it appears or is significantly more frequent
    on the slow side, does not hold when it vanishes or is less frequent, else inconclusive."""

    arm: str
    item: str
    dim: str
    fast: Any
    slow: Any
    protocol: str = "QUIC"

    def reads(self) -> str:
        return (f"{self.item} per run of {_name(self.arm)} ({self.protocol}'s inferred state machine), {self.dim} = "
                f"{self.fast} vs {self.slow}; holds if it appears or is more frequent at {self.slow}")

    def evaluate(self, m: Measured) -> Outcome:
        from ..states.diff import compare
        from ..states.runs import load_runs

        if m.directory is None:
            return not_run("needs an experiment directory")
        try:
            a = load_runs(m.directory, cell=f"{self.dim}={self.fast}", arm=self.arm)
            b = load_runs(m.directory, cell=f"{self.dim}={self.slow}", arm=self.arm)
        except LonglookError as e:
            return not_run(e.message)
        d = compare(a, b, self.protocol, label_a=str(self.fast), label_b=str(self.slow),
                    alpha=m.statistics.alpha, holm=False)
        row = d.row(self.item)
        if not row:
            return Outcome(UNCLEAR, number=f"{self.item} in no run ({d.n_a}/{d.n_b} runs with state logs)",
                           n=f"{d.n_a}/{d.n_b}", detail="the transition was never taken on either side",
                           needs=f"not more rounds: taken in none of {d.n_a} + {d.n_b} runs, so the {self.dim} "
                                 f"or the link at which {self.slow} limits the sender would have to change")
        status = row["status"]
        verdict = HOLDS if status in ("appears", "more") else FAILS if status in ("vanishes", "fewer") else UNCLEAR
        return Outcome(verdict, number=f"{row['mean_a']:.2f} vs {row['mean_b']:.2f} per run (in {row['runs_a']}/{row['n_a']} "
                                       f"vs {row['runs_b']}/{row['n_b']} runs): {status}",
                       n=f"{row['n_a']}/{row['n_b']}", p=float(row["p"]), p_text=_p_text(float(row["p"])),
                       detail=f"states diff: Fisher on presence, Mann-Whitney on counts, alpha {m.statistics.alpha:g}, "
                              "one item named in advance (no correction)")


@dataclass(frozen=True)
class Ate:
    """Causality by experiment (a video scenario with [intervention]): the average treatment
    effect of the randomised QUIC break (and the fallback it forces) on `metric`, from
    analyses.fallback.intervention (difference in means, Welch's interval): holds when the
    whole interval lies on the claimed side of 0, does not hold when it lies on the other."""

    metric: str = "qoe"
    expect: str = "lower"  # the treated sessions' metric is lower ("lower") or higher

    def reads(self) -> str:
        return (f"{self.metric}: mean(treated) - mean(control) of the QUIC-enabled sessions, Welch interval; "
                f"holds if wholly {'below' if self.expect == 'lower' else 'above'} 0")

    def evaluate(self, m: Measured) -> Outcome:
        from ..fallback.intervention import analyze_intervention
        from .needed import difference_sessions

        if m.directory is None:
            return not_run("needs an experiment directory")
        try:
            res = analyze_intervention(m.directory, include_flagged=not m.exclude_flagged)
        except LonglookError as e:
            return Outcome(UNCLEAR, number="no interventional sessions", detail=e.message)
        r = res.effects[(res.effects["scope"] == "all cells") & (res.effects["metric"] == self.metric)].iloc[0]
        n = f"{r.n_treated}/{r.n_control}"
        if math.isnan(r.ci_low):
            return Outcome(UNCLEAR, number=r.verdict, n=n, detail=r.why or "no interval")
        sign = -1 if self.expect == "lower" else 1
        verdict = HOLDS if sign * r.ci_low > 0 and sign * r.ci_high > 0 else \
            FAILS if sign * r.ci_low < 0 and sign * r.ci_high < 0 else UNCLEAR
        needs = ""
        if verdict == UNCLEAR:
            t, c = res.sessions[res.sessions["treated"]], res.sessions[~res.sessions["treated"]]
            needs = _needs_text([difference_sessions(float(t[self.metric].std()), float(c[self.metric].std()),
                                                     float(r.ate)) if sign * r.ate > 0 else None], 1,
                                "sessions per arm")
        s = res.summary
        return Outcome(verdict, number=f"ATE {r.ate:+.3g} [{r.ci_low:.3g}, {r.ci_high:.3g}] "
                                       f"({r.mean_treated:.3g} vs {r.mean_control:.3g})",
                       n=n, p=float(r.p), p_text=_p_text(float(r.p)), needs=needs,
                       detail=f"{s['estimator']}; treated fell back {s['compliance']['treated_fell_back']}/"
                              f"{s['treated']}, control {s['compliance']['control_fell_back']}/{s['control']}; "
                              f"beside Granger: {s['agreement']}")


Rule = Cells | Ratio | PairShare | GrangerShare | Value | Shrinks | Twins | StateShift | Ate


def _where_text(v: Any) -> str:
    if callable(v):
        return getattr(v, "text", "matching")
    if isinstance(v, (list, tuple)):
        return "in " + ", ".join(map(str, v))
    return f"= {v}"


def above(x: float) -> Callable[[Any], bool]:
    """A `where` predicate: the dimension (a number; None = 0) is above `x`."""
    def match(v: Any) -> bool:
        return (v or 0) > x
    match.text = f"> {x:g}"  # type: ignore[attr-defined]
    return match


def contains(*texts: str) -> Callable[[Any], bool]:
    """A `where` predicate: the dimension (a label) contains one of `texts`."""
    def match(v: Any) -> bool:
        return isinstance(v, str) and any(t in v for t in texts)
    match.text = "contains " + " or ".join(map(repr, texts))  # type: ignore[attr-defined]
    return match
