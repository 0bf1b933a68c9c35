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

    def as_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "number": self.number, "n": self.n,
                "p": None if self.p is None or math.isnan(self.p) else self.p, "p_text": self.p_text,
                "detail": self.detail, "cells": self.cells, "against": self.against}


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
        paired = " paired by run," if self.flows else ""
        detail = (f"{_test_text(m, cs)},{paired}{' Holm over ' + str(len(cs)) + ' cells,' if len(cs) > 1 else ''} "
                  f"{cs[0].confidence:.0%} intervals ({cs[0].interval or 'none'}); "
                  f"{agree} agree, {len(against)} against, {other} unclear, {no_data} without data; "
                  f"needs {need} of all {total}")
        if any(c.small_n for c in cs if c.verdict is not Verdict.INSUFFICIENT):
            detail += "; n < 10 in a cell: its interval rests on its method's simulated coverage"
        return Outcome(verdict, number=number, n=_n_text(cs), p=p, p_text=p_text, detail=detail,
                       cells=rows, against=against)


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
        detail = f"{_test_text(m, [c])}; {what}, {c.confidence:.0%} interval ({c.interval}); holds when the whole interval is {span}"
        if c.small_n:
            detail += f"; n = {min(c.a.n, c.b.n)} < 10: the interval rests on its method's simulated coverage"
        return Outcome(verdict, number=number, n=f"{c.a.n}/{c.b.n}", p=c.p_value, p_text=_p_text(c.p_value),
                       detail=detail, cells=[row], against=[c.cell_id] if verdict == FAILS else [])


def _share_outcome(k: int, n: int, at_least: float, what: str, confidence: float = 0.95) -> Outcome:
    """A share k/n with its exact (Clopper-Pearson) interval against `at_least`; p of the
    one-sided exact binomial test of share > at_least."""
    if n == 0:
        return Outcome(UNCLEAR, number=f"no {what}", n="0", detail="no data")
    test = sps.binomtest(k, n, at_least, alternative="greater")
    ci = sps.binomtest(k, n).proportion_ci(confidence_level=confidence, method="exact")
    verdict = HOLDS if ci.low > at_least else FAILS if ci.high < at_least else UNCLEAR
    return Outcome(verdict, number=f"{k / n:.0%} of {n} {what} [{ci.low:.0%}, {ci.high:.0%}]",
                   n=str(n), p=float(test.pvalue), p_text=_p_text(float(test.pvalue)),
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


Rule = Cells | Ratio | PairShare | GrangerShare


def _where_text(v: Any) -> str:
    if callable(v):
        return getattr(v, "text", "matching")
    if isinstance(v, (list, tuple)):
        return "in " + ", ".join(map(str, v))
    return f"= {v}"


def contains(text: str) -> Callable[[Any], bool]:
    """A `where` predicate: the dimension (a label) contains `text`."""
    def match(v: Any) -> bool:
        return isinstance(v, str) and text in v
    match.text = f"contains {text!r}"  # type: ignore[attr-defined]
    return match
