"""Adaptive rounds: how many rounds a cell gets, fixed once from its first `min` rounds.

The rule is a fixed-in-advance design per cell (an internal pilot: Wittes & Brittain 1990,
Kieser & Friede 2003). The cell's first `min` rounds are the pilot. From the pilot's counted
values alone, the rule computes once the number of rounds n, between `min` and `max`, at
which the confidence interval of every comparison's % difference would be at most
+-`target_halfwidth_pct` wide, and the cell then runs exactly n rounds: no later round is
looked at, so later data cannot end a cell early. The final test is the scenario's (Welch's
t by default) at the scenario's alpha; there is one test, at the end. Stateless: n is
recomputed from the store's runs of rounds < `min` after every round (the same runs give
the same n), so a resumed or distributed cell plans the same.

The variance the plan uses. For each comparison, with the pilot's per-arm counts na, nb,
sums of squares about each arm's own mean SSa, SSb and difference of the arm means d:

    v = (SSa + SSb + DIFFERENCE_WEIGHT * na*nb/(na+nb) * d**2) / (na + nb - 1)

and the half-width is the t-interval's for n per arm with that variance, in % of the
pilot's pooled mean. With a weight of 1, v is exactly the blinded one-sample variance (both
arms' values pooled, label-blind: the usual blinded re-estimation); with 3 it is that
variance with its between-arm part counted three times instead of once, so the plan is
never shorter than the blinded one, and it grows with a real difference. v and the pooled
mean do not change when the arms are swapped (same n), so when a cell stops says nothing
about which arm is ahead; the p-value is never looked at. The plan aims the interval at the
target; from 2*min values it is an estimate, so a cell can end wider than the
target (simulated: 28-78% of the cells that stop before `max` end within it; the median
cell ends at 0.87-1.02 times the target) - the price of not looking again. A real
difference makes cells longer on average (normal sd 10% vs 30%, target 18: one arm 20%
faster, 26 rounds instead of 16), except through the % scale: a slower arm raises the
pooled mean, so with a large spread a cell can end a little sooner (both lognormal sigma
.45, target 22, one arm 20% slower: 31 rounds on average instead of 33; the old rule 30
instead of 34).

Why this rule, with its weight (DIFFERENCE_WEIGHT = 3). The earlier rule stopped at the
first round >= min whose blinded half-width (weight 1, all rounds so far) was within target,
looking again after every round. It kept alpha when both arms had the same distribution,
not when they differed in spread or shape: the pooled sum of squares is dominated by the
noisier arm, so stopping when it is low selects an underestimate of that arm's variance,
which the final Welch test then uses; repeated looks make it worse. Simulated
(tests/unit/core/test_compare_adaptive.py; 200,000 null cells each, equal means, min 6, max 40;
"fixed": a design whose n has the same distribution but is drawn independently of the
data), false-positive rate at alpha 0.05 / 0.01:

    null                           target  old rule (its fixed)  new rule (its fixed)  new n
    both lognormal sigma .45       22      .0487/.0090           .0459/.0081           36 [19-40]
                                           (.0475/.0086)         (.0467/.0083)
    both normal, sd 40%            22      .0495/.0099           .0462/.0088           29 [16-40]
                                           (.0493/.0096)         (.0496/.0098)
    normal sd 10% vs 30%           18      .0555/.0122           .0437/.0088           14 [7-27]
                                           (.0507/.0111)         (.0506/.0103)
    normal sd 10% vs lognormal .6  22      .0907/.0342           .0711/.0244           30 [14-40]
                                           (.0738/.0272)         (.0728/.0264)

(new n: median [10th-90th percentile]; every null's cells end anywhere from 6 to 40.) The
weight: with 1 (a plain blinded pilot) the unequal spread gave .0552/.0119 and the skewed
pair .0866/.0327 (its fixed design .0751/.0281). A weight of 2 makes the plan independent
of the pilot's Welch t (up to the % scale) for normal arms when one arm's spread dominates
(the Beta-Gamma argument that makes weight 1 exact for equal spreads), and kept alpha under
unequal spread; skewed arms, whose mean and spread move together, still exceeded the fixed
design (.078 vs .069 at min 10). With 3, over a grid of min 4/6/10, targets 15-40 and nine
nulls (sd ratios 1:1 to 1:10, lognormal sigma .3 to 1.0; 216 checks of 20,000 cells each,
run with five seeds) the rate exceeded alpha (normal nulls) or the fixed design (skewed
nulls) by more than 2 Monte-Carlo standard errors at most once per run (at most 2.4 se), as
chance would; weight 2 did 9-13 times (up to 6 se), weight 1 78 and the old rule 90 times.
The price: about two rounds more per cell than weight 1 (26.3 vs 24.4 on average over that
grid; the old rule 25.5), and a slightly conservative test when the arms agree (.046 at
alpha .05).

With two comparisons sharing a baseline arm (n the larger of their plans; baseline sd 30%
or lognormal, the others sd 10%) the rates stayed at or below the fixed design's, too.

What the rule cannot fix: Welch's t itself is anticonservative when one arm is skewed and n
is small; that is the test's property, measured by the fixed design (0.073 at alpha 0.05,
0.026 at 0.01 for normal sd 10% vs lognormal sigma .6 at these n), not the rule's.

If the pilot has fewer than two counted values in an arm of a comparison, nothing can be
planned and the cell runs to `max`. The planned n counts rounds; rounds whose runs fail
leave fewer counted values than planned. A pilot round retried later (a resumed
experiment) changes the pilot, and so the plan, deterministically.

The executor calls `needs_more_rounds(runs_of_cell, rule, pairs, metric)` after each round.

Deciding within a margin (equivalence "the same", a side of a change) is planned otherwise:
`margin_rounds`, on the within-arm spreads alone, measured on data the decision will not
use (an earlier step of a bisect, an earlier experiment), for the power to decide when the
truth lies `margin` from the bound to clear. The rule above is for difference tests: its
between-arm term makes a cell whose pilot looks equal stop early, which favours "the same",
and so does any plan from the cell's own pilot, through its variance: a pilot whose spread
came out small plans few rounds, and the final interval, made mostly of those rounds, is
then too narrow as well (Wittes & Brittain's bias, which a difference test barely feels
and an equivalence test at its margin does). Simulated (tests/unit/core/test_compare_adaptive.py;
normal arms, sd 6%, true difference = the margin, 10%; the 95% interval within +-10% is
"the same", so 2.5% is its nominal rate; min 6, max 30; 40,000 cells each; "fixed": the
same distribution of n drawn independently of the data):

    plan                                        P("the same")   its fixed design   rounds (mean)
    this rule, target half-width 5% (weight 3)  3.41%           2.49%              26.7
    the pilot's within-arm spread only          2.93%           2.47%              10.9
    margin_rounds, spread of 12 earlier rounds  2.39%           2.50%              10.7

(standard error 0.08%), so only the last keeps "the same" at the fixed design's rate: its n
does not depend on the data tested, which makes it a fixed design.
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

# how many times the pilot's between-arm part (na*nb/(na+nb) * d**2) enters the planning
# variance; 1 would be the blinded pooled variance (see the module's docstring)
DIFFERENCE_WEIGHT = 3.0


def blinded_halfwidth_from_moments(na, nb, mean, var, confidence: float = 0.95):
    """Half-width (in % of the mean) of a two-sample interval of the difference of means,
    with `mean` and `var` those of both samples pooled, label-blind; arrays broadcast.

    Written here (a few lines) because no library offers a blinded interval: it is the
    t-interval of a difference of two means under equal spread, on the pooled values. The
    plan (`planned_rounds`) uses it with its own variance."""
    na, nb, mean, var = (np.asarray(x, dtype=float) for x in (na, nb, mean, var))
    with np.errstate(divide="ignore", invalid="ignore"):
        se_pct = 100.0 * np.sqrt(var * (1 / na + 1 / nb)) / np.abs(mean)
        hw = sps.t.ppf(0.5 + confidence / 2, na + nb - 2) * se_pct
    return np.where((na < 2) | (nb < 2) | (mean == 0), np.nan, hw)


def halfwidth_pct(a: Sequence[float], b: Sequence[float], confidence: float = 0.95) -> float:
    """The blinded half-width of the % difference's interval for two samples; nan below
    two values per side. The report shows it as the precision a cell reached."""
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(xa) < 2 or len(xb) < 2:
        return math.nan
    pooled = np.concatenate([xa, xb])
    return float(blinded_halfwidth_from_moments(len(xa), len(xb), pooled.mean(), pooled.var(ddof=1), confidence))


def planning_moments(na, nb, sum_a, sum_b, ss_a, ss_b, weight: float = DIFFERENCE_WEIGHT):
    """The plan's (pooled mean, variance) from a pilot's per-arm counts, sums and sums of
    squares about each arm's own mean (see the module's docstring); arrays broadcast, nan
    where an arm has fewer than two values."""
    na, nb, sum_a, sum_b, ss_a, ss_b = (np.asarray(x, dtype=float) for x in (na, nb, sum_a, sum_b, ss_a, ss_b))
    with np.errstate(divide="ignore", invalid="ignore"):
        d = sum_a / na - sum_b / nb
        var = (ss_a + ss_b + weight * na * nb / (na + nb) * d * d) / (na + nb - 1)
        mean = (sum_a + sum_b) / (na + nb)
    bad = (na < 2) | (nb < 2)
    return np.where(bad, np.nan, mean), np.where(bad, np.nan, var)


def planned_rounds_from_moments(mean, var, rule: AdaptiveRounds, confidence: float = 0.95) -> np.ndarray:
    """The fewest rounds n in [min, max] whose interval (n per arm, the plan's variance) is
    within the target; `max` where none is or nothing could be planned (nan)."""
    mean, var = np.asarray(mean, dtype=float), np.asarray(var, dtype=float)
    ns = np.arange(rule.min, rule.max + 1)
    hw = blinded_halfwidth_from_moments(ns, ns, mean[..., None], var[..., None], confidence)
    ok = hw <= rule.target_halfwidth_pct  # nan compares False
    ok[..., -1] = True
    return ns[np.argmax(ok, axis=-1)]


def planned_rounds(
    pilot: Sequence[tuple[Sequence[float], Sequence[float]]], rule: AdaptiveRounds, confidence: float = 0.95
) -> int:
    """The rounds a cell gets, from its pilot: one (A, B) pair of the counted values of
    rounds < min per comparison; the most any comparison needs."""
    n = rule.min
    for a, b in pilot:
        xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        mean, var = planning_moments(
            len(xa),
            len(xb),
            xa.sum(),
            xb.sum(),
            ((xa - xa.mean()) ** 2).sum() if len(xa) else 0.0,
            ((xb - xb.mean()) ** 2).sum() if len(xb) else 0.0,
        )
        n = max(n, int(planned_rounds_from_moments(mean, var, rule, confidence)))
    return n


@dataclass(frozen=True)
class StopDecision:
    more: bool  # run another round
    # below minimum | planned rounds done | maximum reached | planned rounds not done |
    # nothing to compare
    reason: str
    rounds: int  # rounds begun so far
    halfwidth_pct: float  # the widest comparison's blinded half-width (nan: not yet computable)
    planned: int | None = None  # the rounds the pilot planned (None: before the pilot ends)


def decide(
    samples: Sequence[tuple[Sequence[float], Sequence[float]]],
    rounds_done: int,
    rule: AdaptiveRounds,
    confidence: float = 0.95,
    pilot: Sequence[tuple[Sequence[float], Sequence[float]]] | None = None,
) -> StopDecision:
    """The rule on plain arrays: one (A, B) pair of samples per comparison of the cell (all
    counted values so far, for the half-width reached). `pilot`: the same pairs restricted
    to rounds < min; None takes each sample's first `min` values (samples in round order,
    every run counted, as in a simulation)."""
    widths = [halfwidth_pct(a, b, confidence) for a, b in samples]
    widest = math.nan if not widths or any(math.isnan(w) for w in widths) else max(widths)
    planned = None
    if rounds_done >= rule.min and samples:
        if pilot is None:
            pilot = [
                (np.asarray(a, dtype=float)[: rule.min], np.asarray(b, dtype=float)[: rule.min]) for a, b in samples
            ]
        planned = planned_rounds(pilot, rule, confidence)
    if rounds_done >= rule.max:
        return StopDecision(False, "maximum reached", rounds_done, widest, planned)
    if rounds_done < rule.min:
        return StopDecision(True, "below minimum", rounds_done, widest, planned)
    if not samples:
        return StopDecision(False, "nothing to compare", rounds_done, widest, planned)
    if rounds_done >= planned:
        return StopDecision(False, "planned rounds done", rounds_done, widest, planned)
    return StopDecision(True, "planned rounds not done", rounds_done, widest, planned)


def stopping_rounds(a: np.ndarray, b: np.ndarray, rule: AdaptiveRounds, confidence: float = 0.95) -> np.ndarray:
    """For many cells at once (simulation, planning): the round at which each would stop
    under `decide`, one comparison per cell, every run counted. `a`, `b` are (cells,
    rule.max) arrays, column j the value of round j; only the first `min` columns (the
    pilot) decide."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    pa, pb = a[:, : rule.min], b[:, : rule.min]
    k = pa.shape[1]

    def ss(x):
        return ((x - x.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)

    mean, var = planning_moments(k, k, pa.sum(axis=1), pb.sum(axis=1), ss(pa), ss(pb))
    return planned_rounds_from_moments(mean, var, rule, confidence)


def stopping_decision(
    runs_of_cell: pd.DataFrame,
    rule: AdaptiveRounds,
    pairs: Sequence[tuple[str, str]],
    metric: str,
    *,
    confidence: float = 0.95,
    exclude_flagged: bool = True,
) -> StopDecision:
    """The rule on one cell's runs as the store has them (Store.runs_frame() rows of the
    cell). Only the runs that count (core.status) enter the pilot and the half-width; the
    rounds done are the rounds begun, whatever their runs' outcome, so failing runs cannot
    push a cell past `max`."""
    rounds_done = int(runs_of_cell["round"].max()) + 1 if len(runs_of_cell) else 0
    good = counted_runs(runs_of_cell, metric, exclude_flagged=exclude_flagged)
    empty = np.array([], dtype=float)

    def by_arm(frame):
        if not len(frame):
            return {}
        return {arm: g[metric].to_numpy(dtype=float) for arm, g in frame.groupby("arm")}

    every, first = by_arm(good), by_arm(good[good["round"] < rule.min] if len(good) else good)
    samples = [(every.get(a, empty), every.get(b, empty)) for a, b in pairs]
    pilot = [(first.get(a, empty), first.get(b, empty)) for a, b in pairs]
    return decide(samples, rounds_done, rule, confidence, pilot=pilot)


def needs_more_rounds(
    runs_of_cell: pd.DataFrame,
    rule: AdaptiveRounds,
    pairs: Sequence[tuple[str, str]],
    metric: str,
    *,
    confidence: float = 0.95,
    exclude_flagged: bool = True,
) -> bool:
    """After a round: should this cell get another? A kind with no comparisons has nothing
    to be precise about and stops at `min`."""
    return stopping_decision(
        runs_of_cell, rule, pairs, metric, confidence=confidence, exclude_flagged=exclude_flagged
    ).more


def contrast_spread(variances, weights: Sequence[float]):
    """A contrast sum(w_i * mean_i) of arms with these within-arm variances, at one round
    per arm: (its variance, the Welch-Satterthwaite degrees of freedom per round), so that at
    n rounds per arm its standard error is sqrt(variance / n) and its df (n - 1) * the
    second. nan when a variance is unknown. `variances[i]` may be an array (simulations)."""
    w = np.asarray(weights, dtype=float)
    v = np.asarray([np.asarray(x, dtype=float) for x in variances])
    terms = (w**2).reshape((-1,) + (1,) * (v.ndim - 1)) * v
    total, squares = terms.sum(axis=0), (terms**2).sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = np.where(squares > 0, total * total / squares, np.nan)
    if total.ndim == 0:
        return float(total), float(df)
    return total, df


def margin_rounds_from_spread(
    variance,
    df_per_round,
    margin,
    alpha: float,
    power: float,
    min_rounds: int,
    max_rounds: int,
    *,
    equivalence: bool = False,
) -> np.ndarray:
    """The fewest rounds n in [min_rounds, max_rounds] at which a one-sided test at `alpha`
    of a contrast (variance and df per round from `contrast_spread`) clears a bound the truth
    lies `margin` away from, with probability `power`:

        (t(1 - alpha, (n - 1) * df_per_round) + z) * sqrt(variance / n) <= margin

    z = z(power) for a side (one bound; the truth `margin` from it), z((1 + power) / 2) for
    equivalence (two bounds, each `margin` from a true difference of 0). `max_rounds` where
    no n does, or nothing could be planned (nan). Arrays broadcast (simulations)."""
    variance, df_per_round, margin = (np.asarray(x, dtype=float) for x in (variance, df_per_round, margin))
    ns = np.arange(min_rounds, max_rounds + 1)
    z = sps.norm.ppf((1 + power) / 2 if equivalence else power)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = sps.t.ppf(1 - alpha, (ns - 1) * df_per_round[..., None])
        ok = (t + z) * np.sqrt(variance[..., None] / ns) <= margin[..., None]  # nan compares False
    ok[..., -1] = True
    return ns[np.argmax(ok, axis=-1)]


def margin_rounds(
    variances: Sequence[float],
    weights: Sequence[float],
    margin: float,
    alpha: float,
    power: float,
    min_rounds: int,
    max_rounds: int,
    *,
    equivalence: bool = False,
) -> int:
    """Rounds for a decision within a margin (see the module's docstring): a side of a
    bound (`weights` the contrast, e.g. (1, -1/2, -1/2) for a release against the midpoint
    of two others) or equivalence (weights (1, -1)), planned on within-arm variances alone,
    which should come from data the decision will not use, never from the arms' difference."""
    variance, df = contrast_spread(variances, weights)
    return int(
        margin_rounds_from_spread(variance, df, margin, alpha, power, min_rounds, max_rounds, equivalence=equivalence)
    )


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
    return (
        f"adaptive rounds: {rule.min} to {rule.max} per cell, the number fixed once after the "
        f"first {rule.min} rounds (the pilot) as the fewest that would bring the interval of "
        f"every comparison's % difference within +-{rule.target_halfwidth_pct:g}%, planned on "
        f"the pilot's pooled spread with the part due to the arms' difference counted "
        f"{DIFFERENCE_WEIGHT:g} times; no later round and never the p-value is looked at"
    )
