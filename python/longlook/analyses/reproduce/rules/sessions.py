"""The claims on video sessions (Chaudhary et al.), read from analyses.fallback's per-pair
and per-session verdicts:

- `PairShare` (§5, "TCP-only gives better or the same QoE in more than 60% of cases"): per
  session pair the calibrated pair test (analyses.fallback.qoe: block means of the temporal
  QoE, "the same" only from a non-inferiority test at a margin). Each pair's "TCP better or
  the same" is wrong in at most alpha of the pairs whose QUIC process is better by the
  margin, and its "QUIC better" likewise, so a true share s of pairs as good shows up as at
  most s + (1 - s) alpha pairs shown as good. The claim holds when the share shown as good
  is significantly above at_least + (1 - at_least) alpha (exact one-sided binomial test at
  (1 - confidence) / 2), and does not hold when the share shown QUIC better is
  significantly above 1 - at_least + at_least alpha; pairs the test cannot tell stay in the
  denominator and make neither happen, so a pair test without power leaves the claim
  inconclusive instead of making it hold.
- `GrangerShare` (§6): among the sessions whose pair was shown TCP better or the same, the
  share where the per-session verdict (shift-null Granger, Holm over B and S:
  analyses.fallback.session) says F Granger-causes B or S. That verdict is wrong in at most
  alpha of sessions without an effect, so the claim holds when the share is significantly
  above at_least + (1 - at_least) alpha; it does not hold when the share of sessions where
  the test rejects is significantly below at_least (the paper's number is such a share; a
  test that missed an effect cannot tell it from no effect).
- `Ate` (§7 by experiment): the average treatment effect of a randomised QUIC break,
  analyses.fallback.intervention's (Welch's interval, missing sessions at their worst).

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

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as sps

from ...core.multiple import holm_rows
from ...core.verdicts import verdict_producer
from ...errors import LonglookError
from ..fallback.qoe import BLOCKS, MARGIN, NOT_TESTABLE, QUIC_BETTER, TCP_AS_GOOD, UNDECIDED
from ..fallback.session import TCP_SERVED
from . import needed
from .measured import Measured
from .outcome import FAILS, HOLDS, UNCLEAR, Outcome, needs_text, not_run, p_text

LOST = ("failed", "timeout")  # a session that gave no QoE


def _binomial_p(k: int, n: int, threshold: float, greater: bool) -> float:
    return float(sps.binomtest(k, n, threshold, alternative="greater" if greater else "less").pvalue)


@verdict_producer(
    "reproduce.pair_share",
    "a share of session pairs shown TCP better or the same is above the "
    "paper's (holds) or QUIC shown better in too many (does not hold)",
)
@dataclass(frozen=True)
class PairShare:
    """Chaudhary §5: per cell and round, the TCP-only session against the QUIC-enabled one
    (analyses.fallback.qoe.pair_verdict); the share of testable pairs shown TCP better or the
    same (see the module's docstring). A QUIC-enabled session that ended on TCP
    (protocol_mismatch, "mixed") is data here; a pair without temporal QoE is not testable
    and counted apart; a pair one of whose sessions failed or timed out is undecided: in the
    denominator, on neither side (dropping it would judge the survivors)."""

    quic_arm: str = "h3"
    tcp_arm: str = "h2"
    at_least: float = 0.5
    margin: float = MARGIN  # QoE units within which TCP counts as "the same"

    def reads(self) -> str:
        return (
            f"temporal QoE per session pair ({self.quic_arm} QUIC-enabled vs {self.tcp_arm} TCP-only, "
            f"same cell and round), block means per session; holds if TCP is shown better or within "
            f"{self.margin:g} of QUIC in > {self.at_least:.0%}"
        )

    def evaluate(self, m: Measured) -> Outcome:
        from ..fallback.qoe import pair_verdict, session_pairs, temporal_samples
        from ..fallback.store import SETTLED

        r = m.runs
        if r.empty or m.series is None or m.series.empty:
            return not_run("no session recorded its temporal QoE (series qoe_t)")
        r = r[r["arm"].isin([self.quic_arm, self.tcp_arm])]
        if "attempt" in r:  # a round's last attempt of an arm is what it gave
            r = r.sort_values("attempt").drop_duplicates(["cell_id", "round", "arm"], keep="last")
        # a pair with a session that failed is in the denominator on neither side: it can help
        # neither verdict (its QoE is unknown, and dropping it would leave the survivors)
        lost = r[r["status"].isin(LOST)][["cell_id", "round"]].drop_duplicates()
        both = r.groupby(["cell_id", "round"])["arm"].nunique() == 2
        lost = lost[np.array([both.get((c, rd), False) for c, rd in zip(lost["cell_id"], lost["round"])], dtype=bool)]
        r = r[r["status"].isin(SETTLED)]
        if m.exclude_flagged and "audit_flagged" in r:
            r = r[~r["audit_flagged"].fillna(False).astype(bool)]
        temporal = temporal_samples(m.series)
        r = r.assign(samples=[temporal.get(x, np.array([])) for x in r["run_id"]])
        pairs = session_pairs(r, self.quic_arm, self.tcp_arm)
        outcomes = [
            pair_verdict(q, t, alpha=m.statistics.alpha, margin=self.margin)
            for q, t in zip(pairs["samples_q"], pairs["samples_t"])
        ]
        keys = list(zip(pairs["cell_id"], pairs["round"]))
        for c, rd in zip(lost["cell_id"], lost["round"]):
            outcomes.append((UNDECIDED, "a session of the pair failed or timed out: undecided, on neither side"))
            keys.append((c, rd))
        out = self.judge(outcomes, alpha=m.statistics.alpha, confidence=m.statistics.confidence)
        if len(lost):
            out.detail += f"; {len(lost)} pair(s) with a failed session counted undecided"
        out.cells = [
            {"cell_id": c, "round": int(rd), "verdict": v, "why": w} for (c, rd), (v, w) in zip(keys, outcomes)
        ]
        return out

    def judge(self, outcomes: list[tuple[str, str]], *, alpha: float, confidence: float) -> Outcome:
        """The claim from the pairs' (outcome, why) at the pair test's `alpha`."""
        level = (1 - confidence) / 2
        verdicts = [v for v, _ in outcomes]
        testable = [v for v in verdicts if v != NOT_TESTABLE]
        n = len(testable)
        good = sum(v in TCP_AS_GOOD for v in testable)
        quic = sum(v == QUIC_BETTER for v in testable)
        untestable = len(verdicts) - n
        why = next((w for v, w in outcomes if v == NOT_TESTABLE), "")
        if n == 0:
            return Outcome(
                UNCLEAR,
                number="no testable session pair",
                n="0",
                detail=f"{untestable} pair(s) not testable ({why})" if untestable else "no pair",
            )
        hold_at = self.at_least + (1 - self.at_least) * alpha
        fail_at = 1 - self.at_least + self.at_least * alpha
        p_hold, p_fail = _binomial_p(good, n, hold_at, True), _binomial_p(quic, n, fail_at, True)
        verdict = HOLDS if p_hold < level else FAILS if p_fail < level else UNCLEAR
        ci = sps.binomtest(good, n).proportion_ci(confidence_level=1 - 2 * level, method="exact")
        needs = ""
        if verdict == UNCLEAR:
            res = needed.SHARE_RESOLUTION
            if good / n > hold_at:
                k = needed.share_sessions(min(0.99, hold_at + res), hold_at, level=level)
                needs = needs_text(
                    [k],
                    1,
                    f"session pairs (80% power if {min(0.99, hold_at + res):.0%} are shown TCP better or the same)",
                    "not estimable (beyond 5,000 pairs)",
                )
            elif quic / n > fail_at:
                k = needed.share_sessions(min(0.99, fail_at + res), fail_at, level=level)
                needs = needs_text(
                    [k],
                    1,
                    f"session pairs (80% power if {min(0.99, fail_at + res):.0%} are shown QUIC better)",
                    "not estimable (beyond 5,000 pairs)",
                )
            else:
                needs = (
                    f"no number of pairs decides it at this pair test's power: {good} of {n} pairs shown TCP "
                    f"better or the same (it needs > {hold_at:.1%}), {quic} QUIC better (> {fail_at:.1%}), "
                    f"{n - good - quic} undecided; longer sessions or a larger margin would"
                )
        detail = (
            f"pair test: block means ({BLOCKS} per session), Welch's interval at {1 - 2 * alpha:.0%}, margin "
            f"{self.margin:g} QoE units; holds when the share shown TCP better or the same is above "
            f"{hold_at:.1%}, fails when the share shown QUIC better is above {fail_at:.1%} (exact one-sided "
            f"binomial tests at {level:g}; each pair errs in at most {alpha:g}); p: the test of the first"
        )
        if untestable:
            detail += f"; {untestable} of {len(verdicts)} pairs not testable ({why})"
        return Outcome(
            verdict,
            number=(
                f"{good / n:.0%} of {n} testable session pairs shown TCP better or the same "
                f"[{ci.low:.0%}, {ci.high:.0%}]; QUIC better in {quic}, undecided in "
                f"{n - good - quic}"
            ),
            n=str(n),
            p=p_hold,
            p_text=p_text(p_hold),
            needs=needs,
            detail=detail,
        )


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

    def reads(self) -> str:
        return (
            "series F, B, S of the QUIC-enabled sessions shown TCP better or the same; "
            f"Granger F -> B or S per session (shift null, Holm over B and S); holds if the share > "
            f"{self.at_least:.0%}"
        )

    def evaluate(self, m: Measured) -> Outcome:
        from ..fallback.store import analyze_store

        if m.directory is None:
            return not_run("needs an experiment directory")
        try:
            sessions = analyze_store(
                m.directory, alpha=m.statistics.alpha, include_flagged=not m.exclude_flagged
            ).sessions
        except LonglookError as e:
            return Outcome(UNCLEAR, number="no fallback series to test", detail=e.message)
        return self.judge(sessions, alpha=m.statistics.alpha, confidence=m.statistics.confidence)

    def judge(self, sessions: pd.DataFrame, *, alpha: float, confidence: float) -> Outcome:
        """The claim from analyze_store's sessions (pair_verdict, suitable, p_B, p_S and, when
        the analysis gives it, p_either)."""
        level = (1 - confidence) / 2
        good = (
            sessions[sessions["pair_verdict"].isin(TCP_AS_GOOD)] if "pair_verdict" in sessions else sessions.iloc[0:0]
        )
        ok = good[good["error"].isna()] if "error" in good else good
        suitable = ok[ok["suitable"].fillna(False).astype(bool)] if "suitable" in ok else ok.iloc[0:0]
        p = _either_p(suitable) if len(suitable) else np.array([])
        tested = ~np.isnan(p)
        n, k = int(tested.sum()), int((p[tested] < alpha).sum())
        hold_at = self.at_least + (1 - self.at_least) * alpha
        fell = int(good["served"].isin(TCP_SERVED).sum()) if "served" in good else 0
        counts = (
            f"{len(sessions)} sessions, {len(good)} shown TCP better or the same, {fell} of them fell back, "
            f"{len(suitable)} suitable for Granger, {n} testable (F and B or S not constant)"
        )
        if n == 0:
            return Outcome(UNCLEAR, number="no tested session shown TCP better or the same", n="0", detail=counts)
        p_hold, p_fail = _binomial_p(k, n, hold_at, True), _binomial_p(k, n, self.at_least, False)
        verdict = HOLDS if p_hold < level else FAILS if p_fail < level else UNCLEAR
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
            detail=f"per session: shift-null Granger F -> B, F -> S, Holm over the two, alpha {alpha:g}; "
            f"holds when the share is above {hold_at:.1%} (the claim's {self.at_least:.0%} plus "
            f"the sessions a test at {alpha:g} calls in error), fails when the rejecting share is "
            f"below {self.at_least:.0%} (exact one-sided binomial tests at {level:g}; a test that "
            f"missed an effect counts as not rejecting); {counts}",
        )


@verdict_producer(
    "reproduce.ate",
    "the ATE of a randomised QUIC break on a metric is shown on the claimed side (holds) or the other (does not hold)",
)
@dataclass(frozen=True)
class Ate:
    """Causality by experiment (a video scenario with [intervention]): the average treatment
    effect of the randomised QUIC break (and the fallback it forces) on `metric`, from
    analyses.fallback.intervention (difference in means, Welch's interval, missing sessions
    at their worst): holds when the whole interval lies on the claimed side of 0, does not
    hold when it lies on the other."""

    metric: str = "qoe"
    expect: str = "lower"  # the treated sessions' metric is lower ("lower") or higher

    def reads(self) -> str:
        return (
            f"{self.metric}: mean(treated) - mean(control) of the QUIC-enabled sessions, Welch interval; "
            f"holds if wholly {'below' if self.expect == 'lower' else 'above'} 0"
        )

    def evaluate(self, m: Measured) -> Outcome:
        from ..fallback.intervention import analyze_intervention

        if m.directory is None:
            return not_run("needs an experiment directory")
        try:
            res = analyze_intervention(m.directory, include_flagged=not m.exclude_flagged)
        except LonglookError as e:
            return Outcome(UNCLEAR, number="no interventional sessions", detail=e.message)
        return self.judge(res.effects, res.sessions, res.summary)

    def judge(self, effects: pd.DataFrame, sessions: pd.DataFrame, summary: dict) -> Outcome:
        """The claim from analyze_intervention's effects (its "all cells" row of `metric`),
        sessions and summary."""
        r = effects[(effects["scope"] == "all cells") & (effects["metric"] == self.metric)].iloc[0]
        n = f"{r.n_treated}/{r.n_control}"
        if math.isnan(r.ci_low) or math.isnan(r.ci_high):
            return Outcome(UNCLEAR, number=r.verdict, n=n, detail=r.why or "no interval")
        level = (1 - float(r.confidence)) / 2
        sign = -1 if self.expect == "lower" else 1
        verdict = (
            HOLDS
            if sign * r.ci_low > 0 and sign * r.ci_high > 0
            else FAILS
            if sign * r.ci_low < 0 and sign * r.ci_high < 0
            else UNCLEAR
        )
        # Welch's p is two-sided and symmetric: the claimed side's one-sided p
        p = float(r.p) / 2 if sign * r.ate > 0 else 1 - float(r.p) / 2
        needs = ""
        if verdict == UNCLEAR:
            x = sessions[self.metric].astype(float) if self.metric in sessions else pd.Series(dtype=float)
            treated = sessions["treated"].astype(bool) if "treated" in sessions else pd.Series(dtype=bool)
            t, c = x[treated].dropna(), x[~treated].dropna()
            sd = math.sqrt((t.var() + c.var()) / 2) if len(t) > 1 and len(c) > 1 else math.nan
            effect = needed.ATE_RESOLUTION_SD * sd
            k = (
                needed.difference_sessions(len(t), float(t.std()), len(c), float(c.std()), effect, level=level)
                if not math.isnan(sd)
                else None
            )
            needs = needs_text(
                [k],
                1,
                f"sessions per arm (80% power if the ATE is {effect:.3g}, half a session sd)",
                "not estimable (fewer than 2 sessions per arm or no spread)",
            )
        compliance = summary.get("compliance", {})
        detail = (
            f"{summary.get('estimator', 'difference in means, Welch interval')}; treated fell back "
            f"{compliance.get('treated_fell_back', '?')}/{summary.get('treated', '?')}, control "
            f"{compliance.get('control_fell_back', '?')}/{summary.get('control', '?')}; beside Granger: "
            f"{summary.get('agreement', '-')}; p: Welch's one-sided p on the claimed side (holds when below "
            f"{level:g})"
        )
        return Outcome(
            verdict,
            number=f"ATE {r.ate:+.3g} [{r.ci_low:.3g}, {r.ci_high:.3g}] ({r.mean_treated:.3g} vs {r.mean_control:.3g})",
            n=n,
            p=p,
            p_text=p_text(p),
            needs=needs,
            detail=detail,
        )
