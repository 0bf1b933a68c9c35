"""`longlook export DIR`: an experiment's store as Parquet or CSV files, one per table, for
tools that do not read DuckDB.

    runs      the runs table (status, protocols, audit_* columns) with the cell's
              dimensions as columns
    metrics   wide: run_id and one column per metric, one row per run
    series    long, as stored: run_id, name, key, t_s, value
    cells, experiments, link_checks, round_orders, and every table of the kind (objects,
    flows, requests, ...): as stored

JSON-valued columns stay the JSON text the store holds. DuckDB writes every file (its own
Parquet and CSV writers), so the column types are the store's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import duckdb
import pandas as pd

from ..errors import LonglookError
from ..untrusted import path_inside, sql_identifier
from .results import RUN_ORDER, metrics_wide, open_store, table_names, with_dims

Format = Literal["parquet", "csv"]
FORMATS: tuple[str, ...] = ("parquet", "csv")
EXPORT_DIR = "export"
# tables written from a frame built here rather than copied as stored
_BUILT = ("runs", "metrics")
_ORDER = {
    "runs": RUN_ORDER,
    "cells": "ORDER BY position",
    "series": "ORDER BY run_id, name, key, t_s",
    "round_orders": "ORDER BY cell_id, round",
    "link_checks": "ORDER BY checked_at",
}


def _json_text(value: Any) -> Any:
    """A dict or list as JSON text (a file's cell holds a scalar); anything else as it is."""
    return json.dumps(value, default=str) if isinstance(value, (dict, list)) else value


def _copy_options(fmt: Format) -> str:
    return "(FORMAT PARQUET)" if fmt == "parquet" else "(FORMAT CSV, HEADER)"


def _quoted(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


def _write_frame(df: pd.DataFrame, path: Path, fmt: Format) -> None:
    con = duckdb.connect()
    try:
        con.register("frame", df)
        con.execute(f"COPY frame TO {_quoted(path)} {_copy_options(fmt)}")
    finally:
        con.close()


def export(directory: str | Path, out: str | Path | None = None, fmt: str = "parquet") -> list[tuple[Path, int]]:
    """Write every table of DIR's store to `out` (default DIR/export) as `fmt` files; return
    each file with its row count."""
    if fmt not in FORMATS:
        raise LonglookError(f"--format: must be parquet or csv, got {fmt!r}")
    directory = Path(directory)
    out = Path(out) if out is not None else directory / EXPORT_DIR
    written: list[tuple[Path, int]] = []
    with open_store(directory) as store:
        out.mkdir(parents=True, exist_ok=True)
        raw_runs = store.sql(f"SELECT * FROM runs {RUN_ORDER}")
        runs = with_dims(raw_runs, store.cells_frame())
        for col in runs.columns:
            if runs[col].dtype == object:  # a dimension that is a list or a table
                runs[col] = runs[col].map(_json_text)
        built = {"runs": runs, "metrics": metrics_wide(store, raw_runs["run_id"])}
        for name in table_names(store):
            path = path_inside(out, f"{name}.{fmt}")
            if name in built:
                _write_frame(built[name], path, fmt)
                rows = len(built[name])
            else:
                table = sql_identifier(name)
                store.sql(
                    f"COPY (SELECT * FROM {table} {_ORDER.get(name, '')}) TO {_quoted(path)} {_copy_options(fmt)}"
                )
                rows = int(store.sql(f"SELECT count(*) AS n FROM {table}")["n"][0])
            written.append((path, rows))
    return written
