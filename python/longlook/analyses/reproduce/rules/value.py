"""`Value`: one arm's mean against a stated range, on its t-interval (see the package's
docstring)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
from scipy import stats as sps

from ....core.stats import (
    with_failures_as_outcomes,
)
from ....core.status import counted_runs
from ....core.verdicts import verdict_producer
from ...fallback.from_store import SETTLED
from .. import needed
from ..measured import Measured
from ..outcome import (
    FAILS,
    HOLDS,
    UNCLEAR,
    Outcome,
    Where,
    name,
    needs_text,
    not_run,
    num,
    p_text,
    where_text,
)


def settled_as_asked(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs with each protocol_mismatch counted as the protocol it asked for: a session of
    a QUIC-enabled browser that used TCP as well is data about that browser, not a wrong run."""
    settled = runs["status"].isin(SETTLED)
    return runs.assign(
        status=runs["status"].where(~settled, "ok"),
        protocol_negotiated=runs["protocol_negotiated"].where(~settled, runs["protocol_requested"]),
    )


@verdict_producer(
    "reproduce.value", "a stated range holds / does not hold: one arm's mean inside [low, high], on its t-interval"
)
@dataclass(frozen=True)
class Value:
    """One arm's mean of a metric in the selected cells (pooled), with its t-interval,
    against a range the paper states (Langley §3.8: TCP starts after a wait of up to
    300 ms): holds when the whole interval lies inside [at_least, at_most], does not hold
    when it lies wholly outside, else inconclusive. A round whose run failed or timed out
    leaves it inconclusive (the survivors' mean does not bound the arm's) unless the scenario
    gives failures a value. The t-interval is Student's: on right-skewed values its upper
    end errs more often than (1 - confidence) / 2 (simulated, 250 ms + lognormal, 3-30 runs:
    3.1-3.3% at sigma 0.05-0.2, 5% at 0.2-0.5 for a nominal 2.5%)."""

    arm: str
    metric: str
    at_least: float
    at_most: float
    where: Where = field(default_factory=dict)
    unit: str = "ms"
    # a QUIC-enabled session that ended on TCP too, or over both ("mixed"; protocol_mismatch):
    # what a claim on how such a browser uses TCP and QUIC is about (Chaudhary)
    mixed_counts: bool = False

    def reads(self) -> str:
        cells = ", ".join(f"{k} {where_text(v)}" for k, v in self.where.items()) or "all cells"
        return (
            f"{self.metric} of {name(self.arm)}; {cells}; holds if its 95% t-interval lies within "
            f"{self.at_least:g}..{self.at_most:g} {self.unit}"
        )

    def claim_cells(self, m: Measured) -> list[str]:
        return m.select(self.where)

    def evaluate(self, m: Measured) -> Outcome:
        cells = m.select(self.where)
        if not cells:
            return not_run("none of the claim's cells is in this experiment (reduced budget?)")
        if self.mixed_counts and not m.runs.empty:
            m = replace(m, runs=settled_as_asked(m.runs))
        have = self.metric in m.runs if not m.runs.empty else False
        good = (
            counted_runs(m.runs, self.metric if have else None, exclude_flagged=m.exclude_flagged)
            if not m.runs.empty
            else m.runs
        )
        mine = lambda f: f[f["cell_id"].isin(cells) & (f["arm"] == self.arm)]  # noqa: E731
        x = mine(good)[self.metric].dropna().to_numpy(float) if have and not good.empty else np.array([])
        # the rounds whose last attempt failed or timed out: a value the survivors lack
        lost = 0
        if have and not m.runs.empty:
            fail = m.failure_values.get(self.metric)
            full = mine(with_failures_as_outcomes(m.runs, good, self.metric, math.nan if fail is None else fail))
            extra = full[self.metric].to_numpy(float)[len(mine(good)) :]
            if fail is not None:
                x = np.r_[x, extra]
            else:
                lost = len(extra)
        if len(x) < 2:
            return Outcome(UNCLEAR, number=f"{len(x)} counted run(s)", n=str(len(x)), detail="insufficient data")
        conf = m.statistics.confidence
        level = (1 - conf) / 2
        n, mean = len(x), float(x.mean())
        if np.ptp(x) == 0:
            lo = hi = mean
            p = 0.0 if self.at_least <= mean <= self.at_most else 1.0
        else:
            lo, hi = sps.ttest_1samp(x, 0).confidence_interval(conf)
            se = float(x.std(ddof=1)) / math.sqrt(n)
            p = max(
                float(sps.t.sf((mean - self.at_least) / se, n - 1)), float(sps.t.cdf((mean - self.at_most) / se, n - 1))
            )
        inside = self.at_least <= lo and hi <= self.at_most
        outside = hi < self.at_least or lo > self.at_most
        verdict = HOLDS if inside else FAILS if outside else UNCLEAR
        detail = (
            f"mean with its {conf:.0%} t-interval over {len(cells)} cell(s); holds when the whole interval is "
            f"inside {self.at_least:g}..{self.at_most:g} {self.unit}; p: the larger of the one-sided t tests "
            f"against the two ends (holds when below {level:g})"
        )
        if lost:
            verdict = UNCLEAR
            detail += (
                f"; {lost} run(s) failed or timed out: the survivors' mean does not bound the arm's, so no "
                "verdict is drawn (a scenario that counts failures as outcomes gives them a value)"
            )
        needs = ""
        if verdict == UNCLEAR and np.ptp(x) > 0 and not lost:
            width = needed.RATIO_RESOLUTION
            target = (
                (self.at_least + self.at_most) / 2
                if self.at_least <= mean <= self.at_most
                else self.at_least - width * abs(self.at_least)
                if mean < self.at_least
                else self.at_most + width * abs(self.at_most)
            )
            k = needed.value_runs(n, float(x.std(ddof=1)), self.at_least, self.at_most, target, level=level)
            needs = needs_text(
                [k],
                1,
                f"runs (80% power if the true mean is {num(target)} {self.unit})",
                "not estimable (beyond 100,000 runs)",
            )
        return Outcome(
            verdict,
            number=f"{num(mean)} {self.unit} [{num(lo)}, {num(hi)}]",
            n=str(n),
            needs=needs,
            p=p,
            p_text=p_text(p),
            detail=detail,
            cells=[{"cell_id": c} for c in cells],
            against=cells[:1] if verdict == FAILS else [],
        )
