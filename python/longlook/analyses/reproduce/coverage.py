"""Which of a claim's cells a budget measures: a claim on a figure is stated on the whole
figure (its scenario at the paper budget, the paper's grid), and a smaller budget tests it on
the cells it keeps. The cells it leaves out are named beside the verdict, so that a claim
tested on a corner of its figure says so (`Outcome.left_out`, `Outcome.coverage`).
"""

from __future__ import annotations

import json

import pandas as pd

from ...core.spec import load_scenario
from ...errors import LonglookError
from .claims import Claim, ShippedScenario
from .measured import Measured, grid


_GRIDS: dict[tuple[str, str], Measured] = {}


def _grid(shipped: ShippedScenario, budget: str | None) -> Measured:
    """The scenario's cells at a budget (None: the paper's, the file as shipped)."""
    overrides = shipped.overrides(budget) if budget else None
    key = (str(shipped.path), json.dumps(overrides, sort_keys=True, default=str))
    if key not in _GRIDS:
        _GRIDS[key] = Measured(cells=grid(load_scenario(shipped.path, overrides)), runs=pd.DataFrame())
    return _GRIDS[key]


def _values(v: object) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


# the dimensions a figure's axes are, named first when they vary (a link's label and a
# workload's repeat them)
AXES = (
    "rate_mbit",
    "rtt_ms",
    "loss",
    "object_size",
    "object_count",
    "matchup",
    "start",
    "n_conn",
    "client_cpu",
    "proxy",
)


def left_out_text(figure: Measured, cells: list[str], kept: set[str]) -> str:
    """The left-out cells in words: per dimension that varies over the figure (its axes when
    they do), the values no kept cell has; else how many cells."""
    dims = {c: figure.dims(c) for c in cells}
    out = sorted(set(cells) - kept)
    if not kept & set(cells):
        return "all of them"
    names = sorted({k for d in dims.values() for k in d})
    varies = [k for k in names if len({_values(d.get(k)) for d in dims.values()}) > 1]
    axes = [k for k in AXES if k in varies]
    parts = []
    for k in axes or varies:
        values = list(dict.fromkeys(_values(d.get(k)) for d in dims.values()))
        if len(values) < 2:
            continue
        have = {_values(dims[c].get(k)) for c in kept if c in dims}
        gone = [v for v in values if v not in have]
        if gone:
            parts.append(f"{k} {', '.join(gone)}")
    return "; ".join(parts) if parts else f"{len(out)} combinations of the kept values"


def coverage(claim: Claim, shipped: ShippedScenario, budget: str) -> tuple[list[str], str]:
    """(the figure's cells this budget leaves out, the coverage in words)."""
    if claim.missing:
        return [], f"needs cells no budget of its scenario has: {claim.missing}"
    try:
        figure = _grid(shipped, None)
        ran = _grid(shipped, budget) if budget != "paper" else figure
    except LonglookError as e:
        return [], f"its scenario's grid could not be read ({e.message})"
    # a cell is the same cell in both grids by what it is, not by its id (a link's label
    # names only what differs between the grid's links)
    key = lambda m: dict(zip(m.cells["cell_id"], m.cells["key"]))  # noqa: E731
    fig_key, ran_key = key(figure), key(ran)
    cells = claim.rule.claim_cells(figure)
    ran_keys = {ran_key[c] for c in claim.rule.claim_cells(ran)}
    kept = {c for c in cells if fig_key[c] in ran_keys}
    out = [c for c in cells if c not in kept]
    if not cells:
        return [], ""
    if not out:
        return [], "its one cell" if len(cells) == 1 else f"all {len(cells)} cells of its figure"
    return out, (
        f"{len(cells) - len(out)} of the {len(cells)} cells of its figure; the {budget} budget leaves out "
        f"{len(out)} ({left_out_text(figure, cells, kept)})"
    )
