"""The one check of an experiment directory before anything reads it: the schema version,
the tables and columns the store writes, the experiment row, and every JSON column parsed.
A store damaged by hand, by another tool or by a newer longlook is one clear error naming
the table, the row and the column, never a traceback deep inside a report."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import duckdb

from ..errors import LonglookError

SCHEMA_VERSION = 1  # raise when the layout of _SCHEMA changes incompatibly
_VERSION_TABLE = "longlook_schema"

# the column that names a row in an error
ROW_KEY = {
    "experiments": "id",
    "cells": "cell_id",
    "runs": "run_id",
    "link_checks": "profile_name",
    "round_orders": "cell_id",
}
# what each JSON column must hold: an object, except the arm order
_JSON_TYPE = {("round_orders", "arm_order"): "ARRAY"}
# columns a reader cannot do without
_NOT_NULL = {
    "experiments": ("id", "kind", "scenario_toml", "versions"),
    "cells": ("cell_id", "dims"),
    "runs": ("run_id", "cell_id", "round", "arm", "status"),
    "metrics": ("run_id", "name"),
}
_HINT = "re-run the scenario into a new directory (`longlook run FILE --out NEW`)"


def mark_schema(con: Any) -> None:
    """A writer stamps the store with the schema version it wrote."""
    con.execute(f"CREATE TABLE IF NOT EXISTS {_VERSION_TABLE} (version INTEGER)")
    if not con.execute(f"SELECT count(*) FROM {_VERSION_TABLE}").fetchone()[0]:
        con.execute(f"INSERT INTO {_VERSION_TABLE} VALUES (?)", [SCHEMA_VERSION])


@functools.cache
def _layout(schema: str) -> dict[str, tuple[str, ...]]:
    """Table -> columns, from the writer's own DDL (one source)."""
    con = duckdb.connect(":memory:")
    con.execute(schema)
    rows = con.execute(
        "SELECT table_name, column_name FROM information_schema.columns ORDER BY table_name, ordinal_position"
    ).fetchall()
    con.close()
    out: dict[str, list[str]] = {}
    for table, column in rows:
        out.setdefault(table, []).append(column)
    return {t: tuple(c) for t, c in out.items()}


def check_readable(con: Any, directory: Path, schema: str, json_columns: dict[str, tuple[str, ...]]) -> None:
    where = f"{directory}"
    present: dict[str, set[str]] = {}
    for table, column in con.execute("SELECT table_name, column_name FROM information_schema.columns").fetchall():
        present.setdefault(table, set()).add(column)
    if _VERSION_TABLE in present:
        version = con.execute(f"SELECT max(version) FROM {_VERSION_TABLE}").fetchone()[0]
        if version is not None and version > SCHEMA_VERSION:
            raise LonglookError(
                f"{where}: written by a newer longlook (store schema {version}, this one reads {SCHEMA_VERSION})",
                hint="read it with that longlook, or upgrade",
            )
    for table, columns in _layout(schema).items():
        if table not in present:
            raise LonglookError(
                f"{where}: the store has no table {table!r}: not an experiment longlook wrote, or damaged", hint=_HINT
            )
        missing = [c for c in columns if c not in present[table]]
        if missing:
            raise LonglookError(f"{where}: table {table!r} lacks column(s) {', '.join(missing)}", hint=_HINT)
    n = con.execute("SELECT count(*) FROM experiments").fetchone()[0]
    if n == 0:
        raise LonglookError(
            f"{where}: no experiment recorded", hint="run it (again) with `longlook run FILE --out DIR --resume`"
        )
    for table, columns in _NOT_NULL.items():
        for col in columns:
            key = ROW_KEY.get(table, col)
            row = con.execute(f"SELECT {key} FROM {table} WHERE {col} IS NULL LIMIT 1").fetchone()
            if row is not None:
                raise LonglookError(f"{where}: {_row(table, key, row[0])} has no {col}", hint=_HINT)
    for table, columns in json_columns.items():
        key = ROW_KEY[table]
        for col in columns:
            want = _JSON_TYPE.get((table, col), "OBJECT")
            row = con.execute(
                f"SELECT {key}, {col} FROM {table} WHERE {col} IS NOT NULL AND "
                f"(NOT json_valid({col}) OR json_type({col}) <> ?) LIMIT 1",
                [want],
            ).fetchone()
            if row is not None:
                decode(directory, table, col, row[0], row[1])  # says what is wrong with it
                raise LonglookError(
                    f"{where}: {_row(table, key, row[0])}: column {col} is not a JSON {want.lower()}", hint=_HINT
                )


def _row(table: str, key: str, value: Any) -> str:
    return f"{table} row {key} = {value!r}" if key in ROW_KEY.values() else f"a row of {table}"


def decode(directory: Path, table: str, column: str, key: Any, text: Any) -> Any:
    """One JSON cell of the store, or one clear error naming the run (row) and the column."""
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError as e:
        raise LonglookError(
            f"{directory}: {_row(table, ROW_KEY.get(table, ''), key)}: column {column} is not valid JSON ({e})",
            hint=_HINT,
        ) from None
