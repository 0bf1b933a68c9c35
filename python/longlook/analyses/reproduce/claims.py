"""A claim of a paper, as longlook tests it, and the shipped scenario it reads.

Claims that read one experiment share its budget: a scenario is run once per budget and every
claim on it reads the same directory, so the reduced budget is declared per scenario
(`ShippedScenario.short`: overrides laid over the file before validation, core.spec.
apply_overrides), and a claim whose cells the short budget drops says "not run".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .rules import Rule

SCENARIOS_DIR = Path(__file__).resolve().parents[4] / "scenarios"
BUDGETS = ("short", "standard", "paper")


@dataclass(frozen=True)
class ShippedScenario:
    file: str  # in scenarios/
    short: dict[str, Any]  # overrides for --budget short (the paper budget runs the file as is)
    short_note: str  # what the short budget keeps, in words
    # --budget standard: the short budget's grid with the rounds (and lengths) that make its
    # claims conclusive on one 2-core machine (registry.STANDARD); None: the short budget's
    standard: dict[str, Any] | None = None
    standard_note: str = ""

    @property
    def path(self) -> Path:
        return SCENARIOS_DIR / self.file

    @property
    def name(self) -> str:
        return Path(self.file).stem

    def overrides(self, budget: str) -> dict[str, Any] | None:
        if budget == "standard":
            return {**self.short, **(self.standard or {})}
        return self.short if budget == "short" else None


@dataclass(frozen=True)
class Explain:
    """What explains a claim that does not hold: the experiment's report section (`anchor`:
    "states" = state machines, false losses and cwnd timelines per cell; "fairness" = Table 4,
    throughput and cwnd timelines; "video" = QoE per cell and buffer timelines), and for page
    loads the states analysis of the first cell against the claim (cwnd timeline, state
    machines, losses) with its diff against the cell's unimpaired twin when it has one."""

    anchor: str = "states"
    states: bool = True
    fallback: bool = False  # Chaudhary: the fallback analysis (Fig. 12, per-session Granger tests)


@dataclass(frozen=True)
class Claim:
    id: str
    paper: str  # "Kakhki IMC'17", "Chaudhary et al.", "Mininet reproduction"
    where: str  # figure / table / section
    statement: str  # the paper's words (or a close summary)
    paper_number: str  # the number it gave
    scenario: str  # a key of registry.SCENARIOS
    rule: Rule
    mininet: str = ""  # the Mininet reproduction's verdict on the same claim
    explain: Explain = field(default_factory=Explain)
    note: str = ""  # how our test differs from the paper's

    def reads(self) -> str:
        return self.rule.reads()
