"""A claim on the inferred state machine (Kakhki §5.3: SlowStart -> ApplicationLimited on
the phone): one transition's per-run counts, fast cells against slow ones, judged by
`states diff` (analyses.states.diff) and nothing else.

The diff decides an item by its own test (Fisher on presence when one side never has it,
Mann-Whitney on counts otherwise) and calls it "appears" / "more" (or "vanishes" / "fewer")
only when that test is significant, in its direction. The claim names one item in advance,
so the diff runs without Holm (its p_adjusted is the raw p). The rule reads the diff's
`status` and `p_adjusted` only: holds on "appears" or "more" at the slow side, does not
hold on "vanishes" or "fewer", is inconclusive on "same" (which means "no significant
change", never a shown equivalence). Each side errs in at most alpha of the experiments
where both sides take the transition at the same rate (tests/calibration).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ....core.verdicts import verdict_producer
from ....errors import LonglookError
from ..measured import Measured
from ..outcome import FAILS, HOLDS, UNCLEAR, Outcome, Where, name, not_run, p_text, where_text

UP, DOWN = ("appears", "more"), ("vanishes", "fewer")


@verdict_producer(
    "reproduce.state_shift",
    "a state-machine transition is shown more frequent on the slow side "
    "(holds) or less (does not hold), by states diff",
)
@dataclass(frozen=True)
class StateShift:
    """Per run counts of `item` (e.g. "SlowStart->ApplicationLimited") of `arm` in the
    `fast` cells against the `slow` ones (see the module's docstring)."""

    arm: str
    item: str
    dim: str
    fast: Any
    slow: Any
    protocol: str = "QUIC"
    # the other dimensions both sides share (e.g. one RTT and size of a grid): the claim's
    # cells are the ones that match, on each side of `dim`
    where: Where = field(default_factory=dict)
    # what the sides are called on the page (default: the dim's values)
    labels: tuple[str, str] | None = None

    def _label(self, side: int) -> str:
        return self.labels[side] if self.labels else str((self.fast, self.slow)[side])

    def reads(self) -> str:
        within = "".join(f", {k} {where_text(v)}" for k, v in self.where.items())
        return (
            f"{self.item} per run of {name(self.arm)} ({self.protocol}'s inferred state machine), {self.dim} = "
            f"{self._label(0)} vs {self._label(1)}{within}; holds if it appears or is more frequent at "
            f"{self._label(1)}"
        )

    def _side(self, m: Measured, value: Any) -> list[str]:
        return m.select({**self.where, self.dim: value})

    def claim_cells(self, m: Measured) -> list[str]:
        return self._side(m, self.fast) + self._side(m, self.slow)

    def evaluate(self, m: Measured) -> Outcome:
        from ...states.diff import compare
        from ...states.runs import load_runs

        if m.directory is None:
            return not_run("needs an experiment directory")
        fast, slow = self._side(m, self.fast), self._side(m, self.slow)
        if not fast or not slow:
            return not_run("the claim's cells are not in this experiment (reduced budget?)")
        try:
            # each side's cells by their ids: a link's name holds the selector's commas
            a = [r for c in fast for r in load_runs(m.directory, cell=c, arm=self.arm)]
            b = [r for c in slow for r in load_runs(m.directory, cell=c, arm=self.arm)]
        except LonglookError as e:
            return not_run(e.message)
        return self.judge(
            compare(
                a,
                b,
                self.protocol,
                label_a=self._label(0),
                label_b=self._label(1),
                alpha=m.statistics.alpha,
                holm=False,
            )
        )

    def judge(self, d) -> Outcome:
        """The claim from a states diff (analyses.states.diff.StateDiff), fast side = A."""
        if not d.measured:
            return not_run(d.not_measured_text())
        row = d.row(self.item)
        if not row:
            return Outcome(
                UNCLEAR,
                number=f"{self.item} in no run ({d.n_a}/{d.n_b} runs with state logs)",
                n=f"{d.n_a}/{d.n_b}",
                detail="the transition was never taken on either side",
                needs=f"not more rounds: taken in none of {d.n_a} + {d.n_b} runs, so the {self.dim} "
                f"or the link at which {self._label(1)} limits the sender would have to change",
            )
        status = row["status"]
        verdict = HOLDS if status in UP else FAILS if status in DOWN else UNCLEAR
        # the claim's p: the diff's decisive test, when it points the claim's way (B = slow above A)
        p_adj = float(row["p_adjusted"])
        p = p_adj if row.get("towards", 0) > 0 else 1.0
        decides = (
            "Fisher's exact test on presence" if row.get("test") == "fisher" else "Mann-Whitney U on the per-run counts"
        )
        return Outcome(
            verdict,
            number=f"{row['mean_a']:.2f} vs {row['mean_b']:.2f} per run (in {row['runs_a']}/"
            f"{row['n_a']} vs {row['runs_b']}/{row['n_b']} runs): {status}",
            n=f"{row['n_a']}/{row['n_b']}",
            p=p,
            p_text=p_text(p),
            detail=f"states diff: {decides} decides, alpha {d.alpha:g}, one item named in advance (no "
            "correction); p: that test's, when it points to more at the slow side",
        )
