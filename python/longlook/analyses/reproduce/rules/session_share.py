"""What the rules on video sessions (Chaudhary et al.; pair_share.py, granger_share.py,
byte_share.py, ate.py) share: they read analyses.fallback's per-pair and per-session verdicts
(byte_share: each session's bytes at the router), and a share is judged by the exact binomial
test.

p: the exact one-sided binomial p of the share against the threshold the claim holds
above, or the one-sided Welch p of the ATE on the claimed side.

Simulated (tests/calibration/test_reproduce_rules.py), each side at 0.025: 20 pairs of
20-120 s sessions (quality walking a ladder, stalls), half TCP far better and half TCP worse
by exactly the margin: "holds" 0.5%; half TCP worse by exactly the margin and half QUIC far
better: "does not hold" 1.0% (the paper's reading held in 68% of the first). 10-200 tested
sessions, each driven by F with chance 0.5: "holds" 1.8%, "does not hold" 0.5%. No effect
of the break, stall-skewed QoE, failed sessions: "holds" 1.0%, "does not hold" 1.2%.
"""

from __future__ import annotations


from scipy import stats as sps

from ..outcome import FAILS, HOLDS, UNCLEAR


LOST = ("failed", "timeout")  # a session that gave no QoE


def _binomial_p(k: int, n: int, threshold: float, greater: bool) -> float:
    return float(sps.binomtest(k, n, threshold, alternative="greater" if greater else "less").pvalue)


def band_verdict(*, against: tuple[float, ...], for_: tuple[float, ...], level: float) -> str:
    """A share's verdict from its one-sided tests: "does not hold" when any test against the
    claim (shown below its bottom, above its top) is below `level`, "holds" when every test
    for it is, else inconclusive."""
    if any(p < level for p in against):
        return FAILS
    return HOLDS if all(p < level for p in for_) else UNCLEAR
