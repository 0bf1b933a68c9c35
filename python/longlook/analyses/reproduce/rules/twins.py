"""`Twins`: one arm across twin cells, judged as `Cells` (see the package's docstring)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ....core.verdicts import verdict_producer
from ..measured import Measured
from ..outcome import (
    Outcome,
    Where,
    name,
    not_run,
    where_text,
)
from .cells import Cells
from .common import twin_pairs


@verdict_producer(
    "reproduce.twins",
    "a claim on twin cells holds / does not hold: one arm better, worse or the "
    "same with a dimension changed, judged as Cells",
)
@dataclass(frozen=True)
class Twins:
    """One arm across twin cells that differ only in `dim` (Kakhki §5, proxies: h2 through a
    TCP proxy vs the same h2 without it): per twin pair, the arm's runs in the `a` cell against
    those in the `b` cell, judged exactly as `Cells` judges two arms of one cell (the same
    test, Holm over the pairs, the same holds / does not hold rule)."""

    arm: str
    dim: str
    a: Any  # the dimension's value of the cells the claim is about (e.g. proxy "tcp")
    b: Any  # ... of their twins (e.g. "none")
    expect: str  # "a" (better with a), "b" or "same"
    where: Where = field(default_factory=dict)
    metric: str = "plt_ms"
    at_least: float = 0.5
    # dimensions that change with `dim` (a link's label with its rate)
    also_differ: tuple[str, ...] = ()

    def reads(self) -> str:
        cells = ", ".join(f"{k} {where_text(v)}" for k, v in self.where.items()) or "all cells"
        want = {"a": f"better with {self.a}", "b": f"better with {self.b}", "same": "the same"}[self.expect]
        return (
            f"{self.metric} of {name(self.arm)}, {self.dim} = {self.a} vs its twin with {self.b}; {cells}; "
            f"holds if {want} in >= {self.at_least:.0%} of the pairs"
        )

    def _pairs(self, m: Measured) -> list[tuple[str, str]]:
        return twin_pairs(
            m, m.select({**self.where, self.dim: self.a}), m.select({self.dim: self.b}), {self.dim, *self.also_differ}
        )

    def claim_cells(self, m: Measured) -> list[str]:
        """The claim's cells and their twins."""
        return [c for pair in self._pairs(m) for c in pair]

    def evaluate(self, m: Measured) -> Outcome:
        pairs = self._pairs(m)
        if not pairs:
            return not_run(f"no cell pair differing only in {self.dim} ({self.a} vs {self.b})")
        la, lb = f"{self.dim}={self.a}", f"{self.dim}={self.b}"
        runs = m.runs[m.runs["arm"] == self.arm] if not m.runs.empty else m.runs
        parts = []
        for ca, cb in pairs:  # the twin's runs become the other arm of the claim's cell
            parts.append(runs[runs["cell_id"] == ca].assign(arm=la))
            parts.append(runs[runs["cell_id"] == cb].assign(arm=lb, cell_id=ca))
        paired = Measured(
            cells=m.cells[m.cells["cell_id"].isin([a for a, _ in pairs])],
            runs=pd.concat(parts),
            statistics=m.statistics,
            exclude_flagged=m.exclude_flagged,
            failure_values=m.failure_values,
        )
        return Cells(la, lb, self.expect, metric=self.metric, at_least=self.at_least).evaluate(paired)
