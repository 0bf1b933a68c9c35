"""`longlook export DIR`: an experiment's store as Parquet or CSV files (longlook.core.export)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer


def export(
    directory: Path = typer.Argument(..., help="Experiment directory (the one `longlook run` wrote to)."),
    fmt: str = typer.Option("parquet", "--format", "-f", help="parquet or csv."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output folder [default: DIR/export]."),
    as_json: bool = typer.Option(False, "--json", help="Print the files and their row counts as JSON."),
) -> None:
    """Write an experiment's results as Parquet or CSV files, one per table.

    The files: runs (with the cell's dimensions
    as columns, the path audit and the status), metrics (wide: one column per metric), series,
    cells, link checks, round orders, and every table of the kind (objects, flows, ...).

    In Python, `longlook.open(DIR)` gives the same as pandas frames, with the report's
    comparisons (see docs/notebook.ipynb)."""
    from ..core.export import export as write
    from ..errors import check_output

    if out is not None:  # a bad --out is one clear error before anything is read
        check_output(out, "--out", directory=True)
    written = write(directory, out, fmt)
    if as_json:
        print(json.dumps([{"file": str(p), "rows": n} for p, n in written], indent=1))
        return
    for path, rows in written:
        print(f"{path}\t{rows} rows")


def register(app: typer.Typer) -> None:
    app.command("export")(export)
