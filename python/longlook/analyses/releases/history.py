"""A release sweep's history: per cell and swept arm, the metric across the
releases (oldest first) with each release's interval, change points, and at each change point
what the state machine did differently on either side.

An experiment with `versions = "quic-go@A..B"` runs one arm per release (`<label>-<version>`,
stacks/builds/release_arms.py), whatever its kind: page loads (the metric: page load time), fairness
(Jain's index; the arm runs every flow of the matchup on that release) or video (QoE; the h3
arm per release, h2 unchanged); here they are put back in release order. Change points come from
E-Divisive on the per-release means (analyses/compare/history.py: the same permutation test,
Bonferroni over the series it tests: those with 3 or more releases measured). Its limit is
stated with every result: with N releases the
smallest p its permutation test can give is 2/C(N, N//2), so fewer than 8 releases can show
no change at 0.05; and two releases whose intervals overlap cannot be told apart, so a change
much smaller than the releases' interval half-width goes unseen. At each change point the
runs of the last release before it and the first after it are compared by `states diff`
(analyses/states/diff.py): transitions that appear, vanish or change frequency. A fairness run
is several flows at once and has no one connection's trace, so a fairness sweep has no states
diff (its history says so); a video run's diff is its session's connection.

Calibrated (tests/calibration/test_bisect.py): sweeps of 8-16 releases with no change
(lognormal runs, CV 5-15%, a few failed runs) show a change point in any series at most
`pvalue` of the time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from packaging.version import InvalidVersion, Version
from scipy import stats as sps

from ...core.experiment_stats import analyse
from ...core.store import Store
from ...core.verdicts import verdict_producer
from ..compare.history import ChangePoint, _describe, e_divisive, min_experiments, permutations_for, smallest_p
from ..states.diff import StateDiff, compare as states_compare, protocols_in
from ..states.runs import load_runs


@dataclass
class ReleasePoint:
    version: str
    arm: str
    n: int
    mean: float
    low: float  # the mean's 95% t-interval
    high: float


@dataclass
class ReleaseSeries:
    cell_id: str
    family: str  # the arm's label before the sweep (`quic-go` for `quic-go-v0.52.0`)
    metric: str
    points: list[ReleasePoint]
    change_points: list[ChangePoint] = field(default_factory=list)
    diffs: dict[int, list[StateDiff]] = field(default_factory=dict)  # change point index -> per protocol

    def tested(self) -> bool:
        """Whether E-Divisive runs on it (3 releases measured or more): counted in the
        correction."""
        return sum(not math.isnan(p.mean) for p in self.points) >= 3

    def halfwidth_pct(self) -> float:
        """The median release's interval half-width, % of its mean: about the smallest change
        the sweep can separate between two releases."""
        hw = [(p.high - p.low) / 2 / p.mean * 100 for p in self.points if p.mean and not math.isnan(p.low)]
        return float(np.median(hw)) if hw else math.nan


@dataclass
class ReleaseHistory:
    series: list[ReleaseSeries]
    metric: str
    unit: str
    pvalue: float
    series_pvalue: float
    permutations: int
    note: str = ""  # what this sweep's history does not hold, and why

    def limit(self) -> str:
        """What this sweep can detect, in words."""
        n = max((len(s.points) for s in self.series), default=0)
        need = max(8, min_experiments(self.series_pvalue))
        hw = [s.halfwidth_pct() for s in self.series if not math.isnan(s.halfwidth_pct())]
        size = (
            f"; releases' 95% intervals are +-{np.median(hw):.1f}% (median), so smaller steps are not separable"
            if hw
            else ""
        )
        size += f"; {self.note}" if self.note else ""
        if smallest_p(n) > self.series_pvalue:
            return (
                f"no change can be significant: {n} releases give E-Divisive a smallest p of "
                f"{smallest_p(n):.3g} > {self.series_pvalue:.3g}; it needs {need}{size}"
            )
        tested = sum(s.tested() for s in self.series)  # the family change_points divided by
        untested = len(self.series) - tested
        if not tested:
            return f"no series has 3 releases measured: E-Divisive tested nothing{size}"
        family = (
            f"Bonferroni over the {tested} series tested; {untested} with fewer than 3 releases measured not tested"
            if untested
            else f"Bonferroni over {tested} series"
        )
        return f"E-Divisive over {n} releases, each series at p <= {self.series_pvalue:.3g} ({family}){size}"


def _version_key(v: str):
    try:
        return (0, Version(v.removeprefix("v")))
    except InvalidVersion:
        return (1, v)


def swept_arms(scenario) -> dict[str, list[tuple[str, str]]]:
    """Family label -> [(arm label, version)] in release order, for the arms a `versions`
    sweep made (their server or client names `stack@version`, label `<family>-<version>`)."""
    out: dict[str, list[tuple[str, str]]] = {}
    if not getattr(scenario, "versions", None):
        return out
    for a in scenario.arm_list():
        for spec in (getattr(a, "server", None), getattr(a, "client", None)):
            if spec and "@" in spec:
                version = spec.partition("@")[2]
                if a.label.endswith(f"-{version}"):
                    out.setdefault(a.label[: -len(version) - 1], []).append((a.label, version))
                    break
    return {f: sorted(arms, key=lambda t: _version_key(t[1])) for f, arms in out.items()}


def release_point(values: np.ndarray, version: str, arm: str) -> ReleasePoint:
    """A release's mean over its counted values with the 95% t-interval of the mean."""
    n = len(values)
    mean = float(values.mean()) if n else math.nan
    if n >= 2 and values.std(ddof=1) > 0:
        low, high = sps.t.interval(0.95, n - 1, loc=mean, scale=values.std(ddof=1) / math.sqrt(n))
    else:
        low = high = math.nan
    return ReleasePoint(version, arm, n, mean, float(low), float(high))


@verdict_producer("releases.history", "a change point in a release sweep's per-release means")
def release_history(
    directory: str | Path, *, metric: str | None = None, pvalue: float = 0.05, diffs: bool = True
) -> ReleaseHistory | None:
    """None when the experiment sweeps no releases."""
    directory = Path(directory)
    with Store.open(directory, read_only=True) as store:
        an = analyse(store)
    families = swept_arms(an.scenario)
    if not families:
        return None
    m = an.kind.metric(metric) if metric else an.metric
    counted = an.counted(m.name)
    series = []
    for cell in an.cells["cell_id"]:
        for family, arms in families.items():
            pts = []
            for label, version in arms:
                v = counted[(counted["cell_id"] == cell) & (counted["arm"] == label)][m.name]
                pts.append(release_point(v.dropna().to_numpy(float), version, label))
            series.append(ReleaseSeries(cell, family, m.name, pts))
    # a fairness run is all its flows at once: no one connection's trace to diff
    traced = getattr(an.kind, "name", None) != "fairness"
    note = (
        ""
        if traced
        else (
            "no state-machine diff at change points: a fairness run is several flows "
            "at once, with no one connection's trace"
        )
    )
    threshold, perms, _ = change_points(series, pvalue)
    if diffs and traced:
        for s in series:
            for cp in s.change_points:
                before, after = s.points[cp.index - 1], s.points[cp.index]
                s.diffs[cp.index] = release_states_diff(
                    directory, s.cell_id, (before.arm, before.version), (after.arm, after.version)
                )
    return ReleaseHistory(series, m.name, m.unit, pvalue, threshold, perms, note)


def change_points(series: list[ReleaseSeries], pvalue: float) -> tuple[float, int, int]:
    """E-Divisive on each series with 3 or more releases measured, each at pvalue / (their
    number); sets each series' change_points. Returns (that threshold, the permutations, the
    number of series tested)."""
    tested = [s for s in series if s.tested()]
    threshold = pvalue / max(1, len(tested))
    perms = permutations_for(threshold)
    for s in tested:
        means = [p.mean for p in s.points]
        s.change_points = _describe(means, e_divisive(means, threshold, perms))
    return threshold, perms, len(tested)


def release_states_diff(
    directory: str | Path, cell_id: str, before: tuple[str, str], after: tuple[str, str]
) -> list[StateDiff]:
    """The state machines of one release's runs against another's (each (arm, version)), in
    one experiment's cell, per protocol: what `states diff` finds at a change."""
    runs_a = load_runs(directory, cell=cell_id, arm=before[0])
    runs_b = load_runs(directory, cell=cell_id, arm=after[0])
    return [
        states_compare(runs_a, runs_b, p, label_a=before[1], label_b=after[1]) for p in protocols_in(runs_a + runs_b)
    ]
