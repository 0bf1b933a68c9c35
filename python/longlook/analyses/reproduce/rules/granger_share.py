"""`GrangerShare` (§6): among the sessions whose pair was shown TCP better or the same, the
share where the per-session verdict (shift-null Granger, Holm over B and S:
analyses.fallback.session) says F Granger-causes B or S. That verdict is wrong in at most
alpha of sessions without an effect, so the claim holds when the share is significantly
above at_least + (1 - at_least) alpha; it does not hold when the share of sessions where
the test rejects is significantly below at_least (the paper's number is such a share; a
test that missed an effect cannot tell it from no effect).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats as sps

from ....core.multiple import holm_rows
from ....core.verdicts import verdict_producer
from ....errors import LonglookError
from ...fallback.qoe import TCP_AS_GOOD
from ...fallback.session import TCP_SERVED
from .. import needed
from ..measured import Measured
from ..outcome import UNCLEAR, Outcome, Where, needs_text, not_run, p_text, where_text
from .session_share import _binomial_p, band_verdict


def _either_p(sessions: pd.DataFrame) -> np.ndarray:
    """Per session the family-wise p of "F Granger-causes B or S": the analysis's own column
    when it has one, else Holm over the two tests that ran (one test: its own p)."""
    if "p_either" in sessions:
        return pd.to_numeric(sessions["p_either"], errors="coerce").to_numpy(float)
    p = sessions[["p_B", "p_S"]].apply(pd.to_numeric, errors="coerce").to_numpy(float)
    both = ~np.isnan(p).any(axis=1)
    out = np.fmin(p[:, 0], p[:, 1])  # one test ran: its p; none: nan
    if both.any():
        out[both] = holm_rows(p[both]).min(axis=1)
    return out


@verdict_producer(
    "reproduce.granger_share",
    "the share of sessions (TCP shown as good) where F Granger-causes B "
    "or S is above the paper's (holds) or below it (does not hold)",
)
@dataclass(frozen=True)
class GrangerShare:
    """Chaudhary §6: among QUIC-enabled sessions whose pair was shown TCP better or the
    same, the share where fallback F Granger-causes a quality drop B or a stall S (the
    per-session verdict of analyses.fallback; see the module's docstring)."""

    at_least: float = 0.5
    # a band around the paper's share: the claim also fails when the rejecting share is
    # shown above at_most + (1 - at_most) alpha (more than a true share of at_most can give)
    at_most: float | None = None
    # the pair verdicts whose QUIC-enabled sessions are tested (Chaudhary §6: those where TCP
    # did better; the default also takes "the same")
    among: tuple[str, ...] = tuple(TCP_AS_GOOD)
    # F as the analysis takes it (session.CAUSES: bytes over TCP per step, or the paper's
    # share T / (T + Q) so far), on a grid of step_s, lags chosen among 1..max_lag_s
    cause: str = "bytes"
    step_s: float = 1.0
    max_lag_s: float | None = None
    where: Where = field(default_factory=dict)

    def _among_text(self) -> str:
        return " or ".join(v.replace("_", " ") for v in self.among)

    def _cause_text(self) -> str:
        f = "F = T/(T+Q), the share of bytes over TCP so far" if self.cause == "share" else "F = bytes over TCP"
        lags = "" if self.max_lag_s is None else f", lags up to {self.max_lag_s:g} s"
        return f"{f}, {self.step_s:g} s steps{lags}"

    def reads(self) -> str:
        share = f"> {self.at_least:.0%}" if self.at_most is None else f"in {self.at_least:.0%}..{self.at_most:.0%}"
        cells = ", ".join(f"{k} {where_text(v)}" for k, v in self.where.items()) or "all cells"
        return (
            f"series F, B, S of the QUIC-enabled sessions whose pair was shown {self._among_text()}; {cells}; "
            f"{self._cause_text()}; Granger F -> B or S per session (shift null, Holm over B and S); "
            f"holds if the share is {share}"
        )

    def claim_cells(self, m: Measured) -> list[str]:
        return m.select(self.where)

    def fallback_options(self) -> dict:
        """How the fallback analysis reads the sessions for this claim (and its explanation)."""
        return {"cause": self.cause, "step_s": self.step_s, "max_lag_s": self.max_lag_s}

    def evaluate(self, m: Measured) -> Outcome:
        from ...fallback.from_store import analyze_store

        if m.directory is None:
            return not_run("needs an experiment directory")
        cells = self.claim_cells(m)
        if not cells:
            return not_run("none of the claim's cells is in this experiment (reduced budget?)")
        try:
            sessions = analyze_store(
                m.directory,
                alpha=m.statistics.alpha,
                include_flagged=not m.exclude_flagged,
                **self.fallback_options(),
            ).sessions
        except LonglookError as e:
            return Outcome(UNCLEAR, number="no fallback series to test", detail=e.message)
        sessions = sessions[sessions["cell_id"].isin(cells)]
        return self.judge(sessions, alpha=m.statistics.alpha, confidence=m.statistics.confidence)

    def judge(self, sessions: pd.DataFrame, *, alpha: float, confidence: float) -> Outcome:
        """The claim from analyze_store's sessions (pair_verdict, suitable, p_B, p_S and, when
        the analysis gives it, p_either)."""
        level = (1 - confidence) / 2
        good = sessions[sessions["pair_verdict"].isin(self.among)] if "pair_verdict" in sessions else sessions.iloc[0:0]
        ok = good[good["error"].isna()] if "error" in good else good
        suitable = ok[ok["suitable"].fillna(False).astype(bool)] if "suitable" in ok else ok.iloc[0:0]
        p = _either_p(suitable) if len(suitable) else np.array([])
        tested = ~np.isnan(p)
        n, k = int(tested.sum()), int((p[tested] < alpha).sum())
        hold_at = self.at_least + (1 - self.at_least) * alpha
        fell = int(good["served"].isin(TCP_SERVED).sum()) if "served" in good else 0
        counts = (
            f"{len(sessions)} sessions, {len(good)} shown {self._among_text()}, {fell} of them fell back, "
            f"{len(suitable)} suitable for Granger, {n} testable (F and B or S not constant)"
        )
        if n == 0:
            return Outcome(UNCLEAR, number=f"no tested session shown {self._among_text()}", n="0", detail=counts)
        p_hold, p_fail = _binomial_p(k, n, hold_at, True), _binomial_p(k, n, self.at_least, False)
        # the band's top: a true share of at_most shows at most at_most + (1 - at_most) alpha
        over_at = None if self.at_most is None else self.at_most + (1 - self.at_most) * alpha
        p_over = 1.0 if over_at is None else _binomial_p(k, n, over_at, True)
        p_under = 0.0 if self.at_most is None else _binomial_p(k, n, self.at_most, False)
        verdict = band_verdict(against=(p_fail, p_over), for_=(p_hold, p_under), level=level)
        p_hold = max(p_hold, p_under)
        ci = sps.binomtest(k, n).proportion_ci(confidence_level=1 - 2 * level, method="exact")
        needs = ""
        if verdict == UNCLEAR:
            above = k / n > hold_at
            threshold = hold_at if above else self.at_least
            target = (
                min(0.99, threshold + needed.SHARE_RESOLUTION)
                if above
                else max(0.01, threshold - needed.SHARE_RESOLUTION)
            )
            needs = needs_text(
                [needed.share_sessions(target, threshold, level=level)],
                1,
                f"tested sessions (80% power if the true share is {target:.0%})",
                "not estimable (beyond 5,000 sessions)",
            )
        return Outcome(
            verdict,
            number=f"{k / n:.0%} of {n} tested sessions where F Granger-causes B or S [{ci.low:.0%}, {ci.high:.0%}]",
            n=str(n),
            p=p_hold,
            p_text=p_text(p_hold),
            needs=needs,
            detail=f"per session: {self._cause_text()}; shift-null Granger F -> B, F -> S, Holm over the two, "
            f"alpha {alpha:g}; "
            f"holds when the share is above {hold_at:.1%} (the claim's {self.at_least:.0%} plus "
            f"the sessions a test at {alpha:g} calls in error)"
            + ("" if over_at is None else f" and below {self.at_most:.0%}")
            + f", fails when the rejecting share is below {self.at_least:.0%}"
            + ("" if over_at is None else f" or above {over_at:.1%}")
            + f" (exact one-sided binomial tests at {level:g}; a test that missed an effect counts as not "
            f"rejecting); p: the larger of the tests that make it hold; {counts}",
        )
