"""What the rules on arms and cells share: the claim's comparisons (core.stats, Holm across
the claim's cells), and their rows and words for the output."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ....core.trace_phase import paired_cells
from ....core.stats import (
    CellComparison,
    compare_cells,
    options,
)
from ..measured import Measured


def _compare(
    m: Measured,
    a: str,
    b: str,
    cells: list[str],
    metric: str,
    lower_is_better: bool,
    flows: bool,
    holm: bool,
    confidence: float | None = None,
) -> list[CellComparison]:
    runs = m.flow_runs() if flows else m.runs
    if runs.empty or metric not in runs:
        runs = (
            runs.assign(**{metric: np.nan})
            if not runs.empty
            else pd.DataFrame(
                columns=["cell_id", "arm", "round", "status", "protocol_requested", "protocol_negotiated", metric]
            )
        )
    opts = {**options(m.statistics, exclude_flagged=m.exclude_flagged), "holm": holm}
    if confidence is not None:
        opts["confidence"] = confidence
    return compare_cells(
        runs,
        [(a, b)],
        cell_ids=cells,
        metric=metric,
        lower_is_better=lower_is_better,
        pair_on="run_id" if flows else None,
        failure_value=m.failure_values.get(metric),
        # cells whose rounds met one stretch of a trace each: paired, as the report's
        paired_cells=set() if flows else paired_cells(runs),
        **opts,
    )


def _test_text(m: Measured, cs: list[CellComparison]) -> str:
    tests = sorted({c.test_name for c in cs if not math.isnan(c.p_value)}) or [
        "Welch's t-test" if m.statistics.test == "welch" else "Mann-Whitney U"
    ]
    return f"{', '.join(tests)}, alpha {m.statistics.alpha:g}"


def _cell_row(c: CellComparison, judged: str, **extra: Any) -> dict:
    return {
        "cell_id": c.cell_id,
        "n_a": c.a.n,
        "n_b": c.b.n,
        "mean_a": c.a.mean,
        "mean_b": c.b.mean,
        "diff_pct": c.percent_difference,
        "ci": [c.ci_low, c.ci_high],
        "confidence": c.confidence,
        "interval": c.interval,
        "p": c.p_value,
        "p_adjusted": c.p_adjusted,
        "verdict": c.verdict_text,
        "completion": [str(c.completion_a or ""), str(c.completion_b or "")],
        "judged": judged,
        **extra,
    }


def _n_text(cs: list[CellComparison]) -> str:
    if len(cs) == 1:
        return f"{cs[0].a.n}/{cs[0].b.n}"
    lo = min(min(c.a.n, c.b.n) for c in cs)
    hi = max(max(c.a.n, c.b.n) for c in cs)
    return f"{lo}/{lo} per cell" if lo == hi else f"{lo}-{hi} per arm and cell"


def _a_better(c: CellComparison) -> bool | None:
    """Which way the cell's test points (whatever its p): True when a is the better arm."""
    if c.direction == 0:
        return None
    return (c.direction < 0) == c.lower_is_better


def twin_pairs(m: Measured, cells: list[str], others: list[str], skip: set[str]) -> list[tuple[str, str]]:
    """(cell, its twin among `others`) for each of `cells` that has one: the cell whose
    dimensions are the same but for those in `skip` (the one the claim varies, and any
    that change with it)."""
    key = lambda c: tuple(sorted((k, repr(v)) for k, v in m.dims(c).items() if k not in skip))  # noqa: E731
    twins = {key(c): c for c in others}
    return [(c, twins[key(c)]) for c in cells if key(c) in twins]
