"""Null calibration of the regression gate (`longlook compare BASE CAND`,
analyses/compare/change.py): with BASE and CAND the same build on the same testbed, how
often does the gate fail (any row a regression), and how often does it claim an improvement?

The data are what a page-load experiment gives the gate: per cell and arm, 20 rounds of
lognormal load times (sigma 0.5, each cell and arm its own median), and runs that fail:
a load fails when it is slower than the population's 80% or 90% quantile (each side then
completes 80% or 90% of its rounds on average, its slowest loads missing). BASE and CAND
are drawn from the same process. Each trial runs `judge_changes`, the judging that
`compare_experiments` runs once it has read each side's counted values and completions
(reading two stores per trial would make this a matter of hours); tests/unit/analyses/test_compare.py
runs the command itself on stores with failed rounds.

Checked against alpha = 0.01 (BASE's default, with Holm as the command runs it): the gate
fails (any regression: a metric row or a completion row), and any improvement, each at most
alpha. The old rule, Fisher at 0.05 per cell x arm outside the family, failed the gate
23.9% (12 cells, 80%), 13.3% (12 cells, 90%) and 35-56% (36 cells) of the time.
"""

from __future__ import annotations

import numpy as np
import pytest

from longlook.analyses.compare.change import ArmCompletion, MetricInput, Settings, Verdict, judge_changes
from longlook.analyses.compare.matching import CellPair
from longlook.core.kind import Metric
from longlook.core.stats import Completion

from .harness import calibrates, check_rate

ALPHA = 0.01
PRODUCER = "compare.gate"
ROUNDS = 20
PLT = Metric("plt_ms", "ms")
SETTINGS = Settings(alpha=ALPHA, test="welch", holm=True, threshold_pct=2.0, confidence=0.95, survivorship_alpha=0.05)
Z = {0.8: 0.8416212335729143, 0.9: 1.2815515655446004}  # standard normal quantiles


def _side(rng, mu: float, completion: float) -> tuple[np.ndarray, Completion]:
    latent = rng.normal(mu, 0.5, ROUNDS)
    done = latent <= mu + 0.5 * Z[completion]  # the slowest loads time out
    return np.exp(latent[done]), Completion(int(done.sum()), ROUNDS)


def _trial(rng, cells: int, completion: float) -> list[Verdict]:
    inputs, completions = [], []
    for i in range(cells):
        pair = CellPair(f"c{i}", f"c{i}", i, {"cell": i})
        for arm in ("h3", "h2"):
            mu = 6.0 + 0.1 * i + (0.2 if arm == "h2" else 0.0)
            (xc, dc), (xb, db) = _side(rng, mu, completion), _side(rng, mu, completion)
            inputs.append(MetricInput(pair, arm, PLT, xc, xb, dc, db))
            completions.append(ArmCompletion(pair, arm, dc, db))
    return [c.verdict for c in judge_changes(inputs, completions, SETTINGS)]


@calibrates(PRODUCER)
@pytest.mark.parametrize("cells, completion, trials", [(12, 0.8, 300), (12, 0.9, 300), (36, 0.8, 120)])
def test_identical_builds_fail_the_gate_at_most_alpha(cells, completion, trials):
    rng = np.random.default_rng(int(1000 * completion) + cells)
    results = [_trial(rng, cells, completion) for _ in range(trials)]
    what = f"{cells} cells x 2 arms, {ROUNDS} rounds, {completion:.0%} completion"
    check_rate(
        PRODUCER, f"gate fails: any regression ({what})", sum(Verdict.REGRESSION in v for v in results), trials, ALPHA
    )
    check_rate(PRODUCER, f"any improvement ({what})", sum(Verdict.IMPROVEMENT in v for v in results), trials, ALPHA)
