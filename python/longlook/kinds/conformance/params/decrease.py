"""Multiplicative decrease on a loss: the window a loss episode cuts to over the window just
before it (loss_events), the median over episodes, against the algorithm's beta: Cubic 0.7
(RFC 9438 §4.6; Linux uses 717/1024), Reno/NewReno 0.5 (RFC 5681, RFC 9002 §7.3.2).
BBR has no multiplicative decrease: not measurable."""

from __future__ import annotations

import numpy as np

from .result import ParamResult, judged, not_measurable, within
from .trace import ConnTrace, loss_events

PARAMETER = "multiplicative_decrease"
UNIT = "ratio"
BETA = {"cubic": 0.7, "reno": 0.5, "newreno": 0.5}
TOLERANCE_ABS = 0.05
TOLERANCE = f"median within ±{TOLERANCE_ABS} of beta"


def bound(beta: float, tcp: bool = False) -> tuple[float, float]:
    """What conforms: beta +- TOLERANCE_ABS."""
    return beta - TOLERANCE_ABS, beta + TOLERANCE_ABS


def multiplicative_decrease(tr: ConnTrace, cc: str) -> ParamResult:
    beta = BETA.get(cc)
    if beta is None:
        return not_measurable(PARAMETER, UNIT, f"{cc} has no multiplicative decrease")
    ratios = np.array([after / before for _, before, after in loss_events(tr) if before > 0])
    # a window cut to the minimum (persistent congestion, an RTO) is not the loss response
    ratios = ratios[ratios > 0.25]
    if ratios.size == 0:
        return not_measurable(PARAMETER, UNIT, "no loss episode in the log", beta, TOLERANCE)
    med = float(np.median(ratios))
    return judged(
        PARAMETER,
        med,
        beta,
        UNIT,
        within(med, bound(beta)),
        TOLERANCE,
        f"{ratios.size} episodes, ratios {ratios.min():.2f}-{ratios.max():.2f}",
    )
