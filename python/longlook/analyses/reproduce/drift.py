"""Do a cell's runs drift across rounds, in the reproduction's own stores? Every test under
the claims takes a cell's rounds as independent; this reads each experiment's cells in round
order (core.round_series) and pools their lag-1 autocorrelation (core.serial): the per-round
log ratio of a compared pair, and each arm's own values. A comparison of two arms (paired, or
Welch's on their means) is hurt only by drift in their ratio: a drift common to a round's arms,
which run back to back, cancels in it (Welch's variance then counts it in both arms, a
conservative error). The verdict is the pooled one; each scenario's own figure is shown beside
it, descriptive (one scenario's few series decide nothing alone)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from ...core.experiment_stats import analyse
from ...core.round_series import round_series
from ...core.serial import Drift, drift_test, widened_level
from ...core.spec import Statistics
from ...core.store import Store
from ...errors import LonglookError

ALPHA = 0.05


@dataclass(frozen=True)
class ScenarioDrift:
    name: str
    paired: Drift
    arms: Drift


@dataclass(frozen=True)
class RoundDrift:
    paired: Drift  # the per-round log ratio of each compared pair
    arms: Drift  # each arm's own values
    scenarios: tuple[ScenarioDrift, ...]

    def as_dict(self) -> dict:
        def one(d: Drift) -> dict:
            return {
                "series": d.series,
                "rounds": d.rounds,
                "rho": round(d.rho, 4),
                "p": d.p,
                "alpha": d.alpha,
                "drifts": d.drifts,
                "detectable_rho": round(d.detectable, 3),
            }

        return {
            "paired": one(self.paired),
            "arms": one(self.arms),
            "reading": self.reading(),
            "inflation": round(self.inflation, 4),
            "applied": self.applied(),
            "scenarios": [{"name": s.name, "paired": one(s.paired), "arms": one(s.arms)} for s in self.scenarios],
        }

    @property
    def inflation(self) -> float:
        """How much wider every interval of the comparisons must be: the paired series'
        factor when their drift is shown, else 1 (a drift common to a round's arms cancels in
        their comparison)."""
        return self.paired.inflation if self.paired.drifts else 1.0

    def widened(self, statistics: Statistics) -> Statistics:
        """A scenario's [statistics] with alpha and the confidence level moved so that every
        interval is `inflation` times as wide (core.serial.widened_level); unchanged without
        drift."""
        f = self.inflation
        if f <= 1.0:
            return statistics
        return statistics.model_copy(
            update={
                "alpha": widened_level(statistics.alpha, f),
                "confidence": 1 - widened_level(1 - statistics.confidence, f),
            }
        )

    def reading(self) -> str:
        """What the two figures mean for the comparisons."""
        if self.paired.series == 0:
            return "no compared pair has enough rounds to tell"
        if self.paired.drifts:
            return (
                "the ratio of a round's arms drifts: consecutive rounds' comparisons are alike, so a "
                "test that takes rounds as independent (paired or Welch) says more than its data"
            )
        if self.arms.drifts:
            return (
                "each arm drifts, their ratio does not: what drifts is common to a round's arms (run back "
                "to back) and cancels in their comparison. Intervals on one arm's own level (an absolute "
                "load time) are too narrow; the comparisons of two arms are not affected"
            )
        return "neither drifts detectably: rounds behave as independent draws at this resolution"

    def applied(self) -> str:
        """What the verdicts above did about it."""
        f = self.inflation
        if f <= 1.0:
            return "nothing: every test ran at its scenario's alpha and confidence"
        a = widened_level(0.01, f)
        return (
            f"every test above ran at the level that makes its intervals {100 * (f - 1):.0f}% wider "
            f"(an AR(1) drift of the pooled lag-1 correlation: alpha 0.01 -> {a:.4f}, 95% intervals -> "
            f"{100 * (1 - widened_level(0.05, f)):.1f}%), which holds each test's false-verdict rate at its "
            f"alpha under such a drift (the calibration suite)"
        )

    def markdown(self) -> list[str]:
        lines = [
            f"- per-round log ratio of the compared arms (what every comparison reads): {self.paired.text()}",
            f"- each arm's own values in round order: {self.arms.text()}",
            f"- reading: {self.reading()}",
            f"- applied: {self.applied()}",
            "",
            "| scenario | pairs: series | lag-1 r | p | arms: series | lag-1 r | p |",
            "|---|---|---|---|---|---|---|",
        ]
        for s in self.scenarios:
            lines.append(
                f"| {s.name} | {s.paired.series} | {_r(s.paired)} | {_p(s.paired)} "
                f"| {s.arms.series} | {_r(s.arms)} | {_p(s.arms)} |"
            )
        return lines


def _r(d: Drift) -> str:
    return "-" if d.series == 0 else f"{d.rho:+.3f}"


def _p(d: Drift) -> str:
    return "-" if d.series == 0 else f"{d.p:.3g}"


def _series_of(directory: Path) -> tuple[list[np.ndarray], list[np.ndarray]]:
    with Store.open(directory, read_only=True) as store:
        a = analyse(store)
    paired, arms = round_series(a.runs, a.pairs, a.metric.name, exclude_flagged=a.exclude_flagged)
    return list(paired.values()), list(arms.values())


def round_drift(stores: Sequence[tuple[str, Path]], *, alpha: float = ALPHA) -> RoundDrift | None:
    """The pooled test over the experiments in `stores` (name, directory); None when none of
    them could be read."""
    per: list[ScenarioDrift] = []
    all_paired: list[np.ndarray] = []
    all_arms: list[np.ndarray] = []
    for name, directory in stores:
        try:
            paired, arms = _series_of(directory)
        except LonglookError:
            continue  # a store today's code cannot analyse: its claims say so already
        all_paired += paired
        all_arms += arms
        per.append(ScenarioDrift(name, drift_test(paired, alpha=alpha), drift_test(arms, alpha=alpha)))
    if not per:
        return None
    return RoundDrift(drift_test(all_paired, alpha=alpha), drift_test(all_arms, alpha=alpha), tuple(per))
