"""The results store: one DuckDB file per experiment directory, run artifacts beside it.

    DIR/longlook.duckdb    experiments (kind, TOML, versions), cells, runs (with their path
                           audit), metrics, series, link_checks, round_orders, and the tables
                           the experiment's kind declares (e.g. objects, flows)
    DIR/runs/<run_id>/...  whatever a run leaves behind (client JSON, qlogs, flow logs)

Each run is written in one transaction, so a run is wholly there or absent: an interrupted
experiment never leaves half a run. This is the only writer of results; executors hand it
RunRecords. JSON-valued columns are stored as text and decoded when read.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import fnmatch
import json
import math
import os
import platform
import signal
import sys
import threading
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

import duckdb
import pandas as pd

from . import store_check

from ..errors import LonglookError
from ..untrusted import sql_identifier
from ..versions import source_commit
from .record import RunRecord, new_run_id
from .spec import ScenarioBase
from .status import settles

DB_FILE = "longlook.duckdb"
RUNS_DIR = "runs"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS experiments (
    id VARCHAR PRIMARY KEY, kind VARCHAR, scenario_name VARCHAR, scenario_toml VARCHAR,
    seed BIGINT, started_at TIMESTAMP, ended_at TIMESTAMP, versions VARCHAR);
CREATE TABLE IF NOT EXISTS cells (
    cell_id VARCHAR PRIMARY KEY, position INTEGER, link_name VARCHAR, link_profile VARCHAR,
    dims VARCHAR, settings VARCHAR);
CREATE TABLE IF NOT EXISTS runs (
    run_id VARCHAR PRIMARY KEY, cell_id VARCHAR, round INTEGER, position INTEGER, arm VARCHAR,
    attempt INTEGER, status VARCHAR, error VARCHAR, protocol_requested VARCHAR,
    protocol_negotiated VARCHAR, started_at TIMESTAMP, duration_s DOUBLE, options VARCHAR,
    artifacts VARCHAR, details VARCHAR,
    audit_released BIGINT, audit_late_releases BIGINT, audit_max_release_late_ms DOUBLE,
    audit_kernel_queue_drops BIGINT, audit_stalls INTEGER, audit_max_stall_ms DOUBLE,
    audit_flagged BOOLEAN, audit_reasons VARCHAR, recorded_at TIMESTAMP);
CREATE TABLE IF NOT EXISTS metrics (run_id VARCHAR, name VARCHAR, value DOUBLE);
CREATE TABLE IF NOT EXISTS series (run_id VARCHAR, name VARCHAR, key VARCHAR, t_s DOUBLE, value DOUBLE);
CREATE TABLE IF NOT EXISTS link_checks (
    profile_name VARCHAR, configured VARCHAR, measured VARCHAR, passed BOOLEAN,
    detail VARCHAR, checked_at TIMESTAMP);
CREATE TABLE IF NOT EXISTS round_orders (
    cell_id VARCHAR, round INTEGER, arm_order VARCHAR, PRIMARY KEY (cell_id, round));
"""

_JSON_COLUMNS = {
    "experiments": ("versions",),
    "cells": ("link_profile", "dims", "settings"),
    "runs": ("options", "artifacts", "details"),
    "link_checks": ("configured", "measured"),
    "round_orders": ("arm_order",),
}
_RUN_COLUMNS = (
    "run_id",
    "cell_id",
    "round",
    "position",
    "arm",
    "attempt",
    "status",
    "error",
    "protocol_requested",
    "protocol_negotiated",
    "started_at",
    "duration_s",
    "options",
    "artifacts",
    "details",
    "audit_released",
    "audit_late_releases",
    "audit_max_release_late_ms",
    "audit_kernel_queue_drops",
    "audit_stalls",
    "audit_max_stall_ms",
    "audit_flagged",
    "audit_reasons",
    "recorded_at",
)


def utcnow() -> datetime:
    """Naive UTC (the store's TIMESTAMP columns are UTC by convention)."""
    return datetime.now(timezone.utc).replace(tzinfo=None)


def _naive_utc(t: datetime | None) -> datetime | None:
    if t is None or t.tzinfo is None:
        return t
    return t.astimezone(timezone.utc).replace(tzinfo=None)


_PACKAGES = ("typer", "rich", "pydantic", "numpy", "scipy", "statsmodels", "pandas", "duckdb", "matplotlib", "jinja2")


def environment_versions(**extra: Any) -> dict[str, Any]:
    """What this process can see: longlook, Python, kernel, packages. The executor adds the
    binaries' and the kind's versions as keyword arguments."""
    from ..versions import __version__

    pkgs = {}
    for name in _PACKAGES:
        try:
            pkgs[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pkgs[name] = None
    return {
        "longlook": __version__,
        "commit": source_commit(),
        "python": sys.version.split()[0],
        "kernel": platform.release(),
        "machine": platform.machine(),
        "packages": pkgs,
        **extra,
    }


# linkem's datapath, recorded in versions.testbed.datapath since there were two; an
# experiment recorded before that ran on NFQUEUE, the only one there was
DATAPATH_BEFORE_RECORDED = "nfqueue"


def with_datapath(versions: dict[str, Any]) -> dict[str, Any]:
    """`versions` with the datapath an experiment from before it was recorded ran on."""
    testbed = versions.get("testbed") or {}
    if testbed.get("datapath"):
        return versions
    return {**versions, "testbed": {**testbed, "datapath": DATAPATH_BEFORE_RECORDED}}


def _table_ddl(name: str, columns: dict[str, str]) -> str:
    cols = ", ".join(f"{sql_identifier(c)} {t}" for c, t in columns.items())
    return f"CREATE TABLE IF NOT EXISTS {sql_identifier(name)} (run_id VARCHAR, {cols});"


_DEFERRED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextmanager
def signals_deferred():
    """Hold Ctrl-C, SIGTERM and SIGHUP until the block ends. DuckDB turns a signal that
    arrives mid-query into "Query interrupted" (a RuntimeError), so the interruption would
    be lost; held, the first one is handed to its own handler right after the query.
    (Blocking with a signal mask is not enough: the kernel delivers to another thread.)"""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    previous = {s: signal.signal(s, lambda signum, _frame: pending.append(signum)) for s in _DEFERRED_SIGNALS}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        if pending:
            handler = previous[pending[0]]
            if callable(handler):
                handler(pending[0], None)
            elif handler == signal.SIG_DFL:
                os.kill(os.getpid(), pending[0])


class _ShieldedConnection:
    """A DuckDB connection whose every call runs with signals deferred."""

    def __init__(self, con: duckdb.DuckDBPyConnection):
        self._raw = con

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._raw, name)
        if not callable(attr):
            return attr

        def shielded(*args: Any, **kwargs: Any) -> Any:
            with signals_deferred():
                result = attr(*args, **kwargs)
            return self if result is self._raw else result

        return shielded


ROWS_PER_STATEMENT = 500  # a grid's cells or a long series: bounded statements


def _many_rows(sql: str, n: int) -> str:
    """`INSERT ... VALUES (?, ?)` for n rows: its VALUES tuple repeated n times."""
    head, _, values = sql.rpartition("VALUES ")
    tail = ""
    if ")" in values and not values.rstrip().endswith(")"):  # e.g. ON CONFLICT after the tuple
        values, tail = values[: values.index(")") + 1], values[values.index(")") + 1 :]
    return f"{head}VALUES {', '.join([values.strip()] * n)}{tail}"


class Store:
    """`Store.open(dir)`; every `record_*` call commits before it returns."""

    def __init__(self, directory: Path, con: duckdb.DuckDBPyConnection, read_only: bool):
        self.directory = directory
        self.read_only = read_only
        self._con = _ShieldedConnection(con)
        # rounds' arm orders not written yet: they go with the next run (see record_round_order)
        self._orders: dict[tuple[str, int], list] = {}
        # a resume accepted by start_experiment, written by mark_running when runs are added
        self._pending_resume: tuple[str, str, str] | None = None

    @classmethod
    def open(cls, directory: str | Path, *, read_only: bool = False) -> "Store":
        directory = Path(directory)
        db = directory / DB_FILE
        if read_only and not db.exists():
            raise LonglookError(
                f"{directory}: no results here (no {DB_FILE})", hint="give the directory that `longlook run` wrote to"
            )
        directory.mkdir(parents=True, exist_ok=True)
        try:
            con = duckdb.connect(str(db), read_only=read_only)
        except duckdb.IOException as e:
            damaged = "not a valid DuckDB database" in str(e)
            raise LonglookError(
                f"{db}: cannot open: {e}",
                hint="not an experiment store, or a damaged one: use an undamaged copy"
                if damaged
                else "is an experiment still running on this directory?",
            ) from None
        except duckdb.Error as e:
            raise LonglookError(
                f"{db}: cannot open: the store is damaged ({str(e).splitlines()[0]})",
                hint="use an undamaged copy of the experiment directory",
            ) from None
        store = cls(directory, con, read_only)
        store._check_layout()
        if not read_only:
            store._con.execute(_SCHEMA)
            store_check.mark_schema(store._con)
            store._create_kind_tables()
        else:  # every reader (report, compare, states, analyses, export) passes here once
            try:
                store_check.check_readable(store._con, directory, _SCHEMA, _JSON_COLUMNS)
            except BaseException:
                store.close()
                raise
        return store

    def _check_layout(self) -> None:
        cols = {
            r[0]
            for r in self._con.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = 'experiments'"
            ).fetchall()
        }
        if cols and "kind" not in cols:
            self._con.close()
            raise LonglookError(
                f"{self.directory}: results of an older longlook (before kinds)",
                hint="re-run the scenario into a new directory",
            )

    def close(self) -> None:
        if self._orders:  # rounds that stored no run this session (all settled before)
            with contextlib.suppress(duckdb.Error, LonglookError):
                self._transaction([self._orders_statement()], many=True)
        self._con.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the kind

    def kind_name(self) -> str | None:
        row = (
            self._con.execute("SELECT kind FROM experiments ORDER BY started_at LIMIT 1").fetchone()
            if self._has_table("experiments")
            else None
        )
        return row[0] if row else None

    def kind(self):
        from .registry import get_kind

        name = self.kind_name()
        return get_kind(name) if name else None

    def _create_kind_tables(self, kind=None) -> None:
        kind = kind or (self.kind() if self.kind_name() else None)
        for name, columns in (getattr(kind, "tables", None) or {}).items():
            self._con.execute(_table_ddl(name, columns))

    def _has_table(self, name: str) -> bool:
        return bool(
            self._con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [name]).fetchone()[
                0
            ]
        )

    # -- transactions

    def _transaction(self, statements: Iterable[tuple[str, list]], many: bool = False) -> None:
        """All or nothing, including when interrupted (KeyboardInterrupt is a BaseException).
        Each statement's params are one row, or a list of rows when many=True."""
        con = self._con
        with signals_deferred():  # a run is committed whole even when Ctrl-C arrives now
            con.begin()
            try:
                for sql, params in statements:
                    if not many:
                        con.execute(sql, params)
                    elif params:
                        # one statement of many rows: DuckDB's executemany runs each row
                        # as its own statement, ~10 ms a run's worth of metrics
                        for i in range(0, len(params), ROWS_PER_STATEMENT):
                            chunk = params[i : i + ROWS_PER_STATEMENT]
                            con.execute(_many_rows(sql, len(chunk)), [v for row in chunk for v in row])
                con.commit()
            except duckdb.Error as e:
                self._rollback()
                # a full disk shows at the statement (IOException) or, when the rows fit in
                # memory, at the commit's WAL write (TransactionException)
                if "space left" in str(e).lower():
                    raise LonglookError(
                        f"{self.directory}: no space left on device to store the run",
                        hint="free space, then rerun with --resume: finished runs are kept",
                    ) from None
                raise
            except BaseException:
                self._rollback()
                raise

    def _rollback(self) -> None:
        """Undo the open transaction; a commit that failed has already ended it."""
        try:
            self._con.rollback()
        except duckdb.TransactionException:
            pass

    # -- experiment

    def start_experiment(
        self, scenario: ScenarioBase, versions: dict[str, Any] | None = None, *, allow_version_change: bool = False
    ) -> str:
        """Record the experiment and its cells; on a directory that already holds this
        scenario, resume it (same id), also when the scenario only gained arms (recorded with
        the resumption: its runs so far are the old arms'). A different scenario is refused,
        and so is resuming with other software versions (results would mix them) unless
        allow_version_change, which records what changed."""
        from .registry import get_kind

        toml = scenario.toml_text or scenario.model_dump_json()
        self._create_kind_tables(get_kind(scenario.kind))
        existing = self._con.execute(
            "SELECT id, scenario_toml, versions FROM experiments ORDER BY started_at LIMIT 1"
        ).fetchone()
        if existing:
            exp_id, stored_toml, stored_versions = existing
            added = self._arms_added(stored_toml, scenario) if stored_toml != toml else None
            if stored_toml != toml and not added:
                self._refuse_other_scenario(stored_toml, scenario)
            merged = self._resumed_versions(json.loads(stored_versions or "{}"), versions, allow_version_change)
            if added:  # the runs so far are the old arms'; the scenario is the grown one from now on
                merged["resumed"][-1]["arms_added"] = added
            kept_toml = toml if added else stored_toml
            self._record_cells(scenario)
            # written when runs are added (mark_running): a resume that finds nothing left to
            # run must not say the experiment went on with other software
            self._pending_resume = (json.dumps(merged), kept_toml, exp_id)
            return exp_id
        exp_id = f"{utcnow():%Y%m%dT%H%M%SZ}-{new_run_id()[-4:]}"
        self._transaction(
            [
                (
                    "INSERT INTO experiments VALUES (?, ?, ?, ?, ?, ?, NULL, ?)",
                    [
                        exp_id,
                        scenario.kind,
                        scenario.name,
                        toml,
                        scenario.seed,
                        utcnow(),
                        json.dumps(versions or {}, default=str),
                    ],
                )
            ]
        )
        self._record_cells(scenario)
        return exp_id

    def check_scenario(self, scenario: ScenarioBase) -> None:
        """Refuse when this directory holds another scenario's results (a reader that gives
        a verdict for `scenario`, e.g. `reproduce --no-run`, calls this)."""
        exp = self.experiment()
        stored = exp["scenario_toml"] if exp else None
        if stored is not None and stored != (scenario.toml_text or scenario.model_dump_json()):
            self._refuse_other_scenario(stored, scenario)

    def _arms_added(self, stored_toml: str, scenario: ScenarioBase) -> list[str] | None:
        """The arms `scenario` adds to the stored one when nothing else changed (spec.arms_added)."""
        from .spec import arms_added, parse_scenario

        try:
            stored = parse_scenario(stored_toml, source="the stored scenario", base_dir=scenario.base_dir)
        except LonglookError:
            return None
        return arms_added(stored, scenario)

    def _refuse_other_scenario(self, stored_toml: str, scenario: ScenarioBase) -> None:
        """Another text is fine when it parses to the same scenario (a comment changed)."""
        from .spec import parse_scenario, scenario_differences

        try:
            stored = parse_scenario(stored_toml, source="the stored scenario", base_dir=scenario.base_dir)
        except LonglookError:
            differences = ["the stored scenario no longer parses with this longlook"]
        else:
            differences = scenario_differences(stored, scenario)
        if differences:
            shown = "; ".join(differences[:8]) + (f"; and {len(differences) - 8} more" if len(differences) > 8 else "")
            raise LonglookError(
                f"{self.directory}: holds results of another scenario ({shown})",
                hint="use a new directory for a new or changed scenario",
            )

    def mark_running(self) -> None:
        """Runs are about to be added: the experiment is not ended any more, and a resume
        start_experiment accepted is recorded (its versions, and the scenario when it gained arms)."""
        statements = [("UPDATE experiments SET ended_at = NULL", [])]
        pending, self._pending_resume = self._pending_resume, None
        if pending is not None:
            statements.insert(0, ("UPDATE experiments SET versions = ?, scenario_toml = ? WHERE id = ?", list(pending)))
        self._transaction(statements)

    def _resumed_versions(self, stored: dict, now: dict | None, allow: bool) -> dict:
        resumed = {"at": utcnow().isoformat(timespec="seconds") + "Z"}
        if now is not None:
            # the checkout's commit may move on between sessions (a fix elsewhere, docs): each
            # session records its own; the binaries' and packages' versions are what must hold
            was = with_datapath(stored)
            changed = {
                k: {"was": was.get(k), "now": v}
                for k, v in now.items()
                if k not in ("resumed", "commit") and was.get(k) != v
            }
            if now.get("commit") != stored.get("commit"):
                resumed["commit"] = now.get("commit")
            if changed and not allow:
                what = "; ".join(f"{k}: {c['was']} -> {c['now']}" for k, c in changed.items())
                first = was["testbed"]["datapath"]
                now_datapath = (now.get("testbed") or {}).get("datapath")
                raise LonglookError(
                    f"{self.directory}: versions changed since this experiment started ({what})",
                    hint=(
                        f"LONGLOOK_DATAPATH={first} resumes it on the datapath it started on; or "
                        if now_datapath and now_datapath != first
                        else ""
                    )
                    + "use a new directory, or resume with --allow-version-change (the change is "
                    "recorded with the experiment and its report)",
                )
            if changed:
                resumed["changed"] = changed
        return {**stored, "resumed": [*stored.get("resumed", []), resumed]}

    def finish_experiment(self) -> None:
        self._transaction([("UPDATE experiments SET ended_at = ?", [utcnow()])])

    def experiment(self) -> dict[str, Any] | None:
        df = self._frame("experiments")
        # a NULL column is None, as written (pandas reads a NULL timestamp as NaT, which `is
        # not None`: an interrupted experiment read as ended)
        return None if df.empty else {k: (None if _is_null(v) else v) for k, v in df.iloc[0].to_dict().items()}

    def scenario(self) -> ScenarioBase:
        from .spec import parse_scenario

        exp = self.experiment()
        if exp is None:
            raise LonglookError(f"{self.directory}: no experiment recorded")
        return parse_scenario(exp["scenario_toml"], source=f"{self.directory} (stored scenario)")

    def _record_cells(self, scenario: ScenarioBase) -> None:
        rows = [
            [
                c.id,
                c.index,
                c.link.name,
                c.link.model_dump_json(exclude_none=True),
                json.dumps(c.dims(), default=str),
                json.dumps(c.settings(), default=str),
            ]
            for c in scenario.cells()
        ]
        self._transaction([("INSERT INTO cells VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING", rows)], many=True)

    # -- runs

    def run_dir(self, run_id: str) -> Path:
        d = self.directory / RUNS_DIR / run_id
        d.mkdir(parents=True, exist_ok=True)
        return d

    def record_run(self, r: RunRecord) -> None:
        """Store one run with its metrics, series and kind rows atomically; durable when
        this returns."""
        a = r.audit
        row = [
            r.run_id,
            r.cell_id,
            r.round,
            r.position,
            r.arm,
            r.attempt,
            r.status,
            r.error,
            r.protocol_requested,
            r.protocol_negotiated,
            _naive_utc(r.started_at),
            r.duration_s,
            json.dumps(r.options, default=str),
            json.dumps(r.artifacts),
            json.dumps(r.details, default=str),
            a.get("released"),
            a.get("late_releases"),
            a.get("max_release_late_ms"),
            a.get("kernel_queue_drops"),
            a.get("stalls"),
            a.get("max_stall_ms"),
            bool(a.get("flagged", False)),
            "; ".join(a.get("reasons") or []) or None,
            utcnow(),
        ]
        statements = [
            (f"INSERT INTO runs ({', '.join(_RUN_COLUMNS)}) VALUES ({', '.join('?' * len(row))})", [row]),
            ("INSERT INTO metrics VALUES (?, ?, ?)", [[r.run_id, k, v] for k, v in r.metrics.items() if v is not None]),
            (
                "INSERT INTO series VALUES (?, ?, ?, ?, ?)",
                [[r.run_id, s["name"], s.get("key", ""), s["t_s"], s["value"]] for s in r.series],
            ),
        ]
        for table, rows in r.rows.items():
            if not rows:
                continue
            cols = list(rows[0])
            statements.append(
                (
                    f"INSERT INTO {table} (run_id, {', '.join(cols)}) VALUES ({', '.join('?' * (len(cols) + 1))})",
                    [[r.run_id, *(x.get(c) for c in cols)] for x in rows],
                )
            )
        if self._orders:
            statements.append(self._orders_statement())
        self._transaction(statements, many=True)
        self._orders.clear()

    def set_aside_failed(self, arms: list[str], because: str) -> list[str]:
        """Move the failed runs of the arms matching `arms` (fnmatch patterns) out of `runs`
        into `set_aside_runs`, each with `because` and when: their slots are then unsettled,
        and the next resume runs them again (after a harness defect that failed them is
        fixed). Nothing is deleted: the rows keep every column, their files stay in runs/.
        A run that completed stays: it is a measurement. The run ids set aside."""
        if not because.strip():
            raise LonglookError(
                "say why the runs are set aside (--because)", hint='e.g. --because "client bug, fixed in abc123"'
            )
        known = [a for (a,) in self._con.execute("SELECT DISTINCT arm FROM runs ORDER BY arm").fetchall()]
        chosen = sorted({a for a in known for p in arms if fnmatch.fnmatchcase(a, p)})
        unmatched = [p for p in arms if not any(fnmatch.fnmatchcase(a, p) for a in known)]
        if unmatched:
            raise LonglookError(
                f"{self.directory}: no arm matches {', '.join(map(repr, unmatched))}",
                hint=f"its arms: {', '.join(known[:12])}{' ...' if len(known) > 12 else ''}",
            )
        marks = ", ".join("?" * len(chosen))
        ids = [
            r
            for (r,) in self._con.execute(
                f"SELECT run_id FROM runs WHERE arm IN ({marks}) AND status <> 'ok' ORDER BY run_id", chosen
            ).fetchall()
        ]
        if not ids:
            return []
        self._con.execute(
            "CREATE TABLE IF NOT EXISTS set_aside_runs AS SELECT *, CAST(NULL AS VARCHAR) AS set_aside_because, "
            "CAST(NULL AS TIMESTAMP) AS set_aside_at FROM runs LIMIT 0"
        )
        id_marks = ", ".join("?" * len(ids))
        self._transaction(
            [
                (
                    f"INSERT INTO set_aside_runs SELECT *, ?, ? FROM runs WHERE run_id IN ({id_marks})",
                    [because, utcnow(), *ids],
                ),
                (f"DELETE FROM runs WHERE run_id IN ({id_marks})", ids),
            ]
        )
        return ids

    def set_aside_frame(self) -> pd.DataFrame:
        """The runs set aside (set_aside_failed), or an empty frame where none were."""
        if not self._has_table("set_aside_runs"):
            return pd.DataFrame(columns=["run_id", "arm", "status", "error", "set_aside_because", "set_aside_at"])
        return self._con.execute("SELECT * FROM set_aside_runs ORDER BY run_id").df()

    def settled(self, cell_id: str, retries: int, *, retry_flagged: bool = False) -> set[tuple[int, str]]:
        """(round, arm) pairs that need no more runs: one run that settles it (core.status),
        or every attempt used."""
        rows = self._con.execute(
            "SELECT round, arm, status, coalesce(audit_flagged, false), "
            "count(*) OVER (PARTITION BY round, arm) AS n FROM runs WHERE cell_id = ?",
            [cell_id],
        ).fetchall()
        return {
            (int(rnd), arm)
            for rnd, arm, status, flagged, n in rows
            if settles(status, flagged, retry_flagged=retry_flagged) or n > retries
        }

    def completed_runs(self, cell_id: str) -> set[tuple[int, str]]:
        """(round, arm) pairs of this cell that already have an ok run."""
        rows = self._con.execute(
            "SELECT DISTINCT round, arm FROM runs WHERE cell_id = ? AND status = 'ok'", [cell_id]
        ).fetchall()
        return {(int(r), a) for r, a in rows}

    def attempt_counts(self, cell_id: str) -> dict[tuple[int, str], int]:
        """How many times each (round, arm) of this cell has been tried, whatever the outcome."""
        rows = self._con.execute(
            "SELECT round, arm, count(*) FROM runs WHERE cell_id = ? GROUP BY round, arm", [cell_id]
        ).fetchall()
        return {(int(rnd), arm): int(n) for rnd, arm, n in rows}

    def attempts(self, cell_id: str, round: int, arm: str) -> int:
        """How many times this (cell, round, arm) has been tried, whatever the outcome."""
        return int(
            self._con.execute(
                "SELECT count(*) FROM runs WHERE cell_id = ? AND round = ? AND arm = ?", [cell_id, round, arm]
            ).fetchone()[0]
        )

    def record_round_order(self, cell_id: str, round: int, order: list[str]) -> None:
        """The arms' order in a round, written with the round's next stored run (one commit
        instead of two: ~3 ms a run; an order matters only beside its runs), or at close."""
        self._orders[(cell_id, round)] = [cell_id, round, json.dumps(order)]

    def _orders_statement(self) -> tuple[str, list]:
        return ("INSERT INTO round_orders VALUES (?, ?, ?) ON CONFLICT DO NOTHING", list(self._orders.values()))

    def record_link_check(
        self, profile_name: str, configured: dict, measured: dict, passed: bool, detail: str | None = None
    ) -> None:
        self._transaction(
            [
                (
                    "INSERT INTO link_checks VALUES (?, ?, ?, ?, ?, ?)",
                    [
                        profile_name,
                        json.dumps(configured, default=str),
                        json.dumps(measured, default=str),
                        passed,
                        detail,
                        utcnow(),
                    ],
                )
            ]
        )

    # -- reading

    def _frame(self, table: str, order: str = "") -> pd.DataFrame:
        df = self._con.execute(f"SELECT * FROM {sql_identifier(table)} {order}").df()
        key = store_check.ROW_KEY.get(table)
        for col in _JSON_COLUMNS.get(table, ()):
            df[col] = [
                store_check.decode(self.directory, table, col, k, v)
                for k, v in zip(df[key] if key else df.index, df[col])
            ]
        return df

    def runs_frame(self) -> pd.DataFrame:
        """One row per run: the runs table, one column per metric (the kind's, NaN where not
        measured) and one per detail key."""
        runs = self._frame("runs", "ORDER BY recorded_at, run_id")
        metrics = self._con.execute("SELECT run_id, name, value FROM metrics").df()
        names = list(dict.fromkeys([*(m.name for m in getattr(self.kind_or_none(), "metrics", ())), *metrics["name"]]))
        wide = (
            metrics.pivot_table(index="run_id", columns="name", values="value", aggfunc="first")
            if len(metrics)
            else pd.DataFrame(index=pd.Index([], name="run_id"))
        )
        wide = wide.reindex(columns=names)
        runs = runs.join(wide, on="run_id")
        details = pd.DataFrame([d if isinstance(d, dict) else {} for d in runs["details"]], index=runs.index)
        extra = [c for c in details.columns if c not in runs.columns]
        return pd.concat([runs, details[extra]], axis=1)

    def kind_or_none(self):
        try:
            return self.kind()
        except LonglookError:
            return None

    def table(self, name: str, order: str = "") -> pd.DataFrame:
        """One of the kind's tables (e.g. objects, flows)."""
        if not self._has_table(name):
            raise LonglookError(f"{self.directory}: no table {name!r} in this experiment")
        return self._frame(name, order)

    def series(self, run_id: str | None = None, name: str | None = None) -> pd.DataFrame:
        where, params = [], []
        if run_id is not None:
            where.append("run_id = ?")
            params.append(run_id)
        if name is not None:
            where.append("name = ?")
            params.append(name)
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        return self._con.execute(f"SELECT * FROM series {clause} ORDER BY run_id, name, key, t_s", params).df()

    def cells_frame(self) -> pd.DataFrame:
        return self._frame("cells", "ORDER BY position")

    def link_checks_frame(self) -> pd.DataFrame:
        return self._frame("link_checks", "ORDER BY checked_at")

    def round_orders_frame(self) -> pd.DataFrame:
        return self._frame("round_orders", "ORDER BY cell_id, round")

    def sql(self, query: str, params: list | None = None) -> pd.DataFrame:
        """Ad-hoc queries (notebooks)."""
        return self._con.execute(query, params or []).df()


def _is_null(value: Any) -> bool:
    return value is None or value is pd.NaT or (isinstance(value, float) and math.isnan(value))
