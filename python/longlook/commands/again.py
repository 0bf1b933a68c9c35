"""`longlook again DIR --arm PATTERN --because WHY`: set aside an experiment's failed runs of
some arms (kept in the store with why), so the next resume runs them again."""

from __future__ import annotations

from pathlib import Path

import typer


def again(
    directory: Path = typer.Argument(..., help="Experiment directory (the one `longlook run` wrote to)."),
    arm: list[str] = typer.Option(..., "--arm", help="an arm's label, or a pattern (quiche_*): repeatable"),
    because: str = typer.Option(..., "--because", help="why they failed and what fixed it (kept with them)"),
) -> None:
    """Set aside the failed runs of the arms named, so that resuming the experiment runs them
    again: for runs a defect of the harness failed (a client of ours, a server wrapper),
    once it is fixed.

    Nothing is deleted: each run keeps its row (in the store's set_aside_runs, with why and
    when) and its files. A run that completed is a measurement and stays. Then resume as
    before (`longlook run FILE --out DIR --resume`, or the same `longlook matrix` command)."""
    from ..core.store import Store

    with Store.open(directory) as store:
        ids = store.set_aside_failed(arm, because)
    print(f"{directory}: {len(ids)} failed runs set aside; resume the experiment to run them again")


def register(app: typer.Typer) -> None:
    app.command("again")(again)
