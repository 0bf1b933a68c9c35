"""BASE vs CAND, per cell, arm and metric: did the candidate get worse?

Each arm is compared with itself (h3 in CAND against h3 in BASE), on the runs that count
(core.status) of each side. % change = (mean_CAND - mean_BASE) / |mean_BASE| * 100, with the
interval, test and verdict of core.stats (Welch by default, or Mann-Whitney). A change counts
only when it is significant AND larger than `threshold_pct`: then it is a regression when
the metric got worse (a time up, a throughput down), an improvement when it got better. The
direction is the test's, never the sign of a percentage: with BASE's mean at 0 (no stall)
there is no percentage, and a significant rise is a regression beyond any threshold.

Runs that did not complete are judged twice, both inside the one error budget:
- per cell x arm, the completions themselves (rounds with a counted run of rounds tried,
  CAND against BASE, Fisher's exact test): a significant drop is a regression ("fewer
  runs completed"), a significant rise an improvement;
- per cell x arm x metric, core.stats' survivorship check: a significant change must still
  hold with the missing runs at their worst for it, else the row is "inconclusive:
  survivorship" (not judged; it fails only a --strict gate).

The claim: when nothing changed, the gate fails (any regression) with probability at most
alpha. Holm's correction runs over ONE family: every metric test (all cells, arms and
metrics, each by core.stats' family_p, the larger of its test's and its worst case's p)
and every completion test, judged at the gate's alpha. A cell x arm that lost no round on
either side has no completion test in the family: Fisher's test is conditional on the
margins, and with no failure on either side every table with those margins has p = 1, so
it could never fail the gate (Tarone's argument) and a clean experiment pays nothing for
the completion tests. tests/calibration/test_compare_gate.py simulates identical BASE and
CAND (lognormal load times, each side's slowest runs failing, 20 rounds), alpha 0.01: 12
cells x 2 arms at 80% and at 90% completion, the gate failed in 0 of 300 experiments each,
36 cells at 80% in 0 of 120, where Fisher at 0.05 outside the family failed it 23%, 14% and
57% of the time. The price is power where runs fail: the worst case a change must survive
grows with the runs missing on both sides (12 cells, 20 rounds, sigma 0.15, CAND's QUIC
20% slower: 48% of those rows are regressions with every run complete, 16% at 95%
completion, 3% at 90%; a completion drop is judged on its own row).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any, Sequence

import numpy as np

from ...core.kind import Metric
from ...core.stats import CellComparison, Completion, Test, compare_samples, completion_test, holm_family
from ...core.stats import Verdict as CellVerdict
from ...core.status import completion, counted_runs
from ...core.verdicts import verdict_producer
from ...errors import LonglookError
from .common_fields import common_field_differences
from .experiments import Side, check_distinct
from .matching import CellPair, match_cells, varied
from .path_setup import path_setup_differences


class Verdict(str, Enum):
    REGRESSION = "regression"
    IMPROVEMENT = "improvement"
    NO_CHANGE = "no significant change"
    INSUFFICIENT = "insufficient data"
    NOT_TESTABLE = "not testable"
    SURVIVORSHIP = "inconclusive: survivorship"


COMPLETION = "completion"  # the metric name of a cell x arm's completion row
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
    scenario_differs: list[dict[str, Any]] = field(default_factory=list)  # common_fields.py

    def count(self, verdict: Verdict) -> int:
        return sum(c.verdict is verdict for c in self.changes)

    @property
    def regressed(self) -> bool:
        return self.count(Verdict.REGRESSION) > 0

    def exit_status(self, strict: bool = False) -> int:
        """1 when any cell regressed (or, strict, could not be judged), else 0: a CI gate."""
        return int(self.regressed or (strict and sum(self.count(v) for v in UNJUDGED) > 0))

    def as_dict(self) -> dict[str, Any]:
        return {
            "base": self.base.summary(),
            "cand": self.cand.summary(),
            "varied": self.varied,
            "path_differs": self.path_differs,
            "scenario_differs": self.scenario_differs,
            "settings": asdict(self.settings),
            "summary": {v.value: self.count(v) for v in Verdict},
            "regressed": self.regressed,
            "changes": [c.as_dict() for c in self.changes],
        }


def counted_values(side: Side, cell_id: str, arm: str, metric: str) -> np.ndarray:
    runs = side.runs
    if runs.empty or metric not in runs:
        return np.array([], dtype=float)
    good = counted_runs(
        runs[(runs["cell_id"] == cell_id) & (runs["arm"] == arm)],
        metric,
        exclude_flagged=side.scenario.fidelity.exclude_flagged,
    )
    return good[metric].to_numpy(dtype=float)


def arm_completion(side: Side, cell_id: str, arm: str, metric: str | None) -> Completion | None:
    """Rounds of the arm in the cell that ended with a counted run (with `metric`, unless
    None: a run that ended ok over its protocol, path clean), of those tried."""
    runs = side.runs
    if runs.empty or (metric is not None and metric not in runs):
        return None
    done = completion(
        runs[(runs["cell_id"] == cell_id) & (runs["arm"] == arm)],
        metric,
        exclude_flagged=side.scenario.fidelity.exclude_flagged,
    )
    return Completion(int(done["counted"].iloc[0]), int(done["rounds"].iloc[0])) if len(done) else None


@dataclass(frozen=True)
class MetricInput:
    """What the gate compares in one cell x arm x metric: each side's counted values and
    its completion for that metric."""

    pair: CellPair
    arm: str
    metric: Metric
    cand: np.ndarray
    base: np.ndarray
    cand_done: Completion | None
    base_done: Completion | None


@dataclass(frozen=True)
class ArmCompletion:
    """One cell x arm: the rounds of each side that ended with a counted run."""

    pair: CellPair
    arm: str
    cand: Completion
    base: Completion

    @property
    def tested(self) -> bool:
        """A round was lost on either side: otherwise Fisher's p is 1 whatever happened."""
        return self.cand.counted < self.cand.tried or self.base.counted < self.base.tried

    @property
    def p(self) -> float:
        return completion_test(self.cand, self.base)


def _judge(c: CellComparison, change_pct: float, s: Settings) -> tuple[Verdict, str]:
    """The gate's verdict on core.stats' comparison of CAND (a) against BASE (b), after Holm."""
    if c.verdict is CellVerdict.INSUFFICIENT:
        return Verdict.INSUFFICIENT, c.reason
    if c.verdict is CellVerdict.NOT_TESTABLE:
        if c.a.sd == 0 and c.b.sd == 0 and c.a.mean == c.b.mean:
            return Verdict.NO_CHANGE, f"identical values on both sides ({c.a.mean:g})"
        return Verdict.NOT_TESTABLE, c.reason
    if c.verdict is CellVerdict.SURVIVORSHIP:  # the completions have their own row
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


def _compare_one(x: MetricInput, s: Settings) -> CellComparison:
    return compare_samples(
        x.cand,
        x.base,
        a_label="cand",
        b_label="base",
        cell_id=f"{x.pair.base_id}|{x.arm}|{x.metric.name}",
        alpha=s.alpha,
        test=s.test,
        confidence=s.confidence,
        metric=x.metric.name,
        lower_is_better=x.metric.lower_is_better,
        completion_a=x.cand_done,
        completion_b=x.base_done,
        survivorship_alpha=s.survivorship_alpha,
    )


def _change(c: CellComparison, x: MetricInput, s: Settings) -> Change:
    # core.stats' % difference is positive when A (CAND) is better; a change is CAND - BASE
    sign = -1.0 if x.metric.lower_is_better else 1.0
    change, lo, hi = sign * c.percent_difference, *sorted((sign * c.ci_low, sign * c.ci_high))
    verdict, note = _judge(c, change, s)
    return Change(
        cell_id=x.pair.base_id,
        cand_cell_id=x.pair.cand_id,
        arm=x.arm,
        metric=x.metric.name,
        unit=x.metric.unit,
        better=x.metric.better,
        n_base=c.b.n,
        n_cand=c.a.n,
        mean_base=c.b.mean,
        mean_cand=c.a.mean,
        change_pct=change,
        ci_low=lo,
        ci_high=hi,
        change=c.diff,
        change_low=c.diff_low,
        change_high=c.diff_high,
        p_value=c.p_value,
        p_adjusted=c.p_adjusted,
        verdict=verdict,
        note=note,
        dims=x.pair.dims,
    )


def _completion_change(t: ArmCompletion, p_adjusted: float, s: Settings) -> Change:
    """The row of one cell x arm's completion test: a regression when CAND completed
    significantly fewer rounds (the p Holm-adjusted with the metric tests)."""
    sb, sc = t.base.share, t.cand.share
    p = t.p
    holm = f", Holm {p_adjusted:.2g}" if s.holm else ""
    said = f"CAND {t.cand} vs BASE {t.base} (Fisher p = {p:.2g}{holm})"
    if p_adjusted < s.alpha and sc < sb:
        verdict, note = Verdict.REGRESSION, f"fewer runs completed: {said}"
    elif p_adjusted < s.alpha and sc > sb:
        verdict, note = Verdict.IMPROVEMENT, f"more runs completed: {said}"
    else:
        verdict, note = Verdict.NO_CHANGE, said
    return Change(
        cell_id=t.pair.base_id,
        cand_cell_id=t.pair.cand_id,
        arm=t.arm,
        metric=COMPLETION,
        unit="share of rounds",
        better="higher",
        n_base=t.base.tried,
        n_cand=t.cand.tried,
        mean_base=sb,
        mean_cand=sc,
        change_pct=(sc - sb) / sb * 100 if sb else math.nan,
        ci_low=math.nan,
        ci_high=math.nan,
        change=sc - sb,
        change_low=math.nan,
        change_high=math.nan,
        p_value=p,
        p_adjusted=float(p_adjusted),
        verdict=verdict,
        note=note,
        dims=t.pair.dims,
    )


def judge_changes(inputs: Sequence[MetricInput], completions: Sequence[ArmCompletion], s: Settings) -> list[Change]:
    """The gate's verdicts from what each side measured: every metric row (core.stats'
    comparison) and every completion row, Holm over all of them together when `s.holm`."""
    comparisons = [_compare_one(x, s) for x in inputs]
    tested = [t for t in completions if t.tested]
    if s.holm:
        comparisons, p_tested = holm_family(comparisons, [t.p for t in tested])
    else:
        p_tested = np.array([t.p for t in tested])
    return [_change(c, x, s) for c, x in zip(comparisons, inputs)] + [
        _completion_change(t, pa, s) for t, pa in zip(tested, p_tested)
    ]


def pick_metrics(side: Side, names: Sequence[str] = ()) -> list[Metric]:
    known = {m.name: m for m in side.metrics}
    if not names:
        return list(known.values())
    unknown = [n for n in names if n not in known]
    if unknown:
        raise LonglookError(
            f"--metric {unknown[0]}: not a metric of kind {side.kind.name}", hint=f"its metrics: {', '.join(known)}"
        )
    return [known[n] for n in names]


@verdict_producer("compare.gate", "regression / improvement of CAND against BASE (a metric or the completions)")
def compare_experiments(
    base: Side,
    cand: Side,
    *,
    vary: Sequence[str] = (),
    metrics: Sequence[str] = (),
    threshold_pct: float = 2.0,
    alpha: float | None = None,
    test: Test | None = None,
    holm: bool = True,
) -> Comparison:
    """Every matched cell x arm x metric of BASE vs CAND, and every cell x arm's completion
    (judge_changes). alpha, test and confidence default to BASE's [statistics]."""
    if not threshold_pct >= 0 or math.isinf(threshold_pct):
        raise LonglookError(f"--threshold: must be a number >= 0, got {threshold_pct:g}")
    if test is not None and test not in ("welch", "mannwhitney"):
        raise LonglookError(f'--test: must be welch or mannwhitney, got "{test}"')
    if alpha is not None and not 0 < alpha < 1:
        raise LonglookError(f"--alpha: must be between 0 and 1, got {alpha:g}")
    st = base.scenario.statistics
    s = Settings(
        alpha=alpha or st.alpha,
        test=test or st.test,
        holm=holm,
        threshold_pct=threshold_pct,
        confidence=st.confidence,
        survivorship_alpha=st.survivorship_alpha,
    )
    pairs = match_cells(base, cand, vary)
    chosen = pick_metrics(base, metrics)
    inputs = [
        MetricInput(
            p,
            arm,
            m,
            counted_values(cand, p.cand_id, arm, m.name),
            counted_values(base, p.base_id, arm, m.name),
            arm_completion(cand, p.cand_id, arm, m.name),
            arm_completion(base, p.base_id, arm, m.name),
        )
        for p in pairs
        for arm in base.arms
        for m in chosen
    ]
    changed = varied(base, cand, vary)
    check_distinct([base, cand], "compare")  # after the options: each bad input names itself
    completions = []
    for p in pairs:
        for arm in base.arms:
            c, b = arm_completion(cand, p.cand_id, arm, None), arm_completion(base, p.base_id, arm, None)
            if c is not None and b is not None:
                completions.append(ArmCompletion(p, arm, c, b))
    return Comparison(
        base,
        cand,
        s,
        judge_changes(inputs, completions, s),
        changed,
        path_setup_differences(base.experiment.get("versions"), cand.experiment.get("versions")),
        common_field_differences(base.scenario, cand.scenario),
    )
