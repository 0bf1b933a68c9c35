"""`ByteShare` (Chaudhary §4.1, Fig. 5b: "For DL and DVL, 40% or more bytes are transferred
over TCP for 50% and 67% times"): the share of QUIC-enabled sessions that carried at least a
given share of their bytes over TCP, against a band around the paper's share.

A session's share of bytes over TCP, T / (T + Q), is counted at the router (series F and
F_udp: bytes over TCP and over UDP per second, linkem's flow log), not inferred: whether a
session meets the threshold has no test error of its own. The share of sessions that do is
judged by the exact binomial test, each side at (1 - confidence) / 2: holds when it is shown
above the band's bottom and below its top, does not hold when it is shown below the bottom or
above the top. A QUIC-enabled session that failed or timed out has no share:
it stays in the denominator and is put on the side that helps the verdict least (below the
threshold for "above the bottom", above it for "below the top"), so losing sessions can only leave
the claim inconclusive. A session flagged by its path audit is left out, as every rule does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats as sps

from ....core.verdicts import verdict_producer
from ...fallback.from_store import SETTLED
from .. import needed
from ..measured import Measured
from ..outcome import UNCLEAR, Outcome, Where, needs_text, not_run, p_text, where_text
from .session_share import LOST, _binomial_p, band_verdict


def tcp_shares(runs: pd.DataFrame, series: pd.DataFrame) -> pd.Series:
    """run_id -> the run's bytes over TCP as a share of its bytes over TCP and UDP (series F
    and F_udp); NaN for a run that recorded no bytes."""
    rows = series[series["name"].isin(["F", "F_udp"]) & series["run_id"].isin(runs["run_id"])]
    totals = rows.pivot_table(index="run_id", columns="name", values="value", aggfunc="sum", fill_value=0.0)
    tcp = totals["F"] if "F" in totals else pd.Series(0.0, totals.index)
    udp = totals["F_udp"] if "F_udp" in totals else pd.Series(0.0, totals.index)
    both = tcp + udp
    return (tcp / both.where(both > 0)).reindex(runs["run_id"].to_numpy())


@verdict_producer(
    "reproduce.byte_share",
    "a share of QUIC-enabled sessions carrying at least a share of their bytes over TCP is "
    "within the paper's band (holds) or shown outside it (does not hold)",
)
@dataclass(frozen=True)
class ByteShare:
    """Among the QUIC-enabled sessions of the selected cells, the share whose bytes went over
    TCP for at least `tcp_bytes` of the total, in [`at_least`, `at_most`] (see the module's
    docstring)."""

    quic_arm: str = "quic-enabled"
    tcp_bytes: float = 0.4
    at_least: float = 0.4
    at_most: float = 0.6
    where: Where = field(default_factory=dict)

    def reads(self) -> str:
        cells = ", ".join(f"{k} {where_text(v)}" for k, v in self.where.items()) or "all cells"
        return (
            f"per {self.quic_arm} session, bytes over TCP / (TCP + UDP) at the router; {cells}; holds if the "
            f"share of sessions with >= {self.tcp_bytes:.0%} of their bytes over TCP is in "
            f"{self.at_least:.0%}..{self.at_most:.0%}"
        )

    def claim_cells(self, m: Measured) -> list[str]:
        return m.select(self.where)

    def evaluate(self, m: Measured) -> Outcome:
        r = m.runs
        if r.empty or m.series is None or m.series.empty:
            return not_run("no session recorded its bytes over TCP and UDP (series F, F_udp)")
        cells = self.claim_cells(m)
        if not cells:
            return not_run("none of the claim's cells is in this experiment (reduced budget?)")
        r = r[(r["arm"] == self.quic_arm) & r["cell_id"].isin(cells)]
        if "attempt" in r:  # a round's last attempt is what it gave
            r = r.sort_values("attempt").drop_duplicates(["cell_id", "round"], keep="last")
        if m.exclude_flagged and "audit_flagged" in r:
            r = r[~(r["audit_flagged"].fillna(False).astype(bool) & r["status"].isin(SETTLED))]
        lost = int(r["status"].isin(LOST).sum())
        settled = r[r["status"].isin(SETTLED)]
        shares = tcp_shares(settled, m.series)
        out = self.judge(shares.dropna().to_numpy(), lost=lost, confidence=m.statistics.confidence)
        silent = int(shares.isna().sum())
        if silent:
            out.detail += f"; {silent} settled session(s) recorded no bytes at the router, left out"
        out.cells = [
            {"cell_id": c, "round": int(rd), "tcp_share": None if np.isnan(s) else round(float(s), 4)}
            for c, rd, s in zip(settled["cell_id"], settled["round"], shares.to_numpy())
        ]
        return out

    def judge(self, shares: np.ndarray, *, lost: int = 0, confidence: float) -> Outcome:
        """The claim from the sessions' TCP shares, `lost` sessions with none."""
        level = (1 - confidence) / 2
        k = int(np.sum(np.asarray(shares) >= self.tcp_bytes))
        n = len(shares) + lost
        if n == 0:
            return Outcome(UNCLEAR, number="no QUIC-enabled session", n="0")
        # each test with the lost sessions where they help it least
        p_low = _binomial_p(k, n, self.at_least, True)  # shown above the bottom
        p_high = _binomial_p(k + lost, n, self.at_most, False)  # shown below the top
        p_below = _binomial_p(k + lost, n, self.at_least, False)  # shown below the bottom
        p_above = _binomial_p(k, n, self.at_most, True)  # shown above the top
        verdict = band_verdict(against=(p_below, p_above), for_=(p_low, p_high), level=level)
        p_hold = max(p_low, p_high)
        ci = sps.binomtest(k, len(shares)).proportion_ci(1 - 2 * level, method="exact") if len(shares) else None
        needs = ""
        if verdict == UNCLEAR:
            middle = (self.at_least + self.at_most) / 2
            side = self.at_least if k / n <= middle else self.at_most
            needs = needs_text(
                [needed.share_sessions(middle, side, level=level)],
                1,
                f"sessions (80% power if the true share is {middle:.0%}, the band's middle)",
                "not estimable (beyond 5,000 sessions)",
            )
        interval = f" [{ci.low:.0%}, {ci.high:.0%}]" if ci is not None else ""
        return Outcome(
            verdict,
            number=f"{k} of {n} QUIC-enabled sessions with >= {self.tcp_bytes:.0%} of bytes over TCP "
            f"({k / n:.0%}{interval})" + (f"; {lost} failed, counted against each test" if lost else ""),
            n=str(n),
            p=p_hold,
            p_text=p_text(p_hold),
            needs=needs,
            detail=f"holds when the share is shown above {self.at_least:.0%} and below "
            f"{self.at_most:.0%}, does not hold when shown below or above (exact one-sided binomial tests at "
            f"{level:g}); a session's share is counted at the router, with no test error of its own; p: the "
            f"larger of the two tests that make it hold",
        )
