"""`Ate` (§7 by experiment): the average treatment effect of a randomised QUIC break,
analyses.fallback.intervention's (Welch's interval, missing sessions at their worst).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from ....core.verdicts import verdict_producer
from ....errors import LonglookError
from .. import needed
from ..measured import Measured
from ..outcome import FAILS, HOLDS, UNCLEAR, Outcome, needs_text, not_run, p_text


@verdict_producer(
    "reproduce.ate",
    "the ATE of a randomised QUIC break on a metric is shown on the claimed side (holds) or the other (does not hold)",
)
@dataclass(frozen=True)
class Ate:
    """Causality by experiment (a video scenario with [intervention]): the average treatment
    effect of the randomised QUIC break (and the fallback it forces) on `metric`, from
    analyses.fallback.intervention (difference in means, Welch's interval, missing sessions
    at their worst): holds when the whole interval lies on the claimed side of 0, does not
    hold when it lies on the other."""

    metric: str = "qoe"
    expect: str = "lower"  # the treated sessions' metric is lower ("lower") or higher

    def reads(self) -> str:
        return (
            f"{self.metric}: mean(treated) - mean(control) of the QUIC-enabled sessions, Welch interval; "
            f"holds if wholly {'below' if self.expect == 'lower' else 'above'} 0"
        )

    def claim_cells(self, m: Measured) -> list[str]:
        return list(m.cells["cell_id"])

    def evaluate(self, m: Measured) -> Outcome:
        from ...fallback.intervention import analyze_intervention

        if m.directory is None:
            return not_run("needs an experiment directory")
        try:
            res = analyze_intervention(m.directory, include_flagged=not m.exclude_flagged)
        except LonglookError as e:
            return Outcome(UNCLEAR, number="no interventional sessions", detail=e.message)
        return self.judge(res.effects, res.sessions, res.summary)

    def judge(self, effects: pd.DataFrame, sessions: pd.DataFrame, summary: dict) -> Outcome:
        """The claim from analyze_intervention's effects (its "all cells" row of `metric`),
        sessions and summary."""
        r = effects[(effects["scope"] == "all cells") & (effects["metric"] == self.metric)].iloc[0]
        n = f"{r.n_treated}/{r.n_control}"
        if math.isnan(r.ci_low) or math.isnan(r.ci_high):
            return Outcome(UNCLEAR, number=r.verdict, n=n, detail=r.why or "no interval")
        level = (1 - float(r.confidence)) / 2
        sign = -1 if self.expect == "lower" else 1
        verdict = (
            HOLDS
            if sign * r.ci_low > 0 and sign * r.ci_high > 0
            else FAILS
            if sign * r.ci_low < 0 and sign * r.ci_high < 0
            else UNCLEAR
        )
        # Welch's p is two-sided and symmetric: the claimed side's one-sided p
        p = float(r.p) / 2 if sign * r.ate > 0 else 1 - float(r.p) / 2
        needs = ""
        if verdict == UNCLEAR:
            x = sessions[self.metric].astype(float) if self.metric in sessions else pd.Series(dtype=float)
            treated = sessions["treated"].astype(bool) if "treated" in sessions else pd.Series(dtype=bool)
            t, c = x[treated].dropna(), x[~treated].dropna()
            sd = math.sqrt((t.var() + c.var()) / 2) if len(t) > 1 and len(c) > 1 else math.nan
            effect = needed.ATE_RESOLUTION_SD * sd
            k = (
                needed.difference_sessions(len(t), float(t.std()), len(c), float(c.std()), effect, level=level)
                if not math.isnan(sd)
                else None
            )
            needs = needs_text(
                [k],
                1,
                f"sessions per arm (80% power if the ATE is {effect:.3g}, half a session sd)",
                "not estimable (fewer than 2 sessions per arm or no spread)",
            )
        compliance = summary.get("compliance", {})
        detail = (
            f"{summary.get('estimator', 'difference in means, Welch interval')}; treated fell back "
            f"{compliance.get('treated_fell_back', '?')}/{summary.get('treated', '?')}, control "
            f"{compliance.get('control_fell_back', '?')}/{summary.get('control', '?')}; beside Granger: "
            f"{summary.get('agreement', '-')}; p: Welch's one-sided p on the claimed side (holds when below "
            f"{level:g})"
        )
        return Outcome(
            verdict,
            number=f"ATE {r.ate:+.3g} [{r.ci_low:.3g}, {r.ci_high:.3g}] ({r.mean_treated:.3g} vs {r.mean_control:.3g})",
            n=n,
            p=p,
            p_text=p_text(p),
            needs=needs,
            detail=detail,
        )
