"""The reference a search calibrates against: a finished page-load experiment (another
server's configuration, another stack, Chromium against real servers), one of its arms,
and its PLT samples per cell, keyed by what the cell is (link, workload, options) so our
trials' cells find theirs whatever their ids."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from ...core.store import DB_FILE, Store
from ...errors import LonglookError
from ...kinds.pageload import Scenario
from .measure import counted

# dims that only name other dims, and the knob under search (set per trial arm)
_NOT_MATCHED = ("link", "workload", "max_cwnd_packets", "initial_window_packets", "n_conn")


def cell_key(dims: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in sorted((dims or {}).items()) if k not in _NOT_MATCHED}, default=str)


def samples_by_cell(runs: pd.DataFrame, arm: str, metric: str = "plt_ms") -> dict[str, np.ndarray]:
    mine = runs[runs["arm"] == arm]
    return {
        cell_key(dims): g[metric].to_numpy(float)
        for dims, g in ((g["dims"].iloc[0], g) for _, g in mine.groupby("cell_id"))
    }


@dataclass
class Reference:
    directory: Path
    scenario: Scenario
    arm: str
    samples: dict[str, np.ndarray]  # cell key -> PLT (ms) of the reference arm's counted runs
    labels: dict[str, str]  # cell key -> the reference's cell id, for people


def load_reference(directory: str | Path, arm: str | None = None) -> Reference:
    """One clear error for anything that is not a usable reference."""
    path = Path(directory)
    if not path.is_dir():
        raise LonglookError(
            f"reference {path}: no such directory", hint="give an experiment directory that `longlook run` wrote"
        )
    if not (path / DB_FILE).is_file():
        raise LonglookError(
            f"reference {path}: not an experiment (no {DB_FILE})",
            hint="give an experiment directory that `longlook run` wrote",
        )
    with Store.open(path, read_only=True) as store:
        scenario = store.scenario()
    if not isinstance(scenario, Scenario):
        raise LonglookError(f"reference {path}: a {scenario.kind} experiment; calibration needs page loads")
    h3 = [a.label for a in scenario.arm_list() if a.protocol == "h3"]
    if arm is None:
        if not h3:
            raise LonglookError(f"reference {path}: no QUIC (h3) arm to calibrate against")
        arm = h3[0]
    elif arm not in [a.label for a in scenario.arm_list()]:
        raise LonglookError(
            f"reference {path}: no arm {arm!r}", hint=f"its arms: {', '.join(a.label for a in scenario.arm_list())}"
        )
    runs = counted(path)
    samples = samples_by_cell(runs, arm)
    if not samples:
        raise LonglookError(f"reference {path}: arm {arm!r} has no run that counts")
    labels = {cell_key(d): cid for cid, d in runs.groupby("cell_id")["dims"].first().items()}
    return Reference(path, scenario, arm, samples, labels)


REFERENCE_DIR = "reference"


def reference_from(
    value: str,
    out: Path,
    *,
    arm: str | None = None,
    grid: Path | None = None,
    start: int | Mapping[str, int] = 107,
    rounds: int = 3,
    seed: int = 1,
    link_check: bool = True,
    progress=None,
) -> Reference:
    """`value` is an experiment directory, or a QUIC stack (`quiche`, `quiche@0.30.0`) whose
    server is measured here on `grid`'s cells into OUT/reference, beside our endpoint at
    the start value."""
    from ...core.spec import load_scenario
    from ...stacks.registry import STACKS, is_stack
    from .measure import ensure_dir, run_experiment
    from .scenarios import stack_reference_scenario

    if Path(value).exists() or not is_stack(value):
        if grid is not None:
            raise LonglookError("--grid is for a stack reference; a directory brings its own grid")
        if not Path(value).exists() and "/" not in value:
            raise LonglookError(
                f"reference {value}: no such directory, and not a QUIC stack",
                hint=f"give an experiment directory, or a stack: {', '.join(STACKS)} (longlook stacks list)",
            )
        return load_reference(value, arm)
    if grid is None:
        raise LonglookError(
            f"reference {value}: a stack is measured on a grid; add --grid SCENARIO.toml",
            hint="a page-load scenario, e.g. scenarios/quick.toml (its links, workloads, options)",
        )
    scenario = load_scenario(grid)
    if not isinstance(scenario, Scenario):
        raise LonglookError(f"--grid {grid}: a {scenario.kind} scenario; calibration needs page loads")
    ensure_dir(out)
    run_experiment(
        stack_reference_scenario(scenario, value, start, rounds=rounds, seed=seed),
        out / REFERENCE_DIR,
        link_check=link_check,
        progress=progress,
    )
    return load_reference(out / REFERENCE_DIR, "reference")
