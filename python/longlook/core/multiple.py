"""Holm's step-down correction: the one place a family of p-values is adjusted.

Every verdict producer that draws several verdicts from one data set (the cells of a
comparison, the items of a states diff, the gate's metric and completion tests, a
conformance run's shares, the proxy section's effects, Granger over B and S) adjusts its
family here, so "Holm over N tests" means the same thing everywhere.

Written by hand (a few lines) rather than statsmodels' multipletests(method="holm"):
that function runs gc.collect() on every call, 0.1 s each, too slow for a report or a
simulation with thousands of families; tests check that both agree.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np


def holm(p: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values, in the input's order. nan entries (no test) stay
    nan and are not counted in the family."""
    p = np.asarray(p, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = ~np.isnan(p)
    m = int(ok.sum())
    if not m:
        return out
    q = p[ok]
    order = np.argsort(q, kind="stable")
    adjusted = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * q[order]))
    back = np.empty(m)
    back[order] = adjusted
    out[ok] = back
    return out


def holm_rows(p: np.ndarray) -> np.ndarray:
    """Holm over the last axis of a (trials, family) array, every entry a p-value: the
    vectorised form simulations use."""
    p = np.asarray(p, dtype=float)
    m = p.shape[-1]
    order = np.argsort(p, axis=-1, kind="stable")
    sorted_p = np.take_along_axis(p, order, axis=-1)
    adjusted = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * sorted_p, axis=-1))
    out = np.empty_like(adjusted)
    np.put_along_axis(out, order, adjusted, axis=-1)
    return out
