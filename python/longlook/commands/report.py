"""`longlook report DIR`: the self-contained HTML report of an experiment."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer


def report(
    directory: Path = typer.Argument(..., help="Experiment directory (holds longlook.duckdb)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output file [default: DIR/report.html]."),
    test: Optional[str] = typer.Option(None, help="Override the scenario's test: welch or mannwhitney."),
    alpha: Optional[float] = typer.Option(None, help="Override the significance level."),
    holm: Optional[bool] = typer.Option(None, "--holm/--no-holm", help="Override Holm correction."),
) -> None:
    """Write the self-contained HTML report of an experiment."""
    from ..errors import LonglookError, check_output
    from ..report import build_report

    check_output(out if out is not None else directory / "report.html", "--out")

    if test is not None and test not in ("welch", "mannwhitney"):
        raise LonglookError(f'--test: must be welch or mannwhitney, got "{test}"')
    path = build_report(directory, out, test=test, alpha=alpha, holm=holm)  # type: ignore[arg-type]
    print(path)


def register(app: typer.Typer) -> None:
    app.command("report")(report)
