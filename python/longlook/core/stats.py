"""Per-cell comparison of two arms on any metric of a kind, as the papers report them.

For a metric where lower is better (page load time), % difference = (mean_B - mean_A) /
mean_B * 100 with B the baseline (TCP in the papers), so a positive number means A (QUIC) is
better; where higher is better (throughput, QoE), (mean_A - mean_B) / mean_B * 100, positive
again meaning A is better. A difference counts only when the test says so at p < alpha;
otherwise the cell is "inconclusive", and with fewer than two runs per side it is
"insufficient data". Only the runs that count (core.status) are used: a QUIC run that fell
back to TCP is never counted as QUIC, and a run whose path audit failed is left out.
"""

from __future__ import annotations

import hashlib
import math
import warnings
from dataclasses import dataclass, replace
from enum import Enum
from typing import Iterable, Literal, Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

from .status import counted_runs

Test = Literal["welch", "mannwhitney"]
MIN_N = 2  # per side; below it no test is possible

# Display names for the protocol labels of the papers.
DISPLAY_NAMES = {"h3": "QUIC", "h2": "TCP"}


def display_name(label: str) -> str:
    return DISPLAY_NAMES.get(label, label)


class Verdict(str, Enum):
    # "faster" for the papers' time metrics; for any metric it means "better"
    A_FASTER = "a_faster"
    B_FASTER = "b_faster"
    INCONCLUSIVE = "inconclusive"
    INSUFFICIENT = "insufficient_data"


@dataclass(frozen=True)
class SampleSummary:
    label: str
    n: int
    mean: float
    median: float
    sd: float

    @classmethod
    def of(cls, label: str, x: np.ndarray) -> "SampleSummary":
        n = len(x)
        return cls(label=label, n=n,
                   mean=float(np.mean(x)) if n else math.nan,
                   median=float(np.median(x)) if n else math.nan,
                   sd=float(np.std(x, ddof=1)) if n > 1 else math.nan)


@dataclass(frozen=True)
class CellComparison:
    """A vs B in one cell. `p_value` is the raw test p; `p_adjusted` equals it unless Holm
    correction was applied across cells; the verdict uses `p_adjusted`."""

    cell_id: str
    a: SampleSummary
    b: SampleSummary
    percent_difference: float
    ci_low: float
    ci_high: float
    confidence: float
    test: Test
    p_value: float
    p_adjusted: float
    alpha: float
    holm: bool
    verdict: Verdict
    metric: str = "plt_ms"
    lower_is_better: bool = True
    better_word: str = "faster"  # "better" for metrics that are not times

    @property
    def pair(self) -> tuple[str, str]:
        return (self.a.label, self.b.label)

    @property
    def verdict_text(self) -> str:
        if self.verdict is Verdict.A_FASTER:
            return f"{display_name(self.a.label)} {self.better_word}"
        if self.verdict is Verdict.B_FASTER:
            return f"{display_name(self.b.label)} {self.better_word}"
        return "insufficient data" if self.verdict is Verdict.INSUFFICIENT else "inconclusive"

    def as_row(self) -> dict:
        return {"cell_id": self.cell_id, "a": self.a.label, "b": self.b.label,
                "n_a": self.a.n, "n_b": self.b.n, "mean_a": self.a.mean, "mean_b": self.b.mean,
                "median_a": self.a.median, "median_b": self.b.median,
                "sd_a": self.a.sd, "sd_b": self.b.sd,
                "percent_difference": self.percent_difference,
                "ci_low": self.ci_low, "ci_high": self.ci_high, "test": self.test,
                "p_value": self.p_value, "p_adjusted": self.p_adjusted, "alpha": self.alpha,
                "holm": self.holm, "verdict": self.verdict.value,
                "verdict_text": self.verdict_text, "metric": self.metric}


def percent_difference(a: Sequence[float], b: Sequence[float], lower_is_better: bool = True) -> float:
    """(mean_B - mean_A) / |mean_B| * 100 for lower-is-better metrics, the opposite sign for
    higher-is-better ones: positive when A is better. |mean_B| keeps the sign right for
    metrics that can be negative (QoE); with mean_B = 0 (no stall on either side) there is
    no percentage (nan), while the test still runs."""
    d = float(_pct_diff_stat(np.asarray(a, dtype=float), np.asarray(b, dtype=float)))
    return d if lower_is_better else -d


def _pct_diff_stat(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    mb = np.mean(b, axis=axis)
    with np.errstate(divide="ignore", invalid="ignore"):
        d = (mb - np.mean(a, axis=axis)) / np.abs(mb) * 100.0
    return np.where(mb == 0, np.nan, d)


def _pct_diff_higher_better(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    return -_pct_diff_stat(a, b, axis)


def _test_p(a: np.ndarray, b: np.ndarray, test: Test) -> float:
    with warnings.catch_warnings():
        # identical samples make scipy warn and return nan; nan -> inconclusive below
        warnings.simplefilter("ignore", RuntimeWarning)
        if test == "welch":
            p = sps.ttest_ind(a, b, equal_var=False).pvalue
        elif test == "mannwhitney":
            p = sps.mannwhitneyu(a, b, alternative="two-sided").pvalue
        else:
            raise ValueError(f"unknown test {test!r}; known: welch, mannwhitney")
    return float(p)


def _bootstrap_ci(a: np.ndarray, b: np.ndarray, confidence: float, resamples: int,
                  seed: int, lower_is_better: bool = True) -> tuple[float, float]:
    """Bias-corrected and accelerated (BCa) bootstrap CI of the % difference; plain percentile when BCa
    is degenerate (tiny or constant samples)."""
    for method in ("BCa", "percentile"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            stat = _pct_diff_stat if lower_is_better else _pct_diff_higher_better
            res = sps.bootstrap((a, b), stat, vectorized=True, paired=False,
                                confidence_level=confidence, n_resamples=resamples,
                                method=method, rng=np.random.default_rng(seed))
        lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
        if not (math.isnan(lo) or math.isnan(hi)):
            return lo, hi
    return math.nan, math.nan


def _verdict(a: np.ndarray, b: np.ndarray, p: float, alpha: float, test: Test,
             lower_is_better: bool = True) -> Verdict:
    if math.isnan(p) or p >= alpha:
        return Verdict.INCONCLUSIVE
    # direction of the effect the test looked at: means for Welch, medians for Mann-Whitney
    centre = np.median if test == "mannwhitney" else np.mean
    ca, cb = float(centre(a)), float(centre(b))
    if ca == cb:
        ca, cb = float(np.mean(a)), float(np.mean(b))
    if ca == cb:
        return Verdict.INCONCLUSIVE
    return Verdict.A_FASTER if (ca < cb) == lower_is_better else Verdict.B_FASTER


def cell_seed(seed: int, cell_id: str) -> int:
    """A per-cell bootstrap seed: results do not depend on the order cells are analysed in."""
    return int.from_bytes(hashlib.sha256(f"{seed}|{cell_id}".encode()).digest()[:8], "big")


def compare_samples(a: Iterable[float], b: Iterable[float], *, a_label: str = "h3",
                    b_label: str = "h2", cell_id: str = "", alpha: float = 0.01,
                    test: Test = "welch", confidence: float = 0.95, resamples: int = 9999,
                    seed: int = 0, metric: str = "plt_ms", lower_is_better: bool = True,
                    better_word: str = "faster") -> CellComparison:
    """Compare two samples of a metric (by default page load times: lower is better)."""
    xa = np.asarray(list(a), dtype=float)
    xb = np.asarray(list(b), dtype=float)
    sa, sb = SampleSummary.of(a_label, xa), SampleSummary.of(b_label, xb)
    common = dict(cell_id=cell_id, a=sa, b=sb, confidence=confidence, test=test, alpha=alpha,
                  holm=False, metric=metric, lower_is_better=lower_is_better, better_word=better_word)
    if len(xa) < MIN_N or len(xb) < MIN_N:
        diff = percent_difference(xa, xb, lower_is_better) if len(xa) and len(xb) else math.nan
        return CellComparison(percent_difference=diff, ci_low=math.nan, ci_high=math.nan,
                              p_value=math.nan, p_adjusted=math.nan,
                              verdict=Verdict.INSUFFICIENT, **common)
    p = _test_p(xa, xb, test)
    lo, hi = _bootstrap_ci(xa, xb, confidence, resamples, cell_seed(seed, cell_id), lower_is_better)
    return CellComparison(percent_difference=percent_difference(xa, xb, lower_is_better),
                          ci_low=lo, ci_high=hi, p_value=p, p_adjusted=p,
                          verdict=_verdict(xa, xb, p, alpha, test, lower_is_better), **common)


def holm_adjust(comparisons: Sequence[CellComparison]) -> list[CellComparison]:
    """Holm-Bonferroni across the given comparisons (those with a p-value). An adjusted p is
    never below the raw one, so a verdict can only turn inconclusive, never change side."""
    idx = [i for i, c in enumerate(comparisons) if not math.isnan(c.p_value)]
    out = [replace(c, holm=True) for c in comparisons]
    if not idx:
        return out
    _, p_adj, _, _ = multipletests([comparisons[i].p_value for i in idx], method="holm")
    for i, pa in zip(idx, p_adj):
        c = out[i]
        verdict = c.verdict if pa < c.alpha else Verdict.INCONCLUSIVE
        out[i] = replace(c, p_adjusted=float(pa), verdict=verdict)
    return out


def compare_cells(runs: pd.DataFrame, pairs: Sequence[tuple[str, str]], *,
                  cell_ids: Sequence[str] | None = None, alpha: float = 0.01,
                  test: Test = "welch", holm: bool = False, confidence: float = 0.95,
                  resamples: int = 9999, seed: int = 0, metric: str = "plt_ms",
                  lower_is_better: bool = True, better_word: str = "faster",
                  exclude_flagged: bool = True) -> list[CellComparison]:
    """One CellComparison per (cell, pair) over the runs that count (core.status). `runs`
    needs columns cell_id, arm, status, protocol_requested, protocol_negotiated and `metric`
    (Store.runs_frame() has them). Holm correction, when asked for, is applied across the
    cells of each pair."""
    good = counted_runs(runs, metric, exclude_flagged=exclude_flagged)
    if cell_ids is None:
        cell_ids = list(dict.fromkeys(runs["cell_id"]))
    groups = {k: g[metric].to_numpy(dtype=float) for k, g in good.groupby(["cell_id", "arm"])}
    empty = np.array([], dtype=float)
    result: list[CellComparison] = []
    for a_label, b_label in pairs:
        batch = []
        for cid in cell_ids:
            xa, xb = groups.get((cid, a_label), empty), groups.get((cid, b_label), empty)
            batch.append(compare_samples(xa, xb, a_label=a_label, b_label=b_label, cell_id=cid,
                                         alpha=alpha, test=test, confidence=confidence,
                                         resamples=resamples, seed=seed, metric=metric,
                                         lower_is_better=lower_is_better, better_word=better_word))
        result.extend(holm_adjust(batch) if holm else batch)
    return result


def comparisons_frame(comparisons: Iterable[CellComparison]) -> pd.DataFrame:
    return pd.DataFrame([c.as_row() for c in comparisons])
