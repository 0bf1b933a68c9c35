"""Cells of two experiments paired by their parameters, not by their id text.

A cell's parameters are its dims (core.spec CellBase.dims), its settings and its link
profile, flattened to dotted keys (`max_cwnd_packets`, `options.max_cwnd_packets`,
`link.delay_ms`). Labels derived from them (`link`, `workload`, the profile's name) are
left out, so a renamed profile still matches. Two experiments compare when their cells
pair one to one on these parameters and their arms are the same; a parameter that is the
change under test (a knob turned in every cell: MACW 430 -> 107) is named with `vary` and
left out of the matching. Anything else that differs is an error naming what differs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from ...core.spec import ScenarioBase
from ...errors import LonglookError
from .experiments import Side

LABEL_DIMS = ("link", "workload")  # text made from other dims


def flatten(d: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(d, dict):
        return {prefix: d}
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        out.update(flatten(v, key) if isinstance(v, dict) else {key: v})
    return out


def cell_parameters(dims: dict, settings: dict | None, link_profile: dict | None) -> dict[str, Any]:
    params = {k: v for k, v in (dims or {}).items() if k not in LABEL_DIMS}
    params.update(flatten(settings or {}))
    link = {k: v for k, v in (link_profile or {}).items() if k != "name"}
    params.update(flatten(link, "link"))
    return params


def scenario_parameters(scenario: ScenarioBase) -> dict[str, Any]:
    """What the whole scenario sets beyond its grid: each arm's definition and the kind's
    scalar fields (client, ...). Lists and tables are the grid, seen through the cells;
    rounds, seed, statistics and the like do not change what a run measures."""
    common = set(ScenarioBase.model_fields)
    params = {f"arms.{a.label}.{k}": v for a in scenario.arm_list() for k, v in a.model_dump().items() if k != "label"}
    for name, value in scenario.model_dump().items():
        if name not in common and not isinstance(value, (list, dict)):
            params[name] = value
    return params


def _matches(key: str, vary: Iterable[str]) -> bool:
    return any(key == v or key.endswith(f".{v}") for v in vary)


def _canonical(params: dict[str, Any], vary: Sequence[str]) -> str:
    return json.dumps({k: v for k, v in params.items() if not _matches(k, vary)}, sort_keys=True, default=str)


@dataclass(frozen=True)
class CellPair:
    base_id: str
    cand_id: str
    position: int  # the base cell's place in its grid
    dims: dict[str, Any]  # the base cell's dims


def _side_params(side: Side) -> list[tuple[str, int, dict, dict[str, Any]]]:
    return [
        (r["cell_id"], int(r["position"]), r["dims"], cell_parameters(r["dims"], r["settings"], r["link_profile"]))
        for _, r in side.cells.iterrows()
    ]


def _value_sets(rows, key):
    return sorted({json.dumps(p.get(key), default=str) for *_, p in rows})


def _describe_differences(base_rows, cand_rows, vary) -> list[str]:
    """Parameters whose values differ between the sides, shortest name of each change."""
    keys = dict.fromkeys(k for *_, p in [*base_rows, *cand_rows] for k in p)
    changes: dict[tuple, str] = {}
    for k in keys:
        if _matches(k, vary):
            continue
        b, c = _value_sets(base_rows, k), _value_sets(cand_rows, k)
        if b != c:
            sig = (tuple(b), tuple(c))
            if sig not in changes or len(k) < len(changes[sig]):
                changes[sig] = k
    return [f"{k}: {', '.join(b)} vs {', '.join(c)}" for (b, c), k in changes.items()]


def _vary_hint(differences: list[str]) -> str:
    names = ", ".join(f"--vary {d.split(':', 1)[0]}" for d in differences[:3])
    return f"if that is the change under test, add {names}; otherwise compare experiments of the same scenario"


def _check_scenarios(base: Side, cand: Side, vary: Sequence[str]) -> None:
    if base.experiment["kind"] != cand.experiment["kind"]:
        raise LonglookError(
            f"BASE and CAND are different kinds of experiment: {base.experiment['kind']} vs {cand.experiment['kind']}",
            hint="compare two runs of the same scenario",
        )
    if base.arms != cand.arms and sorted(base.arms) != sorted(cand.arms):
        raise LonglookError(
            f"BASE and CAND have different arms: {', '.join(base.arms)} vs {', '.join(cand.arms)}",
            hint="compare two runs of the same scenario",
        )
    b, c = scenario_parameters(base.scenario), scenario_parameters(cand.scenario)
    diffs = [
        f"{k}: {b.get(k)!r} vs {c.get(k)!r}"
        for k in dict.fromkeys([*b, *c])
        if b.get(k) != c.get(k) and not _matches(k, vary)
    ]
    if diffs:
        raise LonglookError("BASE and CAND are different scenarios: " + "; ".join(diffs), hint=_vary_hint(diffs))


def match_cells(base: Side, cand: Side, vary: Sequence[str] = ()) -> list[CellPair]:
    """Pair every cell of BASE with the CAND cell of the same parameters (less `vary`)."""
    _check_scenarios(base, cand, vary)
    base_rows, cand_rows = _side_params(base), _side_params(cand)
    for name, rows in (("BASE", base_rows), ("CAND", cand_rows)):
        keys = [_canonical(p, vary) for *_, p in rows]
        if len(set(keys)) != len(keys):
            raise LonglookError(
                f"{name}: cells differ only in {', '.join(vary)}: it is a dimension "
                f"of the grid, not a change between the experiments",
                hint="--vary names a parameter that is the same in every cell of each side",
            )
    cand_by_key = {_canonical(p, vary): cid for cid, _, _, p in cand_rows}
    pairs, unmatched = [], []
    for cid, pos, dims, p in base_rows:
        other = cand_by_key.pop(_canonical(p, vary), None)
        if other is None:
            unmatched.append(cid)
        else:
            pairs.append(CellPair(cid, other, pos, dims))
    if unmatched or cand_by_key:
        diffs = _describe_differences(base_rows, cand_rows, vary)
        what = (
            "; ".join(diffs)
            if diffs
            else (
                f"{len(unmatched)} BASE cells and {len(cand_by_key)} CAND cells have no partner "
                f"(first: {(unmatched or list(cand_by_key.values()))[0]})"
            )
        )
        raise LonglookError(
            f"BASE and CAND are different scenarios: {what}",
            hint=_vary_hint(diffs) if diffs else "compare two runs of the same scenario",
        )
    return pairs


def varied(base: Side, cand: Side, vary: Sequence[str]) -> list[dict[str, Any]]:
    """What the `vary` parameters are on each side, for the output's header."""
    out = []
    b_rows, c_rows = _side_params(base), _side_params(cand)
    b_scen, c_scen = scenario_parameters(base.scenario), scenario_parameters(cand.scenario)
    for v in vary:
        keys = [k for k in dict.fromkeys([*(k for *_, p in b_rows for k in p), *b_scen, *c_scen]) if _matches(k, [v])]
        if not keys:
            raise LonglookError(
                f"--vary {v}: no such parameter in BASE's cells or arms",
                hint="parameters are the cells' dims (see `longlook scenario show`)",
            )
        k = min(keys, key=len)
        get = lambda rows, scen: _value_sets(rows, k) if k not in scen else [json.dumps(scen[k], default=str)]
        out.append({"parameter": k, "base": get(b_rows, b_scen), "cand": get(c_rows, c_scen)})
    return out
