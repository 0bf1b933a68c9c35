"""KPSS stationarity and the paper's differencing rule: test every series; if any is not
stationary, difference all of them and test again, up to second differences; still not
stationary = unsuitable for Granger (Chaudhary §6.2)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from statsmodels.tools.sm_exceptions import InterpolationWarning
from statsmodels.tsa.stattools import kpss


@dataclass(frozen=True)
class Stationarity:
    order: int | None  # differences applied (0, 1, 2); None = unsuitable
    data: pd.DataFrame | None  # the (differenced) series, when suitable
    kpss_p: dict[int, dict[str, float]]  # per order tried, per series


def kpss_p(x: np.ndarray) -> float:
    """KPSS p-value (level stationarity, automatic lags). statsmodels interpolates in
    [0.01, 0.1] and warns outside; the bound is what we want. A constant is stationary."""
    x = np.asarray(x, dtype=float)
    if np.ptp(x) == 0:
        return 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InterpolationWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            return _kpss(x, "auto")
        except (OverflowError, ZeroDivisionError, ValueError):
            # Hobijn's automatic lag divides by the residuals' autocovariance sum, which is 0
            # for a mostly-zero series (a stall's second difference with 3 non-zero values):
            # Schwert's rule instead, which needs no estimate
            return _kpss(x, "legacy")


def _kpss(x: np.ndarray, nlags: str) -> float:
    try:  # statsmodels >= 0.15 asks to choose the return type; 0.14 has no such argument
        return float(kpss(x, regression="c", nlags=nlags, result_object=False)[1])
    except TypeError:
        return float(kpss(x, regression="c", nlags=nlags)[1])


def make_stationary(frame: pd.DataFrame, alpha: float = 0.05, max_order: int = 2) -> Stationarity:
    """Difference every column together until KPSS keeps stationarity for all (p >= alpha)."""
    tried: dict[int, dict[str, float]] = {}
    data = frame
    for order in range(max_order + 1):
        if order:
            data = data.diff().iloc[1:]
        tried[order] = {c: kpss_p(data[c].to_numpy()) for c in data.columns}
        if all(p >= alpha for p in tried[order].values()):
            return Stationarity(order, data, tried)
    return Stationarity(None, None, tried)
