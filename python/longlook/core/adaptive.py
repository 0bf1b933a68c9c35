"""Adaptive rounds: when a cell has been measured precisely enough to stop.

The rule stops on precision alone, and measures precision blinded: after each round it
computes how wide the confidence interval of the cell's % difference is from the spread of
all the cell's counted values of the compared arms pooled together, ignoring which arm each
came from (blinded sample-size re-estimation, Kieser & Friede 2003). A cell gets more
rounds until that half-width is at most `target_halfwidth_pct` for every comparison of the
cell, or until `max` rounds; never fewer than `min`. Not a group-sequential design: there is
one test, at the end, at the scenario's alpha.

Why blinded: the stopping round then carries no information about which arm is ahead, and
barely any about the spread the final Welch test will estimate. Stopping on the usual
(unblinded) interval's width lets a run of chance-low variances end a cell early, and the
final test then rejects too often (measured: 0.057-0.062 instead of 0.05 with min = 6);
stopping when p crosses alpha is far worse (about 0.22). The blinded rule stays at or
below alpha (tests/test_compare_adaptive.py simulates A/A cells). With a real difference
the pooled spread includes it, so such a cell runs longer than needed, the safe side (on
the testbed, QUIC's 15% head start at 0% loss made a cell take 7-9 rounds instead of 4 for
a +-10% target).

The executor calls `needs_more_rounds(runs_of_cell, rule, pairs, metric)` after each round.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps

from .spec import AdaptiveRounds
from .status import counted_runs


def blinded_halfwidth_from_moments(na, nb, mean, var, confidence: float = 0.95):
    """Half-width (in % of the mean) of a two-sample interval of the difference of means,
    with `mean` and `var` those of both samples pooled, label-blind; arrays broadcast.

    Written here (a few lines) because no library offers a blinded interval: it is the
    t-interval of a difference of two means under equal spread, on the pooled values."""
    na, nb, mean, var = (np.asarray(x, dtype=float) for x in (na, nb, mean, var))
    with np.errstate(divide="ignore", invalid="ignore"):
        se_pct = 100.0 * np.sqrt(var * (1 / na + 1 / nb)) / np.abs(mean)
        hw = sps.t.ppf(0.5 + confidence / 2, na + nb - 2) * se_pct
    return np.where((na < 2) | (nb < 2) | (mean == 0), np.nan, hw)


def halfwidth_pct(a: Sequence[float], b: Sequence[float], confidence: float = 0.95) -> float:
    """The blinded half-width of the % difference's interval for two samples; nan below
    two values per side."""
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(xa) < 2 or len(xb) < 2:
        return math.nan
    pooled = np.concatenate([xa, xb])
    return float(blinded_halfwidth_from_moments(len(xa), len(xb), pooled.mean(),
                                                pooled.var(ddof=1), confidence))


@dataclass(frozen=True)
class StopDecision:
    more: bool  # run another round
    # below minimum | target reached | maximum reached | not yet precise | nothing to compare
    reason: str
    rounds: int  # rounds begun so far
    halfwidth_pct: float  # the widest comparison's blinded half-width (nan: not yet computable)


def decide(samples: Sequence[tuple[Sequence[float], Sequence[float]]], rounds_done: int,
           rule: AdaptiveRounds, confidence: float = 0.95) -> StopDecision:
    """The rule on plain arrays: one (A, B) pair of samples per comparison of the cell."""
    widths = [halfwidth_pct(a, b, confidence) for a, b in samples]
    widest = math.nan if not widths or any(math.isnan(w) for w in widths) else max(widths)
    if rounds_done >= rule.max:
        return StopDecision(False, "maximum reached", rounds_done, widest)
    if rounds_done < rule.min:
        return StopDecision(True, "below minimum", rounds_done, widest)
    if not samples:
        return StopDecision(False, "nothing to compare", rounds_done, widest)
    if not math.isnan(widest) and widest <= rule.target_halfwidth_pct:
        return StopDecision(False, "target reached", rounds_done, widest)
    return StopDecision(True, "not yet precise", rounds_done, widest)


def stopping_rounds(a: np.ndarray, b: np.ndarray, rule: AdaptiveRounds,
                    confidence: float = 0.95) -> np.ndarray:
    """For many cells at once (simulation, planning): the round at which each would stop
    under `decide`, one comparison per cell, every run counted. `a`, `b` are (cells,
    rule.max) arrays, column j the value of round j."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    n = np.arange(1, a.shape[1] + 1)
    s1 = np.cumsum(a, axis=1) + np.cumsum(b, axis=1)
    s2 = np.cumsum(a * a, axis=1) + np.cumsum(b * b, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = s1 / (2 * n)
        var = (s2 - s1 * s1 / (2 * n)) / (2 * n - 1)
    hw = blinded_halfwidth_from_moments(n, n, mean, var, confidence)
    done = (hw <= rule.target_halfwidth_pct) & (n >= rule.min)
    done[:, rule.max - 1:] = True
    return np.argmax(done, axis=1) + 1


def stopping_decision(runs_of_cell: pd.DataFrame, rule: AdaptiveRounds,
                      pairs: Sequence[tuple[str, str]], metric: str, *,
                      confidence: float = 0.95, exclude_flagged: bool = True) -> StopDecision:
    """The rule on one cell's runs as the store has them (Store.runs_frame() rows of the
    cell). Only the runs that count (core.status) enter the interval; the rounds done are
    the rounds begun, whatever their runs' outcome, so failing runs cannot push a cell past
    `max`."""
    rounds_done = int(runs_of_cell["round"].max()) + 1 if len(runs_of_cell) else 0
    good = counted_runs(runs_of_cell, metric, exclude_flagged=exclude_flagged)
    by_arm = {arm: g[metric].to_numpy(dtype=float) for arm, g in good.groupby("arm")} if len(good) else {}
    empty = np.array([], dtype=float)
    samples = [(by_arm.get(a, empty), by_arm.get(b, empty)) for a, b in pairs]
    return decide(samples, rounds_done, rule, confidence)


def needs_more_rounds(runs_of_cell: pd.DataFrame, rule: AdaptiveRounds,
                      pairs: Sequence[tuple[str, str]], metric: str, *,
                      confidence: float = 0.95, exclude_flagged: bool = True) -> bool:
    """After a round: should this cell get another? A kind with no comparisons has nothing
    to be precise about and stops at `min`."""
    return stopping_decision(runs_of_cell, rule, pairs, metric, confidence=confidence,
                             exclude_flagged=exclude_flagged).more


def rule_metric(rule: AdaptiveRounds, kind) -> str:
    """The metric the rule watches: its own, else the kind's first."""
    if rule.metric:
        return rule.metric
    primary = getattr(kind, "primary_metric", None)
    if primary is None:
        raise ValueError("adaptive rounds need a metric: the kind declares none")
    return primary.name


def describe(rule: AdaptiveRounds) -> str:
    """One sentence for the report: which stopping rule, with its numbers."""
    return (f"adaptive rounds: {rule.min} to {rule.max} per cell, stopping once the blinded "
            f"interval of every comparison's % difference is within "
            f"+-{rule.target_halfwidth_pct:g}% (precision only, never the p-value)")
