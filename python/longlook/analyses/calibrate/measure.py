"""Running a calibration scenario on the testbed, through the core's Runner, and reading
back the runs that count."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pandas as pd

from ...core.execute import Runner, RunSummary
from ...core.spec import ScenarioBase
from ...core.status import counted_runs
from ...core.store import DB_FILE, Store
from ...errors import LonglookError


def run_experiment(
    scenario: ScenarioBase, out: Path, *, link_check: bool = True, progress: Callable[..., None] | None = None
) -> RunSummary:
    """One experiment into `out`; a directory already holding it is resumed (finished runs
    are kept), so an interrupted calibration continues where it stopped."""
    summary = Runner(scenario, out, resume=(out / DB_FILE).exists(), link_check=link_check, progress=progress).run()
    if summary.interrupted:
        raise KeyboardInterrupt
    return summary


def ensure_dir(out: Path) -> Path:
    """The calibration's own output folder (its experiments go in subdirectories)."""
    if out.exists() and not out.is_dir():
        raise LonglookError(f"--out {out}: is a file, not a directory", hint="give a new directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise LonglookError(f"--out {out}: cannot create it ({e.strerror})") from None
    return out


def counted(out: Path, metric: str = "plt_ms") -> pd.DataFrame:
    """The runs of an experiment that count for `metric` (ok, right protocol, not flagged),
    with their cell's dims joined (column `dims`)."""
    with Store.open(out, read_only=True) as store:
        sc = store.scenario()
        runs = store.runs_frame()
        cells = store.cells_frame()[["cell_id", "dims"]]
    good = counted_runs(runs, metric, exclude_flagged=sc.fidelity.exclude_flagged)
    if good.empty:
        raise LonglookError(
            f"{out}: no run that counts for {metric}", hint="see `longlook report` on it for why the runs failed"
        )
    return good.merge(cells, on="cell_id", how="left")
