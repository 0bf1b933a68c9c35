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
    short: dict[str, Any]  # overrides for --budget short (the paper budget runs the file as is, but see `paper`)
    short_note: str  # what the short budget keeps, in words
    # --budget standard: the short budget's grid with the rounds (and lengths) that make its
    # claims conclusive on one 2-core machine (registry.STANDARD); None: the short budget's
    standard: dict[str, Any] | None = None
    standard_note: str = ""
    # --budget paper: the file as it is, or only the part of its grid the papers measured
    # (registry.PAPER: cells of our own design that no claim reads are left to the file)
    paper: dict[str, Any] | None = None
    paper_note: str = ""

    @property
    def path(self) -> Path:
        return SCENARIOS_DIR / self.file

    @property
    def name(self) -> str:
        return Path(self.file).stem

    def overrides(self, budget: str) -> dict[str, Any] | None:
        if budget == "standard":
            return {**self.short, **(self.standard or {})}
        return self.short if budget == "short" else self.paper


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


# what a row is: a finding of a paper (counted in the share of claims conclusive), or one
# of ours (a hypothesis, an intervention, a check of our own client against a paper's
# design): tested the same way, shown in a table of its own, never counted
PAPER, OURS = "paper", "ours"


@dataclass(frozen=True)
class Also:
    """The same finding in another paper: one row, both papers named (the row's test is the
    first paper's; this one's number and words are shown beside it)."""

    paper: str
    where: str
    quote: str  # its sentence, verbatim from our copy
    number: str
    note: str = ""  # how its setting differs from the row's test


@dataclass(frozen=True)
class Claim:
    id: str
    paper: str  # "Kakhki IMC'17", "Chaudhary et al.", "Mininet reproduction"
    where: str  # section, figure, table (of our copy)
    statement: str  # the finding in our words: workload, path, direction, magnitude
    paper_number: str  # the number it gave, or "no number in our copy"
    scenario: str  # a key of registry.SCENARIOS
    rule: Rule
    mininet: str = ""  # the Mininet reproduction's verdict on the same claim
    explain: Explain = field(default_factory=Explain)
    note: str = ""  # how our test differs from the paper's
    # the paper's sentence, verbatim from our copy (tests/unit/analyses/test_reproduce_registry.py
    # finds it there); `quote_in`: the paper whose text it is in, when not the claim's own (a
    # finding our copy of Kakhki lacks, quoted by the Mininet reproduction)
    quote: str = ""
    quote_in: str = ""
    kind: str = PAPER
    also: tuple[Also, ...] = ()
    # cells the claim needs that its scenario's grid does not have at any budget, in words:
    # such a claim says "not run" until the scenario has them
    missing: str = ""
    # its cells break QUIC by design (a middlebox): the claim is about what that does. Any
    # other claim comparing QUIC with TCP must not read such cells, where QUIC cannot win
    breaks_quic: bool = False

    def reads(self) -> str:
        return self.rule.reads()


@dataclass(frozen=True)
class FieldFinding:
    """A finding a paper reports only from the field (a production fleet's rates, the share
    of users behind a firewall): listed beside the claims, not tested, never counted."""

    id: str
    paper: str
    where: str
    quote: str
    paper_number: str
    why: str  # why a testbed cannot measure it
