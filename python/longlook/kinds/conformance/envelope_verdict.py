"""Does a stack's envelope differ from the kernel's by more than the kernel's differs from
itself? An overlap has no fixed "identical" value: two runs of one sender overlap by 0.76
(5-95% 0.54-0.91) at conformance-quick's ~10 bins, 0.88 at 20, 0.91 at 200. So the stack's
overlap with the kernel is read beside the kernel's own round-to-round overlap, and the
verdict comes from the difference between the two:

    within  = mean overlap of two kernel runs (pairs of rounds),
    between = mean overlap of a stack run with a kernel run (every pair),
    difference = between - within;

"differs" when the difference is below what relabelling the runs gives: a permutation test
over which runs are the kernel's (every labelling when there are at most MAX_LABELLINGS,
else that many drawn with a fixed seed), one-sided, at the scenario's alpha (Holm over the
cells where the scenario asks for it, aggregate.envelope_verdicts). Under an identical
stack every run is exchangeable, so the test's false "differs" rate is at most alpha whatever
an overlap's distribution, bin count or envelope shape; the price is that few runs cannot
reach a small p: 3 stack and 3 kernel runs have 20 labellings (smallest p 0.05), 4 and 4
have 70 (0.014), 5 and 5 have 252 (0.004). Otherwise "inconclusive" ("not measurable"
with fewer than two kernel runs or one stack run, or an envelope without area).

Calibration (tests/calibration/test_conformance.py): envelopes drawn by one process for the
stack and the kernel (a slow-start ramp and a queue sawtooth with random phase, 10 and 20
bins, 4-5 rounds a side): "differs" in 3.3% of 300 trials at alpha 0.05.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from ...core.verdicts import verdict_producer
from .envelope import overlap

DIFFERS, INCONCLUSIVE, NOT_MEASURABLE = "differs", "inconclusive", "not measurable"
MAX_LABELLINGS = 2000


@dataclass(frozen=True)
class EnvelopeTest:
    between: float  # mean overlap, stack run x kernel run
    within: float  # mean overlap, kernel run x another kernel run
    difference: float  # between - within
    p_value: float
    smallest_p: float  # the smallest p these runs can give
    verdict: str
    n_stack: int
    n_kernel: int
    reason: str = ""


def overlap_matrix(cores: list[np.ndarray]) -> np.ndarray:
    """Overlap of every pair of runs' envelope cores (symmetric; nan on the diagonal and
    where a hull has no area)."""
    n = len(cores)
    m = np.full((n, n), np.nan)
    for i, j in itertools.combinations(range(n), 2):
        m[i, j] = m[j, i] = overlap(cores[i], cores[j])
    return m


def _labellings(n: int, k: int, observed: np.ndarray, seed: int) -> tuple[np.ndarray, bool]:
    """(rows of 0/1 kernel labels, exact): every choice of k kernel runs of n, or
    MAX_LABELLINGS drawn at random with the observed one first."""
    total = math.comb(n, k)
    if total <= MAX_LABELLINGS:
        g = np.zeros((total, n))
        for row, chosen in enumerate(itertools.combinations(range(n), k)):
            g[row, list(chosen)] = 1.0
        return g, True
    rng = np.random.default_rng(seed)
    g = np.zeros((MAX_LABELLINGS, n))
    order = np.argsort(rng.random((MAX_LABELLINGS, n)), axis=1)[:, :k]
    np.put_along_axis(g, order, 1.0, axis=1)
    return np.vstack([observed[None, :], g]), False


def _difference(g: np.ndarray, values: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """between - within for each labelling row of g (1 = kernel)."""
    h = 1.0 - g
    within = np.einsum("li,ij,lj->l", g, values, g) / np.einsum("li,ij,lj->l", g, valid, g)
    between = np.einsum("li,ij,lj->l", g, values, h) / np.einsum("li,ij,lj->l", g, valid, h)
    return between - within


@verdict_producer(
    "conformance.envelope",
    "a stack's envelope differs from the kernel's (beyond the kernel's own round-to-round overlap)",
)
def envelope_test(matrix: np.ndarray, is_kernel, *, alpha: float = 0.01, seed: int = 0) -> EnvelopeTest:
    """The module's test on an overlap_matrix of the cell's runs, `is_kernel` marking the
    kernel's."""
    kernel = np.asarray(is_kernel, dtype=bool)
    n, k = len(kernel), int(kernel.sum())
    m = np.asarray(matrix, dtype=float)
    valid = np.isfinite(m) & ~np.eye(n, dtype=bool)
    values = np.where(valid, m, 0.0)
    nan = math.nan
    if k < 2 or n - k < 1:
        return EnvelopeTest(
            nan, nan, nan, nan, nan, NOT_MEASURABLE, n - k, k, "fewer than two kernel runs or no stack run"
        )
    observed = kernel.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        obs = _difference(observed[None, :], values, valid.astype(float))[0]
        g, exact = _labellings(n, k, observed, seed)
        diffs = _difference(g, values, valid.astype(float))
    w = values[np.ix_(kernel, kernel)].sum() / max(valid[np.ix_(kernel, kernel)].sum(), 1)
    b = values[np.ix_(~kernel, kernel)].sum() / max(valid[np.ix_(~kernel, kernel)].sum(), 1)
    smallest = 1.0 / len(g)
    if not math.isfinite(obs):
        return EnvelopeTest(nan, nan, nan, nan, smallest, NOT_MEASURABLE, n - k, k, "an envelope without area")
    # a labelling without a finite difference counts against "differs"
    as_low = np.sum(~(diffs > obs + 1e-12))
    p = float(as_low / len(g))
    verdict = DIFFERS if p < alpha else INCONCLUSIVE
    reason = (
        ""
        if verdict == DIFFERS or smallest < alpha
        else (f"{n - k} stack and {k} kernel runs give at best p = {smallest:.2g}")
    )
    if not exact:
        reason = (reason + "; " if reason else "") + f"{len(g) - 1} random labellings"
    return EnvelopeTest(float(b), float(w), float(b - w), p, smallest, verdict, n - k, k, reason)
