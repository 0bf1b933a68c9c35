"""The rules: how a claim on arms and cells turns measured runs into our number, its n and p, and a
verdict (the rules on video sessions are in `pair_share`, `granger_share`, `byte_share` and
`ate`, on state machines in `stateshift`).

Every test is the core's (core.stats: Welch or Mann-Whitney as the scenario's [statistics]
say, with their intervals, survivorship and not-testable outcomes, Holm from core.multiple)
or a maintained package's; nothing is re-implemented here. Flows of one fairness run share a
bottleneck, so they are compared paired by run (core.stats' paired t on the per-run log
ratio), never as independent samples. Each rule's p is the claim's own test (outcome.py).

- `Cells`: per selected cell, arm a against arm b. `expect = "a"` (a better, by the metric's
  direction), `"b"`, `"same"` (no difference beyond +-tolerance_pct) or `"white"` (the
  paper's white cell: no difference significant at alpha, and shown within +-tolerance_pct).
  A direction cell agrees when its verdict (the scenario's test, Holm across the claim's
  cells, at alpha) is the expected one, is against when it is significant the other way or
  when its gain is shown short of the claim's resolution (tolerance_pct, 5% unless the
  registry says: the one-sided test of "better by tolerance_pct", Holm across the cells, at
  alpha), so that a claim whose other way cannot happen (0-RTT is never the slower) can
  still fail. A white cell is against when its difference is significant at alpha. A band
  of shares (`at_most`, "about half") holds only when no more than its top could agree,
  and fails when more do. A "same" cell agrees
  when two one-sided tests show |difference| < tolerance (equivalence, never from a test
  that is merely not significant) and is against when the difference is shown beyond it,
  each with Holm across the claim's cells at the level of the scenario's intervals,
  (1 - confidence) / 2 a side; its interval is shown at the family's level (Bonferroni,
  1 - (1 - confidence) / cells), which Holm's verdicts can only be more lenient than. Every
  selected cell is in the denominator, those without data too: the claim holds when at
  least `at_least` of all its cells agree, does not hold when so many are against that it
  could not (against > cells - needed), else it is inconclusive. p: the Holm-adjusted p of
  the needed-th cell, in the claim's direction.
- `Ratio`: mean(a) / mean(b) in one cell against the paper's factor (or range), on the
  interval: holds when the whole interval is at or above the factor, does not hold when it
  is wholly below, else inconclusive (a point estimate near the factor decides nothing). p:
  the one-sided test of the ratio against the factor (bounds.py), below (1 - confidence) / 2
  exactly when the interval clears it.
- `Value`: one arm's mean against a stated range, on its t-interval; p: the larger of the
  two one-sided t tests against the range's ends. Rounds whose run failed are missing
  values: with one, the mean of the survivors decides nothing.
- `Survives`: the rounds of arm a that completed against arm b's (Fisher's exact test,
  one-sided), every round of a complete for "holds" (`survives.py`).
- `Twins`: one arm across twin cells, judged as `Cells`. `Shrinks`: the interaction of log
  means across twin cells, Holm over the pairs.

Simulated (tests/calibration/test_reproduce_rules.py: lognormal rounds, sigma 0.03-0.5, 3-30
per arm, runs failing at 0-10%), the rate of "holds" where the claim is false at its edge /
of "does not hold" where it is true at its edge: a direction claim over 4 cells 0.8% / 1.6%
(alpha 1%; its edge is a gain of exactly the resolution); a white cell 0.4% / 0.8% (2.5%);
"the same" over 4 cells 1.6% / 2.0% (level 2.5%; with uncorrected 95% intervals
the first was 6.8%); a ratio or range at its bound 1.0-2.0% (2.5%), paired flows 1.6% / 2.0%;
twins 0% / 0%, shrinks 0.3% / 0.7% (1%); a value at an end of its range 2.3% / 3.0% (2.5%,
Student's interval on right-skewed values: see `Value`).
"""

from __future__ import annotations

from ..outcome import FAILS, HOLDS, NOT_RUN, UNCLEAR, Outcome, above, contains, lacks, not_run
from .ate import Ate
from .byte_share import ByteShare
from .granger_share import GrangerShare
from .pair_share import PairShare
from .stateshift import StateShift
from .cells import Cells
from .ratio import Ratio
from .shrinks import Shrinks, interaction
from .survives import Survives
from .twins import Twins
from .value import Value

__all__ = [
    "Ate",
    "ByteShare",
    "Cells",
    "FAILS",
    "GrangerShare",
    "HOLDS",
    "NOT_RUN",
    "Outcome",
    "PairShare",
    "Ratio",
    "Rule",
    "Shrinks",
    "StateShift",
    "Survives",
    "Twins",
    "UNCLEAR",
    "Value",
    "above",
    "contains",
    "lacks",
    "interaction",
    "not_run",
]

Rule = Cells | Ratio | PairShare | GrangerShare | ByteShare | Value | Shrinks | Twins | StateShift | Ate | Survives
