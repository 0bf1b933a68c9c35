"""One experiment directory, read for comparison with others: its scenario, kind, metrics,
cells with their parameters, and its runs."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from ...core.kind import Metric
from ...core.spec import ScenarioBase
from ...core.store import DB_FILE, Store
from ...errors import LonglookError


@dataclass
class Side:
    directory: Path
    experiment: dict[str, Any]
    scenario: ScenarioBase
    kind: Any  # core.kind.Kind
    cells: pd.DataFrame  # cell_id, position, link_profile, dims, settings
    runs: pd.DataFrame  # Store.runs_frame()

    @property
    def started_at(self) -> datetime:
        return pd.Timestamp(self.experiment["started_at"]).to_pydatetime()

    @property
    def metrics(self) -> tuple[Metric, ...]:
        return tuple(self.kind.metrics)

    @property
    def arms(self) -> list[str]:
        return [a.label for a in self.scenario.arm_list()]

    def summary(self) -> dict[str, Any]:
        """What JSON and the page say about this side."""
        return {
            "directory": str(self.directory),
            "experiment": self.experiment["id"],
            "scenario": self.experiment["scenario_name"],
            "kind": self.experiment["kind"],
            "started_at": f"{self.started_at:%Y-%m-%d %H:%M:%S}",
            "runs": int(len(self.runs)),
            "versions": self.experiment.get("versions") or {},
        }


def load_side(directory: str | Path, role: str = "") -> Side:
    """Read an experiment directory (read-only); a clear error when it is not one."""
    directory = Path(directory)
    label = f"{role} {directory}".strip()
    if not (directory / DB_FILE).is_file():
        raise LonglookError(
            f"{label}: not an experiment directory (no {DB_FILE})", hint="give the --out directory of a `longlook run`"
        )
    with Store.open(directory, read_only=True) as store:
        exp = store.experiment()
        if exp is None:
            raise LonglookError(f"{label}: no experiment recorded", hint="run `longlook run` first")
        scenario = store.scenario()
        kind = store.kind()
        if kind is None:
            raise LonglookError(f"{label}: kind {exp['kind']!r} is not known to this longlook")
        return Side(directory, exp, scenario, kind, store.cells_frame(), store.runs_frame())


def check_distinct(sides: list[Side], what: str) -> None:
    """Each experiment once: a directory given twice, or two copies of one experiment (the
    same id), would compare an experiment with itself and make a series look steadier than it
    is."""
    seen: dict[Any, Side] = {}
    for side in sides:
        for key in (("directory", side.directory.resolve()), ("experiment", side.experiment["id"])):
            first = seen.setdefault(key, side)
            if first is not side:
                same = "the same directory" if key[0] == "directory" else f"the same experiment ({key[1]})"
                raise LonglookError(
                    f"{what}: {first.directory} and {side.directory} are {same}",
                    hint="give each experiment once",
                )
