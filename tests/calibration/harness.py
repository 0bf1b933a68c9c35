"""The null-calibration suite's harness: which producer an entry calibrates, and the one
rule by which a simulated false-verdict rate passes.

An entry simulates data where the truth is known (the shapes this project produces: skew,
failures, steps, cumulative series, few rounds), runs the producer as the project runs it,
counts the verdicts that say more than the truth, and calls `check_rate`. The rate passes
when it is not significantly above the stated alpha: the one-sided binomial test of
k false verdicts in `trials` against alpha has p >= CHECK_P (a rate truly at alpha fails
one check in 1,000; seeds are fixed, so a run is repeatable). Every checked rate is kept
for the summary pytest prints at the end (conftest.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, TypeVar

from scipy import stats as sps

T = TypeVar("T")

CHECK_P = 0.001

# producer name -> the test functions that calibrate it
ENTRIES: dict[str, list[str]] = {}


@dataclass(frozen=True)
class Rate:
    producer: str
    verdict: str  # the false verdict counted, e.g. 'holds under the null'
    false: int
    trials: int
    alpha: float
    p: float  # one-sided binomial p of false/trials against alpha

    @property
    def rate(self) -> float:
        return self.false / self.trials

    @property
    def interval(self) -> tuple[float, float]:
        ci = sps.binomtest(self.false, self.trials).proportion_ci(0.95, method="wilson")
        return float(ci.low), float(ci.high)

    @property
    def passed(self) -> bool:
        return self.p >= CHECK_P


RATES: list[Rate] = []


def calibrates(*producers: str) -> Callable[[T], T]:
    """Mark a test as a calibration entry of these verdict producers (core.verdicts names)."""

    def mark(fn: T) -> T:
        for name in producers:
            ENTRIES.setdefault(name, []).append(f"{fn.__module__}.{getattr(fn, '__name__', fn)}")
        return fn

    return mark


def check_rate(producer: str, verdict: str, false: int, trials: int, alpha: float) -> Rate:
    """Record a simulated false-verdict rate and assert it stays within `alpha` plus
    Monte-Carlo error (see the module's docstring)."""
    p = float(sps.binomtest(false, trials, alpha, alternative="greater").pvalue)
    r = Rate(producer, verdict, false, trials, alpha, p)
    RATES.append(r)
    lo, hi = r.interval
    assert r.passed, (
        f"{producer}: '{verdict}' in {false} of {trials} null trials = {r.rate:.4f} "
        f"(95% {lo:.4f}-{hi:.4f}), above its alpha {alpha:g} (binomial p = {p:.2g})"
    )
    return r
