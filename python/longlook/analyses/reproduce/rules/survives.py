"""`Survives`: one arm's connections outlive a change of the path where another's do not
(Langley §3.7: a QUIC connection, identified by its connection ID, outlives a NAT
rebinding; a TCP connection is its 4-tuple), read from which rounds completed."""

from __future__ import annotations

from dataclasses import dataclass, field

from scipy import stats as sps

from ....core.status import counted_runs, failed_rounds
from ....core.verdicts import verdict_producer
from ..measured import Measured
from ..outcome import FAILS, HOLDS, UNCLEAR, Outcome, Where, name, needs_text, not_run, p_text, where_text


@verdict_producer(
    "reproduce.survives",
    "an arm's loads survive a path change where another's do not: completions, Fisher's exact test, one-sided",
)
@dataclass(frozen=True)
class Survives:
    """The rounds of arm `a` and of arm `b` that ended with a counted run, of those that ended
    with a counted run or a failure, pooled over the selected cells (a round whose runs were
    all flagged by the path audit measured another path: neither). Holds when every round of
    `a` completed and `a` completed more often than `b` by Fisher's exact test, one-sided, at
    alpha (5 rounds each, 5/5 against 0/5: p = 0.004). Does not hold when `a` is shown not
    to survive: its completion's one-sided Clopper-Pearson upper bound, at
    (1 - confidence) / 2, below `at_least`, or `b` completing more often than `a` (the other
    tail at alpha). Else inconclusive: a failed
    round of `a` with the rest complete neither shows that it survives nor that it does not.
    A failure's cause is not read: a load that timed out for another reason counts against
    `a` as a rebinding's would, so the scenario should leave nothing else to fail."""

    a: str
    b: str
    where: Where = field(default_factory=dict)
    at_least: float = 0.9

    def reads(self) -> str:
        cells = ", ".join(f"{k} {where_text(v)}" for k, v in self.where.items()) or "all cells"
        return (
            f"completed rounds of {name(self.a)} and {name(self.b)}; {cells}; holds if every round of "
            f"{name(self.a)} completed, more often than {name(self.b)}'s (Fisher, one-sided)"
        )

    def claim_cells(self, m: Measured) -> list[str]:
        return m.select(self.where)

    def evaluate(self, m: Measured) -> Outcome:
        cells = m.select(self.where)
        if not cells or m.runs.empty:
            return not_run("none of the claim's cells is in this experiment (reduced budget?)")
        good = counted_runs(m.runs, exclude_flagged=m.exclude_flagged)
        lost = failed_rounds(m.runs, good)
        if m.exclude_flagged and "audit_flagged" in lost:  # a failure on a path the audit flagged: neither
            lost = lost[~lost["audit_flagged"].fillna(False).astype(bool)]

        def pooled(arm: str) -> tuple[int, int]:
            mine = lambda f: f[f["cell_id"].isin(cells) & (f["arm"] == arm)]  # noqa: E731
            k = len(mine(good)[["cell_id", "round"]].drop_duplicates())
            return k, k + len(mine(lost))

        (ka, na), (kb, nb) = pooled(self.a), pooled(self.b)
        number = f"{name(self.a)} {ka}/{na}, {name(self.b)} {kb}/{nb} rounds completed"
        if not na or not nb:
            return Outcome(UNCLEAR, number=number, n=f"{na}/{nb}", detail="an arm has no round in these cells")
        alpha = m.statistics.alpha
        table = [[ka, na - ka], [kb, nb - kb]]
        p_more = float(sps.fisher_exact(table, alternative="greater").pvalue)
        p_less = float(sps.fisher_exact(table, alternative="less").pvalue)
        level = (1 - m.statistics.confidence) / 2
        upper = 1.0 if ka == na else float(sps.beta.ppf(1 - level, ka + 1, na - ka))
        if ka == na and p_more < alpha:
            verdict = HOLDS
        elif upper < self.at_least or p_less < alpha:
            verdict = FAILS
        else:
            verdict = UNCLEAR
        detail = (
            f"holds when every round of {name(self.a)} completed and Fisher's exact test (one-sided) shows it "
            f"completing more often than {name(self.b)} at {alpha:g}; does not hold when {name(self.a)}'s "
            f"completion is shown below {self.at_least:.0%} (Clopper-Pearson upper bound {upper:.0%}) or below "
            f"{name(self.b)}'s"
        )
        needs = ""
        if verdict == UNCLEAR and ka == na:
            n = rounds_to_show(kb / nb, alpha)
            needs = needs_text([n], 1, "rounds per arm (if every round of the first survives)", "not estimable")
        return Outcome(
            verdict,
            number=number,
            n=f"{na}/{nb}",
            needs=needs,
            p=p_more,
            p_text=p_text(p_more),
            detail=detail,
            cells=[{"cell_id": c} for c in cells],
            against=cells[:1] if verdict == FAILS else [],
        )


def rounds_to_show(share_b: float, alpha: float, most: int = 1000) -> int | None:
    """The fewest rounds per arm at which n/n against arm b's share of n is significant
    (Fisher's exact test, one-sided, at alpha); None beyond `most`."""
    for n in range(2, most + 1):
        kb = round(share_b * n)
        if float(sps.fisher_exact([[n, 0], [kb, n - kb]], alternative="greater").pvalue) < alpha:
            return n
    return None
