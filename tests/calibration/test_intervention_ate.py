"""Null calibration of the interventional ATE (analyses/fallback/intervention.py: ate_rows):
when the randomised break changes nothing, how often is the ATE's interval wholly on one
side of 0, or the verdict "treated better" / "treated worse"?

Sessions as a video intervention experiment gives them to ate_rows (one row per session
tried, as analyze_intervention builds them): half treated, half control, the same process
in both: a session's badness z ~ N(0, 1) sets its QoE (1 - 0.3 z, plus noise), its mean
bitrate (lognormal, lower when z is high) and its stall time (0 unless z > 0.5, then
lognormal: zero-inflated and skewed). The worst quarter of the treated sessions (highest z)
fail: their outcomes are missing (nan), as a dash.js session that never reached its end.
8 and 16 sessions per arm, and a null without failures.

Checked per outcome and side: the 95% interval wholly above 0, wholly below 0, each at
most 0.025; the verdict at the scenario's alpha 0.05 ("treated better", "treated
worse"), each at most 0.025. Before the completions were counted, the interval of the QoE
ATE was wholly above 0 in 11% (8 per arm) and 22% (16 per arm) of these experiments.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from longlook.analyses.fallback.intervention import ate_rows

from .harness import calibrates, check_rate

ALPHA = 0.05
CONFIDENCE = 0.95
PRODUCER = "fallback.intervention_ate"


def _sessions(rng, per_arm: int, failing: float) -> pd.DataFrame:
    n = 2 * per_arm
    z = rng.normal(size=n)
    treated = np.r_[np.ones(per_arm, dtype=bool), np.zeros(per_arm, dtype=bool)]
    s = pd.DataFrame(
        {
            "treated": treated,
            "qoe": 1.0 - 0.3 * z + rng.normal(0, 0.1, n),
            "avg_bitrate_mbit": np.exp(1.0 - 0.2 * z + rng.normal(0, 0.1, n)),
            "stall_s": np.where(z > 0.5, rng.lognormal(0.5 * z, 0.5), 0.0),
        }
    )
    lost = int(round(failing * per_arm))
    if lost:
        worst = np.argsort(-z[:per_arm])[:lost]  # the treated sessions with the highest z
        s.loc[worst, ["qoe", "avg_bitrate_mbit", "stall_s"]] = np.nan
    return s


@calibrates(PRODUCER)
@pytest.mark.parametrize("per_arm, failing, trials", [(8, 0.25, 800), (16, 0.25, 500), (8, 0.0, 600)])
def test_the_interval_and_the_verdict_say_a_side_at_most_their_level(per_arm, failing, trials):
    rng = np.random.default_rng(400 + per_arm + int(100 * failing))
    rows = [
        r for _ in range(trials) for r in ate_rows(_sessions(rng, per_arm, failing), alpha=ALPHA, confidence=CONFIDENCE)
    ]
    what = f"{per_arm} sessions per arm, worst {failing:.0%} of treated failing"
    for metric in ("qoe", "avg_bitrate_mbit", "stall_s"):
        mine = [r for r in rows if r["metric"] == metric]
        assert len(mine) == trials
        above = sum(r["ci_low"] > 0 for r in mine)  # nan compares False: no interval, no claim
        below = sum(r["ci_high"] < 0 for r in mine)
        check_rate(PRODUCER, f"{metric}: interval wholly above 0 ({what})", above, trials, (1 - CONFIDENCE) / 2)
        check_rate(PRODUCER, f"{metric}: interval wholly below 0 ({what})", below, trials, (1 - CONFIDENCE) / 2)
        for side in ("treated better", "treated worse"):
            check_rate(
                PRODUCER, f"{metric}: {side} ({what})", sum(r["verdict"] == side for r in mine), trials, ALPHA / 2
            )
