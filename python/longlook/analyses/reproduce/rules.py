"""How a claim turns measured runs into our number, its n and p, and a verdict.

Every test is the core's (core.stats: Welch or Mann-Whitney as the scenario's [statistics]
say, BCa bootstrap intervals, Holm across a claim's cells) or a maintained package's (the
exact binomial test of scipy for shares of sessions); nothing is re-implemented here.

- `Cells`: per selected cell, arm a against arm b. `expect = "a"` (a better, by the metric's
  direction), `"b"`, or `"same"` (no difference beyond +-tolerance_pct). A cell agrees when
  its verdict is the expected one, is against when it is significant the other way (for
  "same": significant and larger than the tolerance), else unclear. The claim holds when at
  least `at_least` of the cells with data agree; it does not hold when so many are against
  that it could not (against > cells - needed); otherwise it is inconclusive.
- `Ratio`: mean(a) / mean(b) in one cell against the paper's factor: holds when the two
  differ significantly and the ratio is at least `at_least`; does not hold when the whole
  bootstrap interval of the ratio is below it; else inconclusive.
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

from ...core.stats import CellComparison, Verdict, compare_cells, display_name
from ...errors import LonglookError
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
    st = m.statistics
    runs = m.flow_runs() if flows else m.runs
    if runs.empty or metric not in runs:
        runs = runs.assign(**{metric: np.nan}) if not runs.empty else pd.DataFrame(
            columns=["cell_id", "arm", "status", "protocol_requested", "protocol_negotiated", metric])
    return compare_cells(runs, [(a, b)], cell_ids=cells, alpha=st.alpha, test=st.test, holm=holm,
                         confidence=st.confidence, resamples=st.bootstrap_resamples, seed=m.seed,
                         metric=metric, lower_is_better=lower_is_better,
                         exclude_flagged=m.exclude_flagged)


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

    def _judge(self, c: CellComparison) -> str | None:
        if c.verdict is Verdict.INSUFFICIENT:
            return None
        if self.expect == "same":
            d, tol = c.percent_difference, self.tolerance_pct
            inside = not math.isnan(c.ci_low) and -tol <= c.ci_low and c.ci_high <= tol
            significant = c.verdict in (Verdict.A_FASTER, Verdict.B_FASTER)
            if inside or (not significant and not math.isnan(d) and abs(d) <= tol):
                return "agree"
            return "against" if significant and abs(d) > tol else "unclear"
        good, bad = (Verdict.A_FASTER, Verdict.B_FASTER) if self.expect == "a" else (Verdict.B_FASTER, Verdict.A_FASTER)
        return "agree" if c.verdict is good else "against" if c.verdict is bad else "unclear"

    def evaluate(self, m: Measured) -> Outcome:
        cells = m.select(self.where)
        if not cells:
            return not_run("none of the claim's cells is in this experiment (reduced budget?)")
        cs = _compare(m, self.a, self.b, cells, self.metric, self.lower_is_better, self.flows,
                      holm=len(cells) > 1)
        judged = [(c, self._judge(c)) for c in cs]
        rows = [{"cell_id": c.cell_id, "n_a": c.a.n, "n_b": c.b.n, "mean_a": c.a.mean, "mean_b": c.b.mean,
                 "diff_pct": c.percent_difference, "ci": [c.ci_low, c.ci_high], "p": c.p_value,
                 "p_adjusted": c.p_adjusted, "judged": j or "no data"} for c, j in judged]
        with_data = [(c, j) for c, j in judged if j is not None]
        if not with_data:
            return Outcome(UNCLEAR, number="no cell with 2 counted runs per arm", n=_n_text(cs),
                           detail="insufficient data", cells=rows)
        agree = sum(j == "agree" for _, j in with_data)
        against = [c.cell_id for c, j in with_data if j == "against"]
        total = len(with_data)
        need = math.ceil(self.at_least * total - 1e-9)
        diffs = [c.percent_difference for c, _ in with_data if not math.isnan(c.percent_difference)]
        median = f"; median diff {np.median(diffs):+.1f}%" if diffs else ""
        if self.expect == "same":
            number = f"within +-{self.tolerance_pct:g}% in {agree}/{total} cells, beyond in {len(against)}{median}"
        else:
            better, worse = (self.a, self.b) if self.expect == "a" else (self.b, self.a)
            number = (f"{_name(better)} better in {agree}/{total} cells, {_name(worse)} better in "
                      f"{len(against)}{median}")
        ps = [c.p_adjusted for c, _ in with_data if not math.isnan(c.p_adjusted)]
        if len(cs) == 1:
            p, p_text = cs[0].p_value, _p_text(cs[0].p_value)
        else:
            p = float(np.median(ps)) if ps else None
            p_text = f"Holm {_p_text(min(ps))}..{_p_text(max(ps))}" if ps else "-"
        verdict = HOLDS if agree >= need else FAILS if len(against) > total - need else UNCLEAR
        st = m.statistics
        detail = (f"{'Welch' if st.test == 'welch' else 'Mann-Whitney'}, alpha {st.alpha:g}"
                  f"{', Holm over ' + str(len(cs)) + ' cells' if len(cs) > 1 else ''}; "
                  f"{agree} agree, {len(against)} against, {total - agree - len(against)} unclear, "
                  f"{len(cs) - total} without data; needs {need} of {total}")
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

    def reads(self) -> str:
        cells = ", ".join(f"{k} {_where_text(v)}" for k, v in self.where.items()) or "the one cell"
        return (f"{self.metric}, mean {_name(self.a)} / mean {_name(self.b)}; {cells}; "
                f"holds if significant and >= {self.at_least:g}x")

    def evaluate(self, m: Measured) -> Outcome:
        cells = m.select(self.where)
        if not cells:
            return not_run("the claim's cell is not in this experiment (reduced budget?)")
        # % difference as (mean_a - mean_b) / mean_b whatever the metric's direction
        c = _compare(m, self.a, self.b, cells[:1], self.metric, False, self.flows, holm=False)[0]
        row = {"cell_id": c.cell_id, "n_a": c.a.n, "n_b": c.b.n, "mean_a": c.a.mean, "mean_b": c.b.mean,
               "diff_pct": c.percent_difference, "ci": [c.ci_low, c.ci_high], "p": c.p_value}
        if c.verdict is Verdict.INSUFFICIENT:
            return Outcome(UNCLEAR, number="fewer than 2 counted runs per arm", n=f"{c.a.n}/{c.b.n}",
                           detail="insufficient data", cells=[row])
        ratio = 1 + c.percent_difference / 100
        lo, hi = 1 + c.ci_low / 100, 1 + c.ci_high / 100
        ci = "" if math.isnan(lo) else f" [{lo:.2f}, {hi:.2f}]"
        number = f"{ratio:.2f}x{ci} ({_num(c.a.mean)} vs {_num(c.b.mean)} {self.unit})"
        significant = not math.isnan(c.p_value) and c.p_value < m.statistics.alpha
        if significant and ratio >= self.at_least:
            verdict = HOLDS
        elif not math.isnan(hi) and hi < self.at_least:
            verdict = FAILS
        else:
            verdict = UNCLEAR
        st = m.statistics
        detail = (f"{'Welch' if st.test == 'welch' else 'Mann-Whitney'}, alpha {st.alpha:g}; "
                  f"{st.confidence:.0%} BCa bootstrap interval of the ratio; paper's factor {self.at_least:g}")
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
    """Chaudhary §5: per (pattern, round), the TCP-only session against the QUIC-enabled one
    (analyses.fallback.pair_verdicts on `metric`); the share where TCP did better or the same.
    A QUIC-enabled session that ended on TCP (protocol_mismatch, "mixed") is data here."""

    quic_arm: str = "h3"
    tcp_arm: str = "h2"
    metric: str = "qoe"
    at_least: float = 0.5

    def reads(self) -> str:
        return (f"{self.metric} per session pair ({self.quic_arm} QUIC-enabled vs {self.tcp_arm} TCP-only, "
                f"same pattern and round); holds if TCP better or same in > {self.at_least:.0%}")

    def evaluate(self, m: Measured) -> Outcome:
        from ..fallback.qoe import pair_verdicts
        from ..fallback.store import SETTLED

        r = m.runs
        if r.empty or self.metric not in r:
            return not_run("no runs with the metric in this experiment")
        r = r[r["status"].isin(SETTLED) & r[self.metric].notna()]
        if m.exclude_flagged and "audit_flagged" in r:
            r = r[~r["audit_flagged"].fillna(False).astype(bool)]
        q, t = r[r["arm"] == self.quic_arm], r[r["arm"] == self.tcp_arm]
        pairs = q.merge(t, on=["cell_id", "round"], suffixes=("_q", "_t"))
        verdicts = pair_verdicts(list(pairs[f"{self.metric}_q"]), list(pairs[f"{self.metric}_t"]),
                                 alpha=m.statistics.alpha) if len(pairs) else []
        k = sum(v != "quic_better" for v in verdicts)
        out = _share_outcome(k, len(verdicts), self.at_least, "session pairs TCP better or same")
        out.cells = [{"cell_id": c, "round": int(rd), "verdict": v}
                     for c, rd, v in zip(pairs["cell_id"], pairs["round"], verdicts)]
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
