"""BASE vs CAND, per cell, arm and metric: did the candidate get worse?

Each arm is compared with itself (h3 in CAND against h3 in BASE), on the runs that count
(core.status) of each side. % change = (mean_CAND - mean_BASE) / |mean_BASE| * 100, with the
interval, test and verdict of core.stats (Welch by default, or Mann-Whitney). Holm's
correction runs over every test of the comparison (all cells, arms and metrics), so when
nothing changed the chance that the gate fails anyway is at most alpha. A change counts
only when it is significant AND larger than `threshold_pct`: then it is a regression when
the metric got worse (a time up, a throughput down), an improvement when it got better. The
direction is the test's, never the sign of a percentage: with BASE's mean at 0 (no stall)
there is no percentage, and a significant rise is a regression beyond any threshold. An arm
whose runs completed less often in CAND (Fisher's exact test) has regressed whatever its
metric says; one that completed more often cannot be compared on its survivors.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any, Sequence

import numpy as np

from ...core.kind import Metric
from ...core.stats import CellComparison, Completion, Test, compare_samples, holm_adjust
from ...core.stats import Verdict as CellVerdict
from ...core.status import completion, counted_runs
from ...errors import LonglookError
from .experiments import Side
from .matching import CellPair, match_cells, varied
from .path_setup import path_setup_differences


class Verdict(str, Enum):
    REGRESSION = "regression"
    IMPROVEMENT = "improvement"
    NO_CHANGE = "no significant change"
    INSUFFICIENT = "insufficient data"
    NOT_TESTABLE = "not testable"
    SURVIVORSHIP = "inconclusive: survivorship"


UNJUDGED = (Verdict.INSUFFICIENT, Verdict.NOT_TESTABLE, Verdict.SURVIVORSHIP)  # fail only a --strict gate


@dataclass
class Change:
    """One cell x arm x metric."""

    cell_id: str
    cand_cell_id: str
    arm: str
    metric: str
    unit: str
    better: str
    n_base: int
    n_cand: int
    mean_base: float
    mean_cand: float
    change_pct: float  # (cand - base) / |base| * 100 of the means (nan: BASE's mean is 0)
    ci_low: float
    ci_high: float
    change: float  # cand - base in the metric's unit, with its interval
    change_low: float
    change_high: float
    p_value: float
    p_adjusted: float
    verdict: Verdict
    note: str = ""
    dims: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.arm} {self.metric}"

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["verdict"] = self.verdict.value
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in d.items()}


@dataclass
class Settings:
    alpha: float
    test: Test
    holm: bool
    threshold_pct: float
    confidence: float
    survivorship_alpha: float


@dataclass
class Comparison:
    base: Side
    cand: Side
    settings: Settings
    changes: list[Change]
    varied: list[dict[str, Any]]
    path_differs: list[dict[str, Any]] = field(default_factory=list)  # path_setup.py

    def count(self, verdict: Verdict) -> int:
        return sum(c.verdict is verdict for c in self.changes)

    @property
    def regressed(self) -> bool:
        return self.count(Verdict.REGRESSION) > 0

    def exit_status(self, strict: bool = False) -> int:
        """1 when any cell regressed (or, strict, could not be judged), else 0: a CI gate."""
        return int(self.regressed or (strict and sum(self.count(v) for v in UNJUDGED) > 0))

    def as_dict(self) -> dict[str, Any]:
        return {"base": self.base.summary(), "cand": self.cand.summary(), "varied": self.varied,
                "path_differs": self.path_differs,
                "settings": asdict(self.settings),
                "summary": {v.value: self.count(v) for v in Verdict},
                "regressed": self.regressed, "changes": [c.as_dict() for c in self.changes]}


def counted_values(side: Side, cell_id: str, arm: str, metric: str) -> np.ndarray:
    runs = side.runs
    if runs.empty or metric not in runs:
        return np.array([], dtype=float)
    good = counted_runs(runs[(runs["cell_id"] == cell_id) & (runs["arm"] == arm)], metric,
                        exclude_flagged=side.scenario.fidelity.exclude_flagged)
    return good[metric].to_numpy(dtype=float)


def arm_completion(side: Side, cell_id: str, arm: str, metric: str) -> Completion | None:
    """Rounds of the arm in the cell that ended with a counted run, of those tried."""
    runs = side.runs
    if runs.empty or metric not in runs:
        return None
    done = completion(runs[(runs["cell_id"] == cell_id) & (runs["arm"] == arm)], metric,
                      exclude_flagged=side.scenario.fidelity.exclude_flagged)
    return Completion(int(done["counted"].iloc[0]), int(done["rounds"].iloc[0])) if len(done) else None


def _judge(c: CellComparison, change_pct: float, s: Settings) -> tuple[Verdict, str]:
    """The gate's verdict on core.stats' comparison of CAND (a) against BASE (b)."""
    if c.verdict is CellVerdict.INSUFFICIENT:
        return Verdict.INSUFFICIENT, c.reason
    if c.verdict is CellVerdict.NOT_TESTABLE:
        if c.a.sd == 0 and c.b.sd == 0 and c.a.mean == c.b.mean:
            return Verdict.NO_CHANGE, f"identical values on both sides ({c.a.mean:g})"
        return Verdict.NOT_TESTABLE, c.reason
    if c.verdict is CellVerdict.SURVIVORSHIP:
        ca, cb = c.completion_a, c.completion_b
        if ca is not None and cb is not None and ca.share < cb.share:
            return Verdict.REGRESSION, (f"fewer runs completed: CAND {ca} vs BASE {cb} "
                                        f"(Fisher p = {c.completion_p:.2g})")
        return Verdict.SURVIVORSHIP, c.reason
    if not c.verdict.significant:
        return Verdict.NO_CHANGE, ""
    if math.isnan(change_pct):  # BASE's mean is 0: any significant change is beyond a % threshold
        note = f"BASE mean 0: no % change; {c.diff:+.4g} in the metric's unit"
    elif abs(change_pct) <= s.threshold_pct:
        return Verdict.NO_CHANGE, f"significant but within the {s.threshold_pct:g}% threshold"
    else:
        note = ""
    return (Verdict.IMPROVEMENT if c.verdict is CellVerdict.A_FASTER else Verdict.REGRESSION), note


def _compare_one(base: Side, cand: Side, pair: CellPair, arm: str, metric: Metric, s: Settings) -> CellComparison:
    xb = counted_values(base, pair.base_id, arm, metric.name)
    xc = counted_values(cand, pair.cand_id, arm, metric.name)
    return compare_samples(xc, xb, a_label="cand", b_label="base", cell_id=f"{pair.base_id}|{arm}|{metric.name}",
                           alpha=s.alpha, test=s.test, confidence=s.confidence, metric=metric.name,
                           lower_is_better=metric.lower_is_better,
                           completion_a=arm_completion(cand, pair.cand_id, arm, metric.name),
                           completion_b=arm_completion(base, pair.base_id, arm, metric.name),
                           survivorship_alpha=s.survivorship_alpha)


def _change(c: CellComparison, pair: CellPair, arm: str, metric: Metric, s: Settings) -> Change:
    # core.stats' % difference is positive when A (CAND) is better; a change is CAND - BASE
    sign = -1.0 if metric.lower_is_better else 1.0
    change, lo, hi = sign * c.percent_difference, *sorted((sign * c.ci_low, sign * c.ci_high))
    verdict, note = _judge(c, change, s)
    return Change(cell_id=pair.base_id, cand_cell_id=pair.cand_id, arm=arm, metric=metric.name,
                  unit=metric.unit, better=metric.better, n_base=c.b.n, n_cand=c.a.n,
                  mean_base=c.b.mean, mean_cand=c.a.mean, change_pct=change, ci_low=lo, ci_high=hi,
                  change=c.diff, change_low=c.diff_low, change_high=c.diff_high,
                  p_value=c.p_value, p_adjusted=c.p_adjusted, verdict=verdict, note=note, dims=pair.dims)


def pick_metrics(side: Side, names: Sequence[str] = ()) -> list[Metric]:
    known = {m.name: m for m in side.metrics}
    if not names:
        return list(known.values())
    unknown = [n for n in names if n not in known]
    if unknown:
        raise LonglookError(f"--metric {unknown[0]}: not a metric of kind {side.kind.name}",
                            hint=f"its metrics: {', '.join(known)}")
    return [known[n] for n in names]


def compare_experiments(base: Side, cand: Side, *, vary: Sequence[str] = (),
                        metrics: Sequence[str] = (), threshold_pct: float = 2.0,
                        alpha: float | None = None, test: Test | None = None,
                        holm: bool = True) -> Comparison:
    """Every matched cell x arm x metric of BASE vs CAND. alpha, test and confidence default
    to BASE's [statistics]."""
    if not threshold_pct >= 0 or math.isinf(threshold_pct):
        raise LonglookError(f"--threshold: must be a number >= 0, got {threshold_pct:g}")
    if test is not None and test not in ("welch", "mannwhitney"):
        raise LonglookError(f'--test: must be welch or mannwhitney, got "{test}"')
    if alpha is not None and not 0 < alpha < 1:
        raise LonglookError(f"--alpha: must be between 0 and 1, got {alpha:g}")
    st = base.scenario.statistics
    s = Settings(alpha=alpha or st.alpha, test=test or st.test, holm=holm, threshold_pct=threshold_pct,
                 confidence=st.confidence, survivorship_alpha=st.survivorship_alpha)
    pairs = match_cells(base, cand, vary)
    chosen = pick_metrics(base, metrics)
    keys = [(p, arm, m) for p in pairs for arm in base.arms for m in chosen]
    comparisons = [_compare_one(base, cand, p, arm, m, s) for p, arm, m in keys]
    if holm:
        comparisons = holm_adjust(comparisons)
    changes = [_change(c, p, arm, m, s) for c, (p, arm, m) in zip(comparisons, keys)]
    return Comparison(base, cand, s, changes, varied(base, cand, vary),
                      path_setup_differences(base.experiment.get("versions"), cand.experiment.get("versions")))
