"""Granger causality cause -> effect: the lag order an information criterion picks for the
two-variable VAR (statsmodels `VAR.select_order`), then the F-test of the cause's lags in the
effect's own regression (statsmodels `grangercausalitytests`, its ssr F-test: F(p, df_resid)).
`VAR.test_causality` is not used: its F has 2 * df_resid denominator degrees of freedom (both
equations' residuals), which makes p slightly too small for a one-equation test."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from statsmodels.tools.sm_exceptions import InfeasibleTestError
from statsmodels.tsa.api import VAR
from statsmodels.tsa.stattools import grangercausalitytests


@dataclass(frozen=True)
class GrangerResult:
    p_value: float  # NaN when not testable
    lag: int | None
    f_stat: float
    reason: str | None  # why not testable


def granger_test(cause: np.ndarray, effect: np.ndarray, *, max_lag: int | None = None,
                 criterion: str = "aic") -> GrangerResult:
    """H0: `cause` does not Granger-cause `effect`. Lag = the criterion's choice among
    1..max_lag (0 is raised to 1: the test needs a lag); default max_lag = min(20, n/5)."""
    cause = np.asarray(cause, dtype=float)
    effect = np.asarray(effect, dtype=float)
    n = len(cause)
    if np.ptp(cause) == 0 or np.ptp(effect) == 0:
        return GrangerResult(float("nan"), None, float("nan"), "a series is constant")
    if max_lag is None:
        max_lag = min(20, n // 5)
    if max_lag < 1 or n < 10:
        return GrangerResult(float("nan"), None, float("nan"), f"too short ({n} samples)")
    data = pd.DataFrame({"cause": cause, "effect": effect})
    model = VAR(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # statsmodels' own chatter about frequencies
        try:
            lag = max(1, int(model.select_order(max_lag).selected_orders[criterion]))
            # column 2 Granger-causes column 1: [effect, cause]
            f, p, _, _ = grangercausalitytests(data[["effect", "cause"]], [lag])[lag][0]["ssr_ftest"]
        except (np.linalg.LinAlgError, ValueError, InfeasibleTestError) as e:  # e.g. a perfect fit
            return GrangerResult(float("nan"), None, float("nan"), f"VAR failed: {e}")
    return GrangerResult(float(p), lag, float(f), None)
