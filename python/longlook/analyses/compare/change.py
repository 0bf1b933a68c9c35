"""BASE vs CAND, per cell, arm and metric: did the candidate get worse?

Each arm is compared with itself (h3 in CAND against h3 in BASE), on the runs that count
(core.status) of each side. % change = (mean_CAND - mean_BASE) / mean_BASE * 100, with the
bootstrap interval and test of core.stats (Welch by default, or Mann-Whitney). Holm's
correction runs over every test of the comparison (all cells, arms and metrics), so when
nothing changed the chance that the gate fails anyway is at most alpha. A change counts
only when it is significant AND larger than `threshold_pct`: then it is a regression when
the metric got worse (a time up, a throughput down), an improvement when it got better.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any, Sequence

import numpy as np
from statsmodels.stats.multitest import multipletests

from ...core.kind import Metric
from ...core.stats import Test, compare_samples
from ...core.status import counted_runs
from ...errors import LonglookError
from .experiments import Side
from .matching import CellPair, match_cells, varied


class Verdict(str, Enum):
    REGRESSION = "regression"
    IMPROVEMENT = "improvement"
    NO_CHANGE = "no significant change"
    INSUFFICIENT = "insufficient data"


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
    change_pct: float  # (cand - base) / base * 100 of the means
    ci_low: float
    ci_high: float
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
    resamples: int
    seed: int


@dataclass
class Comparison:
    base: Side
    cand: Side
    settings: Settings
    changes: list[Change]
    varied: list[dict[str, Any]]

    def count(self, verdict: Verdict) -> int:
        return sum(c.verdict is verdict for c in self.changes)

    @property
    def regressed(self) -> bool:
        return self.count(Verdict.REGRESSION) > 0

    def exit_status(self, strict: bool = False) -> int:
        """1 when any cell regressed (or, strict, lacks data), else 0: a CI gate."""
        return int(self.regressed or (strict and self.count(Verdict.INSUFFICIENT) > 0))

    def as_dict(self) -> dict[str, Any]:
        return {"base": self.base.summary(), "cand": self.cand.summary(), "varied": self.varied,
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


def _verdict(change_pct: float, p: float, metric: Metric, s: Settings) -> tuple[Verdict, str]:
    if math.isnan(p):
        return Verdict.NO_CHANGE, "no test possible (identical values)"
    if p >= s.alpha:
        return Verdict.NO_CHANGE, ""
    if abs(change_pct) <= s.threshold_pct:
        return Verdict.NO_CHANGE, f"significant but within the {s.threshold_pct:g}% threshold"
    worse = change_pct > 0 if metric.lower_is_better else change_pct < 0
    return (Verdict.REGRESSION if worse else Verdict.IMPROVEMENT), ""


def _one(base: Side, cand: Side, pair: CellPair, arm: str, metric: Metric, s: Settings) -> Change:
    xb = counted_values(base, pair.base_id, arm, metric.name)
    xc = counted_values(cand, pair.cand_id, arm, metric.name)
    # core.stats with A = CAND, B = BASE, "lower is better": its % difference is
    # (base - cand) / base * 100, the negative of the change; same interval and test as the report
    c = compare_samples(xc, xb, a_label="cand", b_label="base", cell_id=f"{pair.base_id}|{arm}|{metric.name}",
                        alpha=s.alpha, test=s.test, confidence=s.confidence, resamples=s.resamples,
                        seed=s.seed, metric=metric.name, lower_is_better=True)
    change, lo, hi = -c.percent_difference, -c.ci_high, -c.ci_low
    common = dict(cell_id=pair.base_id, cand_cell_id=pair.cand_id, arm=arm, metric=metric.name,
                  unit=metric.unit, better=metric.better, n_base=len(xb), n_cand=len(xc),
                  mean_base=c.b.mean, mean_cand=c.a.mean, change_pct=change, ci_low=lo, ci_high=hi,
                  dims=pair.dims)
    if c.a.n < 2 or c.b.n < 2:
        return Change(p_value=math.nan, p_adjusted=math.nan, verdict=Verdict.INSUFFICIENT,
                      note=f"fewer than 2 counted runs (BASE {len(xb)}, CAND {len(xc)})", **common)
    verdict, note = _verdict(change, c.p_value, metric, s)
    return Change(p_value=c.p_value, p_adjusted=c.p_value, verdict=verdict, note=note, **common)


def _holm(changes: list[Change], metrics: dict[str, Metric], s: Settings) -> None:
    idx = [i for i, c in enumerate(changes) if not math.isnan(c.p_value)]
    if not idx:
        return
    _, adjusted, _, _ = multipletests([changes[i].p_value for i in idx], method="holm")
    for i, pa in zip(idx, adjusted):
        c = changes[i]
        c.p_adjusted = float(pa)
        c.verdict, c.note = _verdict(c.change_pct, c.p_adjusted, metrics[c.metric], s)


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
                        holm: bool = True, resamples: int | None = None) -> Comparison:
    """Every matched cell x arm x metric of BASE vs CAND. alpha, test, confidence and
    resamples default to BASE's [statistics]."""
    if threshold_pct < 0:
        raise LonglookError(f"--threshold: must be >= 0, got {threshold_pct:g}")
    if test is not None and test not in ("welch", "mannwhitney"):
        raise LonglookError(f'--test: must be welch or mannwhitney, got "{test}"')
    if alpha is not None and not 0 < alpha < 1:
        raise LonglookError(f"--alpha: must be between 0 and 1, got {alpha:g}")
    st = base.scenario.statistics
    s = Settings(alpha=alpha or st.alpha, test=test or st.test, holm=holm, threshold_pct=threshold_pct,
                 confidence=st.confidence, resamples=resamples or st.bootstrap_resamples,
                 seed=base.scenario.seed)
    pairs = match_cells(base, cand, vary)
    chosen = pick_metrics(base, metrics)
    changes = [_one(base, cand, p, arm, m, s) for p in pairs for arm in base.arms for m in chosen]
    if holm:
        _holm(changes, {m.name: m for m in chosen}, s)
    return Comparison(base, cand, s, changes, varied(base, cand, vary))
