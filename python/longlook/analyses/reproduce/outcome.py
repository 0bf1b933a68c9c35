"""What a claim's rule returns (an `Outcome`: verdict, our number, n, the claim's own p,
how it was reached, what more data would take) and the small texts every rule writes.

`p` is the p-value of the claim's own test, the one whose smallness makes the claim hold:
for "at least 2x" the one-sided test against 2, for "within +-5%" the two one-sided tests
(TOST), for "a better in 3 of 4 cells" the Holm-adjusted p of the third cell in the claim's
direction, for a share the exact binomial test against its threshold. A test of "no
difference" is never shown in its place.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from ...render.names import display_name

HOLDS, FAILS, UNCLEAR, NOT_RUN = "holds", "does not hold", "inconclusive", "not run"


@dataclass
class Outcome:
    """A claim measured: our number in words, n, p, the verdict and how it was reached."""

    verdict: str
    number: str = "-"
    n: str = "-"
    p: float | None = None  # the claim's own test (see the module's docstring)
    p_text: str = "-"
    detail: str = ""
    cells: list[dict] = field(default_factory=list)  # per cell: id, n, diff, p, judged
    against: list[str] = field(default_factory=list)  # cells against the claim (to explain)
    # inconclusive: the rounds (sessions for a share) at which the claim's test would decide
    # it with 80% power at the claim's resolution (needed.py), or why no number would
    needs: str = ""
    # the cells of the claim's figure (its scenario at the paper budget) this budget did not
    # measure, and the coverage in words ("4 of the figure's 28 cells; ...")
    left_out: list[str] = field(default_factory=list)
    coverage: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "number": self.number,
            "n": self.n,
            "p": None if self.p is None or math.isnan(self.p) else self.p,
            "p_text": self.p_text,
            "detail": self.detail,
            "cells": self.cells,
            "against": self.against,
            "needs": self.needs,
            "left_out": self.left_out,
            "coverage": self.coverage,
        }


def not_run(reason: str) -> Outcome:
    return Outcome(NOT_RUN, detail=reason)


def p_text(p: float | None) -> str:
    if p is None or math.isnan(p):
        return "-"
    return "<0.001" if p < 0.001 else f"{p:.2g}" if p < 0.1 else f"{p:.2f}"


def num(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def name(label: str) -> str:
    return display_name(label)


def kth_smallest(ps: Sequence[float], k: int) -> float:
    """The k-th smallest p (1-based), nan counted as 1: a claim that needs k cells holds at
    level a exactly when this is below a."""
    s = sorted(1.0 if p is None or math.isnan(p) else float(p) for p in ps)
    return s[k - 1] if 0 < k <= len(s) else 1.0


def ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def needs_text(values: Sequence[int | None], missing: int, unit: str, why_none: str, no_data: int = 0) -> str:
    """The n at which `missing` more cells (or the one statistic) would turn: the missing-th
    smallest of their n; `why_none` when too few have one; `no_data`: cells without
    counted runs, which must be measured before anything is known."""
    finite = sorted(v for v in values if v is not None)
    if missing <= 0:
        return ""
    if len(finite) < missing and no_data:
        return (
            f"{no_data} cell(s) without 2 counted runs per arm: measure them first (the standard budget "
            "re-measures flagged runs)"
        )
    if len(finite) < missing:
        return why_none
    return f"~{finite[missing - 1]:,} {unit}"


Where = dict[str, Any]  # dim -> value, list of values, or predicate


def where_text(v: Any) -> str:
    if callable(v):
        return getattr(v, "text", "matching")
    if isinstance(v, (list, tuple)):
        return "in " + ", ".join(map(str, v))
    return f"= {v}"


def above(x: float) -> Callable[[Any], bool]:
    """A `where` predicate: the dimension (a number; None = 0) is above `x`."""

    def match(v: Any) -> bool:
        return (v or 0) > x

    match.text = f"> {x:g}"  # type: ignore[attr-defined]
    return match


def lacks(*texts: str) -> Callable[[Any], bool]:
    """A `where` predicate: the dimension (a label) contains none of `texts`."""

    def match(v: Any) -> bool:
        return isinstance(v, str) and not any(t in v for t in texts)

    match.text = "without " + " or ".join(map(repr, texts))  # type: ignore[attr-defined]
    return match


def contains(*texts: str) -> Callable[[Any], bool]:
    """A `where` predicate: the dimension (a label) contains one of `texts`."""

    def match(v: Any) -> bool:
        return isinstance(v, str) and any(t in v for t in texts)

    match.text = "contains " + " or ".join(map(repr, texts))  # type: ignore[attr-defined]
    return match
