"""Many experiments of one scenario in time order: per cell and arm, the series of a
metric's means, and where it changed.

Change points come from E-Divisive (Matteson & James 2014) with the energy statistics of
MongoDB's signal-processing-algorithms 2.1.6 (used for performance CI): a point splits the
series where the energy distance between the two sides is largest, kept when a permutation
test says it is significant, then each side is searched again. The permutations are
seeded, so the same experiments give the same answer.

The permutation test around the library's statistics is ours (`_next_candidate`: the same
search and random draws as the library's, written here) for three reasons: the library's p is
better/(perms+1), which can be 0, not the permutation p (better+1)/(perms+1) (Phipson & Smyth
2010); it compares each permutation's statistic with the observed one by a bare `>=` on sums
taken in another order, so the ties a permutation test must count (the observed split's own
reorderings) count or not by rounding, which makes short series look significant when no
permutation test can say so; and it does not return p. The statistics and distances are still
the library's.

Short series: a permutation p is at least 2/C(n, n//2) (the step's own arrangements,
either side first), 0.057 at n = 7 > 0.05, so E-Divisive cannot find even a doubling in
fewer than 8 experiments (MIN_EXPERIMENTS; the simulation behind it is
tests/unit/analyses/test_compare_history.py::test_item11_e_divisive_minimum_length_detects_a_doubling).

Many series: every cell x arm is tested, so the family-wise chance that a flat series
shows a change point anywhere is kept at `pvalue` by Bonferroni: each of the m series is
tested at pvalue / m, with the permutations raised so that threshold is reachable.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ...core.kind import Metric
from ...core.verdicts import verdict_producer
from ...errors import LonglookError, check_range
from .change import counted_values, pick_metrics
from .common_fields import common_field_differences
from .experiments import Side, check_distinct, load_side
from .matching import match_cells
from .path_setup import differences_text, path_setup_differences

# Below 8 experiments no permutation test reaches p <= 0.05 for any step (2/C(7,3) = 0.057);
# at 8, a doubling in the middle with per-experiment means of 10% CV is found in >= 90% of
# series (simulation: test_item11_e_divisive_minimum_length_detects_a_doubling).
MIN_EXPERIMENTS = 8
PERMUTATIONS = 199  # at least; raised to MIN_EXCEEDANCES / threshold - 1 when that is more
# permutations as extreme as the data that a p at the threshold allows: with 399 at 0.05 a
# step whose exact p is 2/C(8,4) = 0.029 passes 96% of the time (199: 93%, 999: 98%)
MIN_EXCEEDANCES = 20
# permutations per series past which a search runs too long to wait for: a permutation takes
# 0.05-0.14 ms here (8-40 experiments), so 100,000 are 5-14 s per series and per change
# point, and --pvalue 1e-6 over 8 series (1.6e8) would be hours each. A per-series threshold
# below 20/MAX_PERMUTATIONS = 2e-4 is refused, naming the --pvalue that fits
MAX_PERMUTATIONS = 100_000
CORRECTION = "bonferroni"
_TIE = 1e-9  # relative: statistics this close to the observed one are ties (count as >=)


def smallest_p(n: int) -> float:
    """The smallest p a permutation test of E-Divisive can give on n values: a perfectly
    separated step of k | n-k has 2 k! (n-k)! arrangements as extreme (either side first),
    so p >= 2 / C(n, k), smallest with the step in the middle."""
    return 2 / math.comb(n, n // 2) if n >= 2 else 1.0


def min_experiments(threshold: float) -> int:
    """The fewest values in which any change can be significant at `threshold`."""
    n = 2
    while smallest_p(n) > threshold:
        n += 1
    return n


def permutations_for(threshold: float, requested: int = PERMUTATIONS) -> int:
    """Enough permutations that p can reach `threshold` with room: a p at the threshold
    leaves MIN_EXCEEDANCES permutations as extreme (399 at 0.05, 3,199 at 0.05/8)."""
    return max(requested, math.ceil(round(MIN_EXCEEDANCES / threshold, 6)) - 1)


@dataclass
class ChangePoint:
    index: int  # the first experiment after the change
    before: float  # mean of the series' means before it (up to the previous change point)
    after: float
    change_pct: float
    p: float = math.nan  # the permutation test's p, (better + 1) / (permutations + 1)


@dataclass
class CellSeries:
    cell_id: str  # the first experiment's id for the cell
    arm: str
    metric: str
    means: list[float]  # per experiment, nan where it had fewer than 2 counted runs
    ns: list[int]
    change_points: list[ChangePoint] = field(default_factory=list)

    def tested(self) -> bool:
        """Whether E-Divisive runs on it (3 means or more): counted in the correction."""
        return int(np.sum(~np.isnan(np.asarray(self.means, dtype=float)))) >= 3

    def as_dict(self) -> dict[str, Any]:
        clean = lambda x: None if isinstance(x, float) and math.isnan(x) else x  # noqa: E731
        return {
            "cell_id": self.cell_id,
            "arm": self.arm,
            "metric": self.metric,
            "means": [clean(m) for m in self.means],
            "n": self.ns,
            "change_points": [{k: clean(v) for k, v in vars(c).items()} for c in self.change_points],
        }


@dataclass
class History:
    sides: list[Side]  # in time order
    metric: Metric
    series: list[CellSeries]
    pvalue: float  # family-wise: over all the series
    correction: str = CORRECTION
    tests: int = 1  # series tested (cell x arm with 3 means or more)
    series_pvalue: float = math.nan  # each series' threshold: pvalue / tests
    permutations: int = PERMUTATIONS
    permutations_requested: int = PERMUTATIONS

    def labels(self) -> list[str]:
        return [f"{s.started_at:%m-%d %H:%M}\n{s.directory.name}" for s in self.sides]

    def smallest_p(self) -> float:
        return smallest_p(len(self.sides))

    def experiments_needed(self) -> int:
        """The fewest experiments in which a change can be significant at series_pvalue."""
        return max(MIN_EXPERIMENTS, min_experiments(self.series_pvalue))

    def detectable(self) -> bool:
        return self.smallest_p() <= self.series_pvalue

    def method(self) -> str:
        """One line for the output: the test, the correction and the permutations."""
        raised = (
            f" (raised from {self.permutations_requested}: {MIN_EXCEEDANCES}/threshold, so that p can reach it)"
            if self.permutations > self.permutations_requested
            else ""
        )
        return (
            f"E-Divisive, Bonferroni over {self.tests} series (cell x arm): each at "
            f"p <= {self.series_pvalue:.3g} for {self.pvalue:g} family-wise; "
            f"{self.permutations:,} permutations{raised}"
        )

    def path_changes(self) -> list[dict[str, Any]]:
        """Where consecutive experiments' paths were made differently (path_setup.py): a
        change point there may be the testbed's."""
        return self._changes(lambda side: side.experiment.get("versions"), path_setup_differences)

    def scenario_changes(self) -> list[dict[str, Any]]:
        """Where consecutive experiments' scenarios differ outside their cells
        (common_fields.py): a change point there may be the setting's."""
        return self._changes(lambda side: side.scenario, common_field_differences)

    def _changes(self, part, differ) -> list[dict[str, Any]]:
        out = []
        for i in range(1, len(self.sides)):
            if differs := differ(part(self.sides[i - 1]), part(self.sides[i])):
                out.append({"index": i, "experiment": self.sides[i].directory.name, "differs": differs})
        return out

    def path_warning(self) -> str | None:
        return _changes_text(self.path_changes(), "the path was made differently", "the testbed's")

    def scenario_warning(self) -> str | None:
        return _changes_text(self.scenario_changes(), "the scenario changed outside its cells", "the setting's")

    def warning(self) -> str | None:
        if self.detectable():
            return None
        return (
            f"no change can be significant: with {len(self.sides)} experiments the smallest p "
            f"E-Divisive's permutation test can give is {self.smallest_p():.3g} "
            f"(2/C({len(self.sides)},{len(self.sides) // 2})), above {self.series_pvalue:.3g}; "
            f"needs {self.experiments_needed()} experiments (or fewer cells, or a larger --pvalue)"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "experiments": [s.summary() for s in self.sides],
            "metric": self.metric.name,
            "pvalue": self.pvalue,
            "correction": self.correction,
            "tests": self.tests,
            "series_pvalue": self.series_pvalue,
            "permutations": self.permutations,
            "smallest_p": self.smallest_p(),
            "experiments_needed": self.experiments_needed(),
            "path_changes": self.path_changes(),
            "scenario_changes": self.scenario_changes(),
            "series": [s.as_dict() for s in self.series],
        }


def _changes_text(changes: list[dict[str, Any]], what: str, whose: str) -> str | None:
    """One line for a console or a page: what changed from which experiment on."""
    if not changes:
        return None
    where = "; from ".join(f"{c['index']} ({c['experiment']}) on: {differences_text(c['differs'])}" for c in changes)
    return f"{what} from {where}: a change point there may be {whose}"


def _next_candidate(
    distances: np.ndarray, change_points: list[int], memo: dict[tuple[int, int], tuple[int, float]], permutations: int
) -> tuple[int, float]:
    """The next change point and its permutation p: the search of the library's
    `_get_next_significant_change_point` (2.1.6), with the same random draws, but p = (better
    + 1) / (permutations + 1), ties counted (within _TIE, not by rounding), and p returned
    instead of compared (see the module's docstring for why). Uses the library's private
    statistics: its version is pinned (scripts/setup.sh)."""
    from more_itertools import pairwise
    from signal_processing_algorithms.energy_statistics.energy_statistics import _calculate_t_stats

    windows = list(pairwise([0, *sorted(change_points), len(distances)]))
    for a, b in windows:
        if (a, b) not in memo:
            stats = _calculate_t_stats(distances[a:b, a:b])
            idx = int(np.argmax(stats))
            memo[(a, b)] = (idx + a, float(stats[idx]))
    index, observed = max((memo[w] for w in windows), key=lambda c: c[1])
    better = 0
    for _ in range(permutations):
        best = -math.inf
        for a, b in windows:
            rows = np.arange(b - a) + a
            np.random.shuffle(rows)
            best = max(best, float(_calculate_t_stats(distances[np.ix_(rows, rows)]).max()))
        better += best >= observed - _TIE * abs(observed)
    return index, (better + 1) / (permutations + 1)


def e_divisive(
    values: Sequence[float], pvalue: float = 0.05, permutations: int | None = None, seed: int = 1
) -> list[tuple[int, float]]:
    """(index, p) of each change point, sorted: where a new segment starts, kept when its
    permutation p <= pvalue (permutations: default permutations_for(pvalue)). NaNs are
    skipped and indices mapped back."""
    from signal_processing_algorithms.determinism import deterministic_numpy_random
    from signal_processing_algorithms.energy_statistics.energy_statistics import _get_distance_matrix, _get_valid_input

    permutations = permutations_for(pvalue) if permutations is None else permutations
    if 1 / (permutations + 1) > pvalue:
        raise ValueError(
            f"{permutations} permutations cannot give p <= {pvalue:g} (the smallest p is "
            f"1/{permutations + 1}); use permutations_for({pvalue:g}) = {permutations_for(pvalue)}"
        )
    x = np.asarray(values, dtype=float)
    keep = np.flatnonzero(~np.isnan(x))
    if len(keep) < 3:  # a change needs a point on each side and one more to test
        return []
    distances = _get_distance_matrix(_get_valid_input(x[keep]))
    found: list[tuple[int, float]] = []
    memo: dict[tuple[int, int], tuple[int, float]] = {}
    with deterministic_numpy_random(seed):
        while len(found) < len(keep) - 1:
            index, p = _next_candidate(distances, [i for i, _ in found], memo, permutations)
            if p > pvalue * (1 + 1e-12):  # p <= pvalue, whatever the rounding of either
                break
            found.append((index, p))
    return sorted((int(keep[i]), p) for i, p in found)


def e_divisive_change_points(
    values: Sequence[float], pvalue: float = 0.05, permutations: int | None = None, seed: int = 1
) -> list[int]:
    """Indices where a new segment starts (sorted); NaNs are skipped and indices mapped back."""
    return [i for i, _ in e_divisive(values, pvalue, permutations, seed)]


def _describe(means: list[float], points: list[tuple[int, float]]) -> list[ChangePoint]:
    x = np.asarray(means, dtype=float)
    bounds = [0, *(i for i, _ in points), len(x)]
    out = []
    for k, (idx, p) in enumerate(points):
        before = float(np.nanmean(x[bounds[k] : idx]))
        after = float(np.nanmean(x[idx : bounds[k + 2]]))
        out.append(ChangePoint(idx, before, after, (after - before) / before * 100 if before else math.nan, p))
    return out


def history(
    directories: Sequence[str | Path],
    *,
    metric: str | None = None,
    vary: Sequence[str] = (),
    pvalue: float = 0.05,
    permutations: int = PERMUTATIONS,
) -> History:
    """Read the experiments, order them by start time, and find change points per cell and
    arm, Bonferroni-corrected over the series (`permutations` is a floor: raised so that
    the per-series threshold is reachable)."""
    check_range("--pvalue", pvalue, 0, 1, low_open=True, high_open=True)
    if len(directories) < MIN_EXPERIMENTS:
        raise LonglookError(
            f"--history: needs at least {MIN_EXPERIMENTS} experiment directories, got {len(directories)}: "
            f"E-Divisive cannot detect even a doubling in fewer than {MIN_EXPERIMENTS} experiments "
            f"(its permutation p is at least 2/C(n, n/2), {smallest_p(MIN_EXPERIMENTS - 1):.3f} for "
            f"{MIN_EXPERIMENTS - 1}, above 0.05)",
            hint="for two, use `longlook compare BASE CAND`",
        )
    if not 0 < pvalue < 1:
        raise LonglookError(f"--pvalue: must be between 0 and 1, got {pvalue:g}")
    sides = sorted((load_side(d) for d in directories), key=lambda s: s.started_at)
    check_distinct(sides, "--history")
    ref = sides[0]
    chosen = pick_metrics(ref, [metric] if metric else [])[0]
    # each experiment's cells paired with the first experiment's (same parameters)
    pairing = [{p.base_id: p.cand_id for p in match_cells(ref, s, vary)} for s in sides]
    series = []
    for cell_id in ref.cells["cell_id"]:
        for arm in ref.arms:
            values = [counted_values(s, pairs[cell_id], arm, chosen.name) for s, pairs in zip(sides, pairing)]
            means = [float(np.mean(v)) if len(v) >= 2 else math.nan for v in values]
            series.append(CellSeries(cell_id, arm, chosen.name, means, [len(v) for v in values]))
    tests, threshold, used = series_threshold(series, pvalue, permutations)
    h = History(sides, chosen, series, pvalue, CORRECTION, tests, threshold, used, permutations)
    if not h.detectable():  # no series can show a change: h.warning() says so and why
        return h
    if used > MAX_PERMUTATIONS:
        fits = MIN_EXCEEDANCES / MAX_PERMUTATIONS * tests
        raise LonglookError(
            f"--pvalue {pvalue:g}: over {tests} series each would be tested at {threshold:.3g}, which needs "
            f"{used:,} permutations per series (at most {MAX_PERMUTATIONS:,} run in reasonable time)",
            hint=f"use --pvalue {fits:.2g} or larger, or compare fewer cells",
        )
    mark_change_points(series, threshold, used)
    return h


def series_threshold(series: Sequence[CellSeries], pvalue: float, permutations: int = PERMUTATIONS):
    """(series tested, each one's threshold pvalue / tested (Bonferroni), permutations that
    let p reach it)."""
    tests = max(1, sum(s.tested() for s in series))
    threshold = pvalue / tests
    return tests, threshold, permutations_for(threshold, permutations)


@verdict_producer("compare.history", "a change point in a cell x arm's series of means over experiments")
def mark_change_points(series: Sequence[CellSeries], threshold: float, permutations: int) -> None:
    """Each series' change points at `threshold` (series_threshold's), set in place."""
    for cs in series:
        cs.change_points = _describe(cs.means, e_divisive(cs.means, threshold, permutations))
