"""The statistics model of an experiment, without any HTML: every cell's arms compared on
the kind's primary metric (core.stats), with the scenario's [statistics] unless overridden,
and everything the comparisons were computed from. The report draws it; a notebook reads it.

    analyse(store) -> Analysis
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..errors import LonglookError, check_range
from .kind import Metric
from .spec import Fidelity, ScenarioBase, Statistics
from .trace_phase import paired_cells
from .stats import CellComparison, Test, compare_cells, comparisons_frame, options
from .status import counted_runs
from .store import Store


def _statistics(scenario: ScenarioBase | None, test: Test | None, alpha: float | None, holm: bool | None) -> Statistics:
    if alpha is not None:
        check_range("--alpha", alpha, 0, 1, low_open=True, high_open=True, hint="a significance level, e.g. 0.01")
    base = scenario.statistics if scenario else Statistics()
    update = {k: v for k, v in (("test", test), ("alpha", alpha), ("holm", holm)) if v is not None}
    return base.model_copy(update=update)


def _pairs(scenario: ScenarioBase | None, runs: pd.DataFrame) -> list[tuple[str, str]]:
    """The scenario's comparisons; a store whose scenario no longer parses: each arm against
    the last one recorded (the kind's own order, which core does not know)."""
    if scenario:
        return scenario.comparisons()
    arms = list(dict.fromkeys(runs["arm"])) if not runs.empty else []
    return [(a, arms[-1]) for a in arms[:-1]]


def _metric(kind: Any, store: Store) -> Metric:
    """The kind's primary metric; for a kind this longlook does not know, the first metric
    its runs recorded (a kind writes its primary metric first), lower taken as better."""
    if kind is not None and kind.primary_metric:
        return kind.primary_metric
    names = store.table("metrics")["name"]
    first = next(iter(dict.fromkeys(names)), None)
    if first is None:
        raise LonglookError(
            f"{store.directory}: its kind is not known to this longlook and its runs recorded no metric",
            hint="open it with the longlook (and kind plug-in) that made it",
        )
    return Metric(first, "", "lower", first)


@dataclass
class Analysis:
    """An experiment's comparisons with everything they were computed from."""

    experiment: dict[str, Any]
    scenario: ScenarioBase | None  # None when the stored TOML no longer parses
    statistics: Statistics
    pairs: list[tuple[str, str]]
    runs: pd.DataFrame
    cells: pd.DataFrame
    comparisons: list[CellComparison]
    metric: Metric
    fidelity: Fidelity = field(default_factory=Fidelity)
    kind: Any = None  # core.kind.Kind of the experiment (None if not registered here)

    @property
    def exclude_flagged(self) -> bool:
        return self.fidelity.exclude_flagged

    def counted(self, metric: str | None = None) -> pd.DataFrame:
        """The runs that count (core.status), by this experiment's [fidelity]."""
        return counted_runs(self.runs, metric or self.metric.name, exclude_flagged=self.exclude_flagged)

    def frame(self) -> pd.DataFrame:
        """One row per (cell, pair), with the cell's dimensions as columns."""
        df = comparisons_frame(self.comparisons)
        if df.empty:
            return df
        dims = pd.DataFrame([{"cell_id": c, **d} for c, d in zip(self.cells["cell_id"], self.cells["dims"])])
        return df.merge(dims, on="cell_id", how="left")


def analyse(
    store: Store, *, test: Test | None = None, alpha: float | None = None, holm: bool | None = None
) -> Analysis:
    """Compare the arms in every cell on the kind's primary metric, with the scenario's
    [statistics] unless overridden."""
    exp = store.experiment()
    if exp is None:
        raise LonglookError(f"{store.directory}: no experiment recorded", hint="run `longlook run` first")
    try:
        scenario: ScenarioBase | None = store.scenario()
    except LonglookError:
        scenario = None  # stored by another longlook version; report what the tables say
    kind = store.kind_or_none()
    metric = _metric(kind, store)
    fidelity = scenario.fidelity if scenario else Fidelity()
    st = _statistics(scenario, test, alpha, holm)
    runs, cells = store.runs_frame(), store.cells_frame()
    pairs = _pairs(scenario, runs)
    comparisons: list[CellComparison] = []
    if not runs.empty and pairs:
        comparisons = compare_cells(
            runs,
            pairs,
            cell_ids=list(cells["cell_id"]),
            better_word=better_word(metric),
            **options(
                st,
                metric=metric,
                timeout_s=scenario.timeout_s if scenario else None,
                exclude_flagged=fidelity.exclude_flagged,
            ),
            paired_cells=paired_cells(runs),
        )
    return Analysis(exp, scenario, st, pairs, runs, cells, comparisons, metric, fidelity, kind)


def better_word(metric: Metric) -> str:
    """How a verdict says "A is better": "faster" for times, "better" for anything else."""
    return "faster" if metric.lower_is_better and metric.unit in ("ms", "s") else "better"
