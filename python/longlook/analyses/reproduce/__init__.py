"""`longlook reproduce`: the papers' claims, one by one, against this testbed.

registry (one entry per claim, the scenarios with their short budget) -> scenarios (run or
read each into DIR/<scenario>/ with the core Runner) -> measured (what a claim reads of a
store) -> rules (our number, n, the claim's own p and the verdict, with core.stats: rules/, one
module per rule: on arms and cells, on video sessions, on state machines; bounds.py
the one-sided tests against a claim's bound, needed.py what more data would decide) ->
explain (links for a "does not hold") -> output (HTML, Markdown, JSON).

    reproduce(out, budget="short", only=None, build_report=None) -> Reproduction

`build_report` (longlook.report.build_report, which the `longlook reproduce` command passes)
writes an experiment's report for the links of a "does not hold"; without it they name no
report.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from ...errors import LonglookError
from .claims import BUDGETS, OURS, PAPER, Also, Claim, Explain, FieldFinding, ShippedScenario
from .coverage import coverage
from .drift import round_drift
from .estimate import estimate
from .explain import BuildReport, explain
from .measured import Measured
from .output import Reproduction, Row
from .registry import CLAIMS, FIELD_ONLY, MERGED, SCENARIOS, claims
from .rules import (
    FAILS,
    HOLDS,
    NOT_RUN,
    UNCLEAR,
    Ate,
    ByteShare,
    Cells,
    GrangerShare,
    Outcome,
    PairShare,
    Ratio,
    Shrinks,
    StateShift,
    Survives,
    Twins,
    Value,
    not_run,
)
from .scenarios import ScenarioRun, cells_read, run_scenario


def evaluate(claim: Claim, measured: Measured | None, reason: str = "") -> Outcome:
    """One claim on one experiment's data (None: not measured, with `reason`)."""
    if measured is None:
        return not_run(reason or "its scenario was not run")
    return claim.rule.evaluate(measured)


def reproduce(
    out: str | Path,
    *,
    budget: str = "short",
    only: list[str] | None = None,
    execute: bool = True,
    link_check: bool = True,
    progress: Callable[..., None] | None = None,
    build_report: BuildReport | None = None,
    include_flagged: bool = False,
    allow_version_change: bool = False,
    executor=None,
) -> Reproduction:
    """Run (or read) every scenario the chosen claims read, evaluate the claims, explain the
    ones that do not hold, and write DIR/reproduction.{html,md,json}. `include_flagged`: count
    runs their path audit flagged (a machine too busy for the limits; the table says so).
    `executor`: where the runs go (core.executors; None: this machine's testbed)."""
    if budget not in BUDGETS:
        raise LonglookError(f"--budget: {budget!r} is not a budget", hint="short, standard or paper")
    out = Path(out)
    chosen = claims(only)
    started = time.monotonic()
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    progress = progress or (lambda *a, **k: None)
    runs: dict[str, ScenarioRun] = {}
    names = list(dict.fromkeys(c.scenario for c in chosen))
    if budget == "paper":
        # the shortest first: a day-long budget ends many sessions part-way, and each one
        # that does leaves the most scenarios, and so claims, measured whole
        walls = {r.name: r.wall_s for r in estimate([SCENARIOS[n] for n in names], budget, out)}
        names.sort(key=lambda n: walls.get(n, 0.0))
    for name in names:
        progress("scenario", name=name, budget=budget)
        # a scenario none of whose chosen claims has a cell at this budget runs for nothing
        read = cells_read(SCENARIOS[name], budget, [c.rule for c in chosen if c.scenario == name])
        runs[name] = run_scenario(
            SCENARIOS[name],
            out,
            budget,
            execute=execute and read,
            skipped="" if read else f"the {budget} budget keeps none of its claims' cells",
            link_check=link_check,
            progress=progress,
            allow_version_change=allow_version_change,
            executor=executor,
        )
        progress("scenario_done", run=runs[name])
        if runs[name].status == "interrupted":
            break
    # first: where rounds drift, every test below runs at the level that widens its
    # intervals by the drift's factor (core.serial.widened_level)
    drift = round_drift([(r.name, r.directory) for r in runs.values() if r.has_data])
    data: dict[str, Measured | None] = {}
    reports: dict[Path, Path | str] = {}
    rows = []
    for claim in chosen:
        run = runs.get(claim.scenario)
        if claim.scenario not in data:
            measured = Measured.from_store(run.directory) if run and run.has_data else None
            if measured is not None and include_flagged:
                measured.exclude_flagged = False
            if measured is not None:
                measured.statistics = drift.widened(measured.statistics)
            # a store whose first link check failed holds the experiment but no run
            data[claim.scenario] = measured if measured is not None and not measured.runs.empty else None
        # the tables prefix "not run: " themselves
        reason = (
            ("" if run.status == "not run" else f"{run.status}: ") + run.detail
            if run
            else "interrupted before its scenario"
        )
        outcome = evaluate(claim, data[claim.scenario], reason)
        outcome.left_out, outcome.coverage = coverage(claim, SCENARIOS[claim.scenario], budget)
        if outcome.verdict == NOT_RUN and claim.missing and data[claim.scenario] is not None:
            outcome.detail = f"its scenario has no cell the claim needs: {claim.missing}"
        links: list[tuple[str, str]] = []
        if outcome.verdict == FAILS and run is not None:
            links = explain(
                claim, run.directory, outcome.against[0] if outcome.against else None, out, reports, build_report
            )
        rows.append(Row(claim, outcome, run, links))
    result = Reproduction(
        budget, out, rows, list(runs.values()), time.monotonic() - started, stamp, include_flagged, drift
    )
    result.write()
    return result


__all__ = [
    "Also",
    "Ate",
    "BUDGETS",
    "ByteShare",
    "CLAIMS",
    "Cells",
    "Claim",
    "Explain",
    "FAILS",
    "FIELD_ONLY",
    "FieldFinding",
    "MERGED",
    "OURS",
    "PAPER",
    "GrangerShare",
    "HOLDS",
    "Measured",
    "NOT_RUN",
    "Outcome",
    "PairShare",
    "Ratio",
    "Reproduction",
    "Row",
    "SCENARIOS",
    "ScenarioRun",
    "ShippedScenario",
    "Shrinks",
    "StateShift",
    "Survives",
    "Twins",
    "UNCLEAR",
    "Value",
    "claims",
    "evaluate",
    "reproduce",
]
