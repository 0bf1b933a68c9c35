"""Synoptic-style temporal invariants over state traces (Beschastnikh et al., FSE'11).

For states a, b, over every trace (a trace = the sequence of states visited):
- a AlwaysFollowedBy b: every visit of a is followed, later in the trace, by a visit of b;
- a NeverFollowedBy b: no visit of a is ever followed by a visit of b;
- a AlwaysPrecedes b: every visit of b comes after some visit of a.
Like Synoptic, the trace's end is a TERMINAL event: "x AlwaysFollowedBy TERMINAL" is trivial
and left out; an invariant must hold in all traces (no statistical support threshold),
and we only report invariants whose left state occurs in at least one trace (`support`
= traces where the premise occurs, so vacuous truths are visible as support 0 and dropped).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product
from typing import Literal, Sequence

Kind = Literal["AlwaysFollowedBy", "NeverFollowedBy", "AlwaysPrecedes"]
KINDS: tuple[Kind, ...] = ("AlwaysFollowedBy", "NeverFollowedBy", "AlwaysPrecedes")
ARROWS = {"AlwaysFollowedBy": "→", "NeverFollowedBy": "↛", "AlwaysPrecedes": "←"}


@dataclass(frozen=True)
class Invariant:
    kind: Kind
    a: str
    b: str
    support: int  # traces in which the premise occurs

    def __str__(self) -> str:
        return f"{self.a} {self.kind} {self.b}"


def _always_followed_by(seq: Sequence[str], a: str, b: str) -> bool:
    # The last visit of a must have a b after it (then every earlier a does too).
    last_a = max((i for i, s in enumerate(seq) if s == a), default=None)
    return last_a is None or b in seq[last_a + 1 :]


def _never_followed_by(seq: Sequence[str], a: str, b: str) -> bool:
    first_a = next((i for i, s in enumerate(seq) if s == a), None)
    return first_a is None or b not in seq[first_a + 1 :]


def _always_precedes(seq: Sequence[str], a: str, b: str) -> bool:
    first_b = next((i for i, s in enumerate(seq) if s == b), None)
    return first_b is None or a in seq[:first_b]


_CHECK = {
    "AlwaysFollowedBy": _always_followed_by,
    "NeverFollowedBy": _never_followed_by,
    "AlwaysPrecedes": _always_precedes,
}


def holds(kind: Kind, a: str, b: str, traces: Sequence[Sequence[str]]) -> bool:
    return all(_CHECK[kind](seq, a, b) for seq in traces)


def mine_invariants(traces: Sequence[Sequence[str]]) -> list[Invariant]:
    """All invariants of the three kinds that hold in every trace, over the states seen."""
    traces = [list(t) for t in traces]
    alphabet = sorted({s for t in traces for s in t})
    found = []
    for kind, a, b in product(KINDS, alphabet, alphabet):
        premise = b if kind == "AlwaysPrecedes" else a
        if kind == "AlwaysPrecedes" and a == b:
            continue  # a can never precede its own first visit: never holds, says nothing
        support = sum(premise in t for t in traces)
        if support and holds(kind, a, b, traces):
            found.append(Invariant(kind, a, b, support))
    return found
