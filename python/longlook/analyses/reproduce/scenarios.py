"""Run (or read) the shipped scenarios the chosen claims need, each into DIR/<scenario-name>/
with the core Runner: a directory that already holds the experiment is resumed, and one
that is complete is only read (the core's resume leaves it untouched). A scenario that
cannot run here (a missing browser, a failed link check) is recorded with its reason, and
its claims say "not run"."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ...core.execute import LinkCheckFailed, Runner
from ...core.spec import load_scenario
from ...core.store import DB_FILE, Store
from ...errors import LonglookError
from .claims import ShippedScenario


@dataclass
class ScenarioRun:
    name: str
    directory: Path
    status: str  # "ran", "read" (complete already), "not run", "failed", "interrupted"
    detail: str = ""
    wall_s: float = 0.0
    runs: int = 0  # runs measured in this session
    foreign: bool = False  # the directory holds another scenario's results: never read

    @property
    def has_data(self) -> bool:
        return not self.foreign and (self.directory / DB_FILE).exists()

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "directory": str(self.directory),
            "status": self.status,
            "detail": self.detail,
            "wall_s": round(self.wall_s, 1),
            "runs": self.runs,
        }


def cells_read(shipped: ShippedScenario, budget: str, rules: list) -> bool:
    """Whether any of `rules` (the chosen claims' on this scenario) reads a cell of the
    scenario at `budget`: a budget that keeps none of a claim's cells (a 10-minute session
    in the short budget) need not run the scenario for it."""
    import pandas as pd

    from .measured import Measured, grid

    m = Measured(cells=grid(load_scenario(shipped.path, shipped.overrides(budget))), runs=pd.DataFrame())
    return any(rule.claim_cells(m) for rule in rules)


def run_scenario(
    shipped: ShippedScenario,
    out: Path,
    budget: str,
    *,
    execute: bool = True,
    link_check: bool = True,
    progress: Callable[..., None] | None = None,
    allow_version_change: bool = False,
    executor=None,
    skipped: str = "",
) -> ScenarioRun:
    """`skipped`: why it is not to be measured (execute False then), said when it holds no
    results."""
    sc = load_scenario(shipped.path, shipped.overrides(budget))
    directory = out / sc.name
    exists = (directory / DB_FILE).exists()
    if not execute and not exists:
        return ScenarioRun(sc.name, directory, "not run", skipped or "not measured yet (run without --no-run)")
    if exists:
        try:  # a verdict only on this scenario's own results
            with Store.open(directory, read_only=True) as store:
                store.check_scenario(sc)
                complete = (store.experiment() or {}).get("ended_at") is not None
        except LonglookError as e:
            detail = e.message + (f" ({e.hint})" if e.hint else "")
            if execute:
                detail += f"; another budget ran into {directory}: give reproduce another --out"
            return ScenarioRun(sc.name, directory, "failed", detail, foreign=True)
        # a finished experiment is read as it is: resuming it would hold today's software
        # versions against the ones it was measured with, and there is nothing left to run
        if complete or not execute:
            return ScenarioRun(sc.name, directory, "read", "complete already" if complete else "")
    started = time.monotonic()
    try:
        try:
            summary = Runner(
                sc,
                directory,
                resume=exists,
                link_check=link_check,
                progress=progress,
                allow_version_change=allow_version_change,
                executor=executor,
            ).run()
        except LinkCheckFailed:
            # a path check that met a busy moment of the machine: once more before giving up
            summary = Runner(
                sc,
                directory,
                resume=(directory / DB_FILE).exists(),
                link_check=link_check,
                progress=progress,
                allow_version_change=allow_version_change,
                executor=executor,
            ).run()
    except LonglookError as e:
        detail = e.message + (f" ({e.hint})" if e.hint else "")
        if isinstance(e, LinkCheckFailed):
            detail += "; the machine may be busy: rerun later, or with --no-link-check (each run is still audited)"
        foreign = "holds results of another scenario" in e.message
        if foreign:
            detail += f"; another budget ran into {directory}: give reproduce another --out"
        return ScenarioRun(sc.name, directory, "failed", detail, time.monotonic() - started, foreign=foreign)
    except Exception as e:  # noqa: BLE001 - one scenario's crash leaves the others to run
        return ScenarioRun(sc.name, directory, "failed", f"{type(e).__name__}: {e}", time.monotonic() - started)
    wall = time.monotonic() - started
    if summary.interrupted:
        return ScenarioRun(sc.name, directory, "interrupted", "interrupted; rerun to resume", wall, summary.runs)
    status = "ran" if summary.runs else "read"
    detail = (
        f"{summary.ok} ok, {summary.failed} failed, {summary.flagged} flagged" if summary.runs else "complete already"
    )
    if summary.short:
        detail += f"; {len(summary.short)} cell(s) short of counted runs"
    return ScenarioRun(sc.name, directory, status, detail, wall, summary.runs)


def folder_name(shipped: ShippedScenario, budget: str) -> str:
    """The folder under the results folder that a shipped scenario's experiment lives in."""
    return load_scenario(shipped.path, shipped.overrides(budget)).name
