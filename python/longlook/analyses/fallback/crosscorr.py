"""Cross-correlation of F with an effect series, at non-negative lags (the effect follows
the fallback), and the lag of its maximum (Chaudhary §6.1)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from statsmodels.tsa.stattools import ccf


@dataclass(frozen=True)
class CrossCorrelation:
    max_corr: float  # NaN when either series is constant
    lag: int | None  # in grid steps
    corr: np.ndarray  # corr[k] = corr(effect[t + k], cause[t])


def cross_correlation(cause: np.ndarray, effect: np.ndarray, max_lag: int | None = None) -> CrossCorrelation:
    """Pearson correlation of effect[t + k] with cause[t] for k = 0..max_lag (default:
    a quarter of the series, at most 250 steps, the paper's range)."""
    cause = np.asarray(cause, dtype=float)
    effect = np.asarray(effect, dtype=float)
    n = len(cause)
    if n != len(effect):
        raise ValueError(f"cause has {n} samples, effect {len(effect)}")
    if n < 3 or np.std(cause) == 0 or np.std(effect) == 0:
        return CrossCorrelation(float("nan"), None, np.array([]))
    if max_lag is None:
        max_lag = min(250, max(1, n // 4))
    corr = ccf(effect, cause, adjusted=False, nlags=min(max_lag, n - 1) + 1)
    k = int(np.nanargmax(corr))
    return CrossCorrelation(float(corr[k]), k, corr)
