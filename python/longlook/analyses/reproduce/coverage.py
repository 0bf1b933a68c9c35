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


def _coordinates(m: Measured, like: Measured | None = None) -> dict[str, str]:
    """Each cell's place on the axes of `like` (default: its own grid): the dimensions but the
    link's label, and the link settings, that take more than one value there."""
    ref = m if like is None else like
    dims, links = list(ref.cells["dims"]), list(ref.cells["link_settings"])
    axes = sorted(k for k in {k for d in dims for k in d} if k != "link" and len({repr(d.get(k)) for d in dims}) > 1)
    link_axes = sorted(k for k in {k for s in links for k in s} if len({repr(s.get(k)) for s in links}) > 1)
    return {
        c: json.dumps([[d.get(k) for k in axes], [s.get(k) for k in link_axes]], default=str)
        for c, d, s in zip(m.cells["cell_id"], m.cells["dims"], m.cells["link_settings"])
    }


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
    "trace",
    "middlebox",
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
    # the figure's axes first, then what else varies but the labels that repeat them
    shown = [k for k in AXES if k in varies] + [k for k in varies if k not in AXES and k not in ("link", "workload")]
    parts = []
    for k in shown or varies:
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
    # a cell of the figure is where it lies on the figure's axes (the dimensions and link
    # settings that vary over the paper's grid), not its id (a link's label depends on the
    # grid's other links) nor what a budget shortens (a clip, a download, the flows)
    at = _coordinates(figure)
    cells = claim.rule.claim_cells(figure)
    ran_at = {k for c, k in _coordinates(ran, like=figure).items() if c in set(claim.rule.claim_cells(ran))}
    kept = {c for c in cells if at[c] in ran_at}
    out = [c for c in cells if c not in kept]
    if not cells:
        return [], ""
    if not out:
        return [], "its one cell" if len(cells) == 1 else f"all {len(cells)} cells of its figure"
    return out, (
        f"{len(cells) - len(out)} of the {len(cells)} cells of its figure; the {budget} budget leaves out "
        f"{len(out)} ({left_out_text(figure, cells, kept)})"
    )
