"""`Ratio`: mean(a) / mean(b) in one cell against the paper's factor or range, on its
interval (see the package's docstring)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field


from ....core.stats import (
    CellComparison,
    Verdict,
)
from ....core.status import counted_runs
from ....core.verdicts import verdict_producer
from .. import needed
from ..bounds import paired_sd, ratio_p
from ..measured import Measured
from ..outcome import (
    FAILS,
    HOLDS,
    UNCLEAR,
    Outcome,
    Where,
    name,
    needs_text,
    not_run,
    num,
    p_text,
    where_text,
)
from .common import _cell_row, _compare, _test_text


def _ratio_target(ratio: float, low: float, high: float | None) -> tuple[float, float]:
    """(bound, true ratio) a ratio claim is planned at: the nearest bound moved by the
    resolution to the side the estimate lies on."""
    if high is None or abs(math.log(ratio / low)) <= abs(math.log(ratio / high)):
        bound = low
        inside = ratio >= low
    else:
        bound = high
        inside = ratio <= high
    step = 1 + needed.RATIO_RESOLUTION
    outward = bound / step if bound == low else bound * step
    inward = bound * step if bound == low else bound / step
    return bound, inward if inside else outward


@verdict_producer(
    "reproduce.ratio",
    "a ratio claim holds / does not hold: mean(a)/mean(b) at least a factor (or inside a range), on its interval",
)
@dataclass(frozen=True)
class Ratio:
    a: str
    b: str
    at_least: float
    where: Where = field(default_factory=dict)
    metric: str = "plt_ms"
    unit: str = "ms"
    flows: bool = False
    at_most: float | None = None  # a range claim (Langley §6.7: 2x to 3.5x): the interval inside it
    # a CPU-per-byte ratio holds only at the load it was measured at (a client under a budget
    # batches and spends less per MB): the party whose busy share of a core the row states
    load: str = ""  # "client" or "server": its <party>_cpu_share, medians per arm

    def reads(self) -> str:
        cells = ", ".join(f"{k} {where_text(v)}" for k, v in self.where.items()) or "the one cell"
        want = f">= {self.at_least:g}x" if self.at_most is None else f"within {self.at_least:g}x..{self.at_most:g}x"
        return f"{self.metric}, mean {name(self.a)} / mean {name(self.b)}; {cells}; holds if significant and {want}"

    def claim_cells(self, m: Measured) -> list[str]:
        return m.select(self.where)[:1]

    def evaluate(self, m: Measured) -> Outcome:
        cells = m.select(self.where)
        if not cells:
            return not_run("the claim's cell is not in this experiment (reduced budget?)")
        # relative difference (mean_a - mean_b) / mean_b whatever the metric's direction
        c = _compare(m, self.a, self.b, cells[:1], self.metric, False, self.flows, holm=False)[0]
        row = _cell_row(c, "")
        if c.verdict in (Verdict.INSUFFICIENT, Verdict.NOT_TESTABLE, Verdict.SURVIVORSHIP):
            return Outcome(UNCLEAR, number=c.verdict_text, n=f"{c.a.n}/{c.b.n}", detail=c.reason, cells=[row])
        level = (1 - c.confidence) / 2
        ratio = 1 + c.percent_difference / 100
        lo, hi = 1 + c.ci_low / 100, 1 + c.ci_high / 100
        ci = " [unbounded]" if math.isnan(lo) else f" [{lo:.2f}, {hi:.2f}]"
        what = "geometric mean of the per-run ratios" if c.paired else "ratio of means"
        number = f"{ratio:.2f}x{ci} ({num(c.a.mean)} vs {num(c.b.mean)} {self.unit})"
        if self.load:
            number += load_text(m, c.cell_id, self.a, self.b, self.load)
        top = math.inf if self.at_most is None else self.at_most
        if not math.isnan(lo) and lo >= self.at_least and hi <= top:
            verdict = HOLDS
        elif not math.isnan(hi) and (hi < self.at_least or lo > top):
            verdict = FAILS
        else:
            verdict = UNCLEAR
        # the claim's own p: above the factor (and below the range's top)
        p = ratio_p(c, self.at_least, above=True)
        if self.at_most is not None:
            p = max(p, ratio_p(c, self.at_most, above=False))
        span = (
            f"at or above the paper's factor {self.at_least:g}, fails when wholly below"
            if self.at_most is None
            else f"inside the paper's {self.at_least:g}x..{self.at_most:g}x, fails when wholly outside"
        )
        needs = self._needs(c, ratio, level) if verdict == UNCLEAR else ""
        claim_test = (
            f"one-sided test of the ratio > {self.at_least:g}"
            if self.at_most is None
            else f"the larger of the one-sided tests > {self.at_least:g} and < {self.at_most:g}"
        )
        detail = (
            f"{_test_text(m, [c])}; {what}, {c.confidence:.0%} interval ({c.interval}); holds when the whole "
            f"interval is {span}; p: {claim_test} (holds when below {level:g})"
        )
        if c.small_n:
            detail += f"; n = {min(c.a.n, c.b.n)} < 10: the interval rests on its method's simulated coverage"
        return Outcome(
            verdict,
            number=number,
            n=f"{c.a.n}/{c.b.n}",
            p=p,
            p_text=p_text(p),
            detail=detail,
            cells=[row],
            against=[c.cell_id] if verdict == FAILS else [],
            needs=needs,
        )

    def _needs(self, c: CellComparison, ratio: float, level: float) -> str:
        if math.isnan(ratio) or ratio <= 0:
            return ""
        bound, target = _ratio_target(ratio, self.at_least, self.at_most)
        if c.paired:
            sd = paired_sd(c)
            n = None if sd is None else needed.paired_rounds(c.a.n, sd, bound, target, level=level)
            unit = "runs"
        else:
            n = needed.ratio_rounds(c.a.n, c.a.mean, c.a.sd, c.b.n, c.b.mean, c.b.sd, bound, target, level=level)
            unit = "rounds per arm"
        return needs_text(
            [n],
            1,
            f"{unit} (80% power if the true ratio is {target:.3g}x, "
            f"{needed.RATIO_RESOLUTION:.0%} from {bound:g}x the estimate's way)",
            "not estimable (no spread, or beyond 100,000)",
        )


def load_text(m: Measured, cell_id: str, a: str, b: str, party: str) -> str:
    """ "; at h3 0.41 vs h2 0.18 cores busy (the client's ...)": the load a CPU ratio was
    measured at, from the counted runs of its cell."""
    column = f"{party}_cpu_share"
    if m.runs.empty or column not in m.runs:
        return f"; the {party}'s load not recorded"
    counted = counted_runs(m.runs, column, exclude_flagged=m.exclude_flagged)
    medians = counted[counted["cell_id"] == cell_id].groupby("arm")[column].median()
    if a not in medians or b not in medians or math.isnan(medians[a]) or math.isnan(medians[b]):
        return f"; the {party}'s load not recorded"
    budget = m.dims(cell_id).get("client_cpu", "unlimited") if party == "client" else "unlimited"
    where = "no CPU budget" if budget in ("unlimited", None) else f"CPU budget {budget}"
    return (
        f"; at {name(a)} {medians[a]:.2f} vs {name(b)} {medians[b]:.2f} cores busy (the {party}'s CPU over its "
        f"run, medians; {where})"
    )
