"""`PairShare` (§5, "TCP-only gives better or the same QoE in more than 60% of cases"): per
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
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import stats as sps

from ....core.verdicts import verdict_producer
from ...fallback.qoe import BLOCKS, MARGIN, NOT_TESTABLE, QUIC_BETTER, TCP_AS_GOOD, UNDECIDED
from .. import needed
from ..measured import Measured
from ..outcome import FAILS, HOLDS, UNCLEAR, Outcome, Where, needs_text, not_run, p_text, where_text
from .session_share import LOST, _binomial_p


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
    where: Where = field(default_factory=dict)  # the cells whose pairs count (default: all)

    def reads(self) -> str:
        cells = ", ".join(f"{k} {where_text(v)}" for k, v in self.where.items()) or "all cells"
        return (
            f"temporal QoE per session pair ({self.quic_arm} QUIC-enabled vs {self.tcp_arm} TCP-only, "
            f"same cell and round), block means per session; {cells}; holds if TCP is shown better or within "
            f"{self.margin:g} of QUIC in > {self.at_least:.0%}"
        )

    def claim_cells(self, m: Measured) -> list[str]:
        return m.select(self.where)

    def evaluate(self, m: Measured) -> Outcome:
        from ...fallback.qoe import pair_verdict, session_pairs, temporal_samples
        from ...fallback.from_store import SETTLED

        r = m.runs
        if r.empty or m.series is None or m.series.empty:
            return not_run("no session recorded its temporal QoE (series qoe_t)")
        cells = self.claim_cells(m)
        if not cells:
            return not_run("none of the claim's cells is in this experiment (reduced budget?)")
        r = r[r["arm"].isin([self.quic_arm, self.tcp_arm]) & r["cell_id"].isin(cells)]
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
