"""The scenarios a calibration runs, built from the page-load kind's model (never a copy of
its pipeline): Fig. 2's two MACW arms, and a search trial's arms on a reference's grid."""

from __future__ import annotations

import tomllib
from typing import Any, Sequence

from ...errors import LonglookError
from ...kinds.pageload import Scenario
from .knobs import KNOBS, Point, label
from .toml_text import dumps

# Arm fields that are not server knobs: a trial keeps the reference arm's others (0-RTT, CC,
# and the knobs not under search)
_NOT_KNOBS = ("label", "protocol", "client", "server", "server_cc")
_KNOB_OPTIONS = tuple(k.option for k in KNOBS.values())


def macw_label(macw: int) -> str:
    return label({"max_cwnd_packets": macw})


def as_point(value: int | Point) -> dict[str, int]:
    """A search point; a bare number is a MACW (the one-knob search)."""
    return {"max_cwnd_packets": value} if isinstance(value, int) else dict(value)


def fig2_scenario(
    *,
    macws: Sequence[int] = (107, 430),
    rounds: int = 10,
    size: str = "10m",
    rate_mbit: float = 100.0,
    rtt_ms: float = 36.0,
    buffer_bytes: int = 30000,
    seed: int = 1,
    timeout_s: float = 90.0,
) -> Scenario:
    """Kakhki Fig. 2: one bulk object over QUIC, one arm per MACW, back to back per round.
    The buffer is the paper's 30 KB (the captions of its Figs. 4 and 5, and the shipped
    kakhki-* scenarios); 0-RTT is off so the handshake bar is a full handshake."""
    if len(set(macws)) < 2:
        raise LonglookError("fig2 needs two different MACW values", hint="e.g. --macw 107 --macw 430")
    data = {
        "name": "calibrate-fig2",
        "description": f"Kakhki Fig. 2: {size} over QUIC at {rate_mbit:g} Mbit/s, {rtt_ms:g} ms RTT, "
        f"MACW {' vs '.join(str(m) for m in macws)}.",
        "seed": seed,
        "rounds": rounds,
        "timeout_s": timeout_s,
        "links": [{"rate_mbit": rate_mbit, "rtt_ms": rtt_ms, "buffer_bytes": buffer_bytes}],
        "workloads": [f"bulk:{size}"],
        "options": {"zero_rtt": False, "quic_cc": "cubic"},
        "arms": [{"label": macw_label(m), "protocol": "h3", "max_cwnd_packets": m} for m in macws],
        # the tuned (largest) window is the baseline the others are compared with
        "baseline": macw_label(max(macws)),
    }
    return Scenario.from_toml(dumps(data), source="calibrate fig2")


def _grid(reference: Scenario, knobs: Sequence[str] = ("max_cwnd_packets",)) -> dict[str, Any]:
    """The reference's grid (links, workloads, options, statistics) without its arms, its
    stacks and the knobs under search (page-load option names)."""
    data = tomllib.loads(reference.toml_text) if reference.toml_text else reference.model_dump(mode="json")
    for key in ("protocols", "arms", "baseline", "server", "client", "rounds", "runs", "kind"):
        data.pop(key, None)
    options = dict(data.get("options") or {})
    for knob in knobs:
        options.pop(knob, None)  # set per arm
    data["options"] = options
    return data


def _scenario(data: dict[str, Any], source: str, reference: Scenario) -> Scenario:
    return Scenario.from_toml(dumps(data), source=source, base_dir=reference.base_dir)


def trial_scenario(
    reference: Scenario, reference_arm: str, points: Sequence[int | Point], *, rounds: int, name: str, seed: int = 1
) -> Scenario:
    """The reference's grid with one h3 arm of our endpoint per point to try (a MACW, or a
    value per knob), labelled by its knob values, keeping the reference arm's other
    settings (e.g. 0-RTT). Two arms per experiment: the kind compares arms, and two trials
    measured back to back share a testbed set-up and the same moments of the machine."""
    pts = [as_point(p) for p in points]
    labels = [label(p) for p in pts]
    if len(set(labels)) < 2:
        raise LonglookError("a trial measures two different points (MACW values or knob sets)")
    searched = list(dict.fromkeys(k for p in pts for k in p))
    kept = {
        k: v
        for k, v in reference.arm(reference_arm).model_dump(exclude_none=True).items()
        if k not in _NOT_KNOBS and k not in searched
    }
    data = _grid(reference, searched)
    data.update(
        name=name,
        seed=seed,
        rounds=rounds,
        description=f"calibration trial: {', '.join(labels)} on {reference.name}'s grid",
        arms=[{"label": lab, "protocol": "h3", **kept, **p} for lab, p in zip(labels, pts)],
    )
    return _scenario(data, f"calibrate search trial {name}", reference)


def stack_reference_scenario(grid: Scenario, stack: str, start: int | Point, *, rounds: int, seed: int = 1) -> Scenario:
    """A reference measured here: another QUIC stack's server on `grid`'s cells, back to
    back with our endpoint at the search's start point (its first trial, measured already)."""
    point = as_point(start)
    data = _grid(grid, list(point))
    data.update(
        name="calibrate-reference",
        seed=seed,
        rounds=rounds,
        description=f"calibration reference: {stack}'s server on {grid.name}'s grid",
        arms=[
            {"label": "reference", "protocol": "h3", "server": stack},
            {"label": label(point), "protocol": "h3", **point},
        ],
        baseline="reference",
    )
    return _scenario(data, f"calibrate reference {stack}", grid)
