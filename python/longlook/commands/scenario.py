"""`longlook scenario validate|show FILE`: check and inspect scenario files."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.table import Table

from ..render.console import make_console

from ..core.spec import ScenarioBase, load_scenario
from ..render.layout import format_dim

scenario_app = typer.Typer(no_args_is_help=True, add_completion=False, help="Check and inspect scenario files.")


@scenario_app.command("validate")
def validate(file: Path = typer.Argument(..., help="Scenario TOML file.")) -> None:
    """Check a scenario file and the environment it would run in; print a one-line summary
    or the errors (exit 2)."""
    from ..testbed.host import linkem_datapath

    s = load_scenario(file)
    linkem_datapath()  # LONGLOOK_DATAPATH: refused here, not after the store is made
    print(f"{file}: ok: {summary(s)}")


@scenario_app.command("show")
def show(
    file: Path = typer.Argument(..., help="Scenario TOML file."),
    as_json: bool = typer.Option(False, "--json", help="Print the grid as JSON: each cell's id and dimensions."),
) -> None:
    """Print the expanded grid: one line per cell, in run order."""
    s = load_scenario(file)
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "name": s.name,
                    "kind": s.kind,
                    "summary": summary(s),
                    "cells": [{"index": c.index, "id": c.id, "dims": c.dims()} for c in s.cells()],
                    "arms": [{"label": a.label, "protocol": a.protocol} for a in s.arm_list()],
                    "compared": [list(pair) for pair in s.comparisons()],
                },
                indent=1,
                default=str,
            )
        )
        return
    console = make_console()
    console.print(f"[bold]{s.name}[/bold] ({s.kind}): {summary(s)}")
    table = Table(show_lines=False)
    cells = s.cells()
    own = list(cells[0].shown()) if cells else []
    cpu = ["client CPU"] if s.client_cpu else []  # the budget (testbed/cpu.py)
    for col in ("#", "cell id", "rate", "RTT", "loss", *cpu, *own):
        table.add_column(col, overflow="fold")
    for c in cells:
        d = c.dims()
        rate = format_dim("rate_mbit", d["rate_mbit"]) if d["rate_mbit"] else f"trace {d['trace']}"
        table.add_row(
            str(c.index),
            c.id,
            rate,
            format_dim("rtt_ms", d["rtt_ms"]),
            format_dim("loss", d["loss"]),
            *([d["client_cpu"]] if cpu else []),
            *(format_dim(k, v) for k, v in c.shown().items()),
        )
    console.print(table)
    arms = ", ".join(f"{a.label}" + (f" ({a.protocol})" if a.protocol else "") for a in s.arm_list())
    console.print(
        f"arms: {arms}; compared: " + ("; ".join(f"{a} vs {b}" for a, b in s.comparisons()) or "none (one arm)")
    )


def summary(s: ScenarioBase) -> str:
    from ..core.grid import duration_text

    cells = s.cells()
    st = s.statistics
    per_run = s.run_timeout_s() if hasattr(s, "run_timeout_s") else s.timeout_s
    return (
        f"{len(cells)} cells x {s.rounds} rounds x {len(s.arm_list())} arms = {s.total_runs():,} runs "
        f"(at most {duration_text(s.total_runs() * per_run)}: every run to its {per_run:g} s timeout); "
        f"{st.test}, alpha {st.alpha}{', Holm' if st.holm else ''}"
    )


def register(app: typer.Typer) -> None:
    app.add_typer(scenario_app, name="scenario")
