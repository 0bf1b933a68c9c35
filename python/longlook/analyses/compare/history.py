"""Many experiments of one scenario in time order: per cell and arm, the series of a
metric's means, and where it changed.

Change points come from E-Divisive (Matteson & James 2014) as MongoDB's
signal-processing-algorithms implements it for performance CI: a point splits the series
where the energy distance between the two sides is largest, kept when a permutation test
says it is significant (p < `pvalue`), then each side is searched again. The permutations
are seeded, so the same experiments give the same answer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ...core.kind import Metric
from ...errors import LonglookError
from .change import counted_values, pick_metrics
from .experiments import Side, load_side
from .matching import match_cells

MIN_EXPERIMENTS = 3  # E-Divisive needs a point on each side of a change and one more to test


@dataclass
class ChangePoint:
    index: int  # the first experiment after the change
    before: float  # mean of the series' means before it (up to the previous change point)
    after: float
    change_pct: float


@dataclass
class CellSeries:
    cell_id: str  # the first experiment's id for the cell
    arm: str
    metric: str
    means: list[float]  # per experiment, nan where it had fewer than 2 counted runs
    ns: list[int]
    change_points: list[ChangePoint] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        clean = lambda x: None if isinstance(x, float) and math.isnan(x) else x  # noqa: E731
        return {"cell_id": self.cell_id, "arm": self.arm, "metric": self.metric,
                "means": [clean(m) for m in self.means], "n": self.ns,
                "change_points": [vars(c) for c in self.change_points]}


@dataclass
class History:
    sides: list[Side]  # in time order
    metric: Metric
    series: list[CellSeries]
    pvalue: float

    def labels(self) -> list[str]:
        return [f"{s.started_at:%m-%d %H:%M}\n{s.directory.name}" for s in self.sides]

    def as_dict(self) -> dict[str, Any]:
        return {"experiments": [s.summary() for s in self.sides], "metric": self.metric.name,
                "pvalue": self.pvalue, "series": [s.as_dict() for s in self.series]}


def e_divisive_change_points(values: Sequence[float], pvalue: float = 0.05,
                             permutations: int = 199, seed: int = 1) -> list[int]:
    """Indices where a new segment starts (sorted); NaNs are skipped and indices mapped back."""
    from signal_processing_algorithms.determinism import deterministic_numpy_random
    from signal_processing_algorithms.energy_statistics.energy_statistics import e_divisive

    x = np.asarray(values, dtype=float)
    keep = np.flatnonzero(~np.isnan(x))
    if len(keep) < MIN_EXPERIMENTS:
        return []
    with deterministic_numpy_random(seed):
        found = e_divisive(x[keep], pvalue=pvalue, permutations=permutations)
    return sorted(int(keep[i]) for i in found)


def _describe(means: list[float], points: list[int]) -> list[ChangePoint]:
    x = np.asarray(means, dtype=float)
    bounds = [0, *points, len(x)]
    out = []
    for k, idx in enumerate(points):
        before = float(np.nanmean(x[bounds[k]:idx]))
        after = float(np.nanmean(x[idx:bounds[k + 2]]))
        out.append(ChangePoint(idx, before, after, (after - before) / before * 100 if before else math.nan))
    return out


def history(directories: Sequence[str | Path], *, metric: str | None = None,
            vary: Sequence[str] = (), pvalue: float = 0.05, permutations: int = 199) -> History:
    """Read the experiments, order them by start time, and find change points per cell."""
    if len(directories) < MIN_EXPERIMENTS:
        raise LonglookError(f"--history: needs at least {MIN_EXPERIMENTS} experiment directories, "
                            f"got {len(directories)}", hint="for two, use `longlook compare BASE CAND`")
    if not 0 < pvalue < 1:
        raise LonglookError(f"--pvalue: must be between 0 and 1, got {pvalue:g}")
    sides = sorted((load_side(d) for d in directories), key=lambda s: s.started_at)
    ref = sides[0]
    chosen = pick_metrics(ref, [metric] if metric else [])[0]
    # each experiment's cells paired with the first experiment's (same parameters)
    pairing = [{p.base_id: p.cand_id for p in match_cells(ref, s, vary)} for s in sides]
    series = []
    for cell_id in ref.cells["cell_id"]:
        for arm in ref.arms:
            values = [counted_values(s, pairs[cell_id], arm, chosen.name) for s, pairs in zip(sides, pairing)]
            means = [float(np.mean(v)) if len(v) >= 2 else math.nan for v in values]
            cs = CellSeries(cell_id, arm, chosen.name, means, [len(v) for v in values])
            cs.change_points = _describe(means, e_divisive_change_points(means, pvalue, permutations))
            series.append(cs)
    return History(sides, chosen, series, pvalue)
