"""Results store: one DuckDB file per experiment directory, run artifacts beside it.

    DIR/longlook.duckdb        experiments, cells, runs, objects, link_checks, round_orders
    DIR/runs/<run_id>/...      whatever a run leaves behind (fetch JSON, qlogs, pcaps)

Each run is written in its own transaction, so a run is either wholly there or absent: an
interrupted experiment (Ctrl-C, crash) never leaves half a run, and resuming asks
`completed_runs` what is already done. JSON-valued columns are stored as text.
"""

from __future__ import annotations

import importlib.metadata
import json
import platform
import secrets
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Literal

import duckdb
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from .errors import LonglookError
from .scenario import Scenario

DB_FILE = "longlook.duckdb"
RUNS_DIR = "runs"

Status = Literal["ok", "failed", "timeout", "protocol_mismatch"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS experiments (
    id VARCHAR PRIMARY KEY, scenario_name VARCHAR, scenario_toml VARCHAR, seed BIGINT,
    started_at TIMESTAMP, ended_at TIMESTAMP, versions VARCHAR);
CREATE TABLE IF NOT EXISTS cells (
    cell_id VARCHAR PRIMARY KEY, position INTEGER, link_name VARCHAR, link_profile VARCHAR,
    workload VARCHAR, workload_json VARCHAR, options VARCHAR, dims VARCHAR);
CREATE TABLE IF NOT EXISTS runs (
    run_id VARCHAR PRIMARY KEY, cell_id VARCHAR, round INTEGER, position INTEGER, arm VARCHAR,
    protocol_requested VARCHAR, protocol_negotiated VARCHAR, status VARCHAR, attempt INTEGER,
    error VARCHAR, plt_ms DOUBLE, handshake_ms DOUBLE, ttfb_ms DOUBLE, bytes BIGINT,
    zero_rtt_attempted BOOLEAN, zero_rtt_accepted BOOLEAN, started_at TIMESTAMP,
    duration_s DOUBLE, url VARCHAR, mode VARCHAR, local_addr VARCHAR, options VARCHAR,
    artifacts VARCHAR, goodput VARCHAR, recorded_at TIMESTAMP);
CREATE TABLE IF NOT EXISTS objects (
    run_id VARCHAR, path VARCHAR, status INTEGER, bytes BIGINT, start_ms DOUBLE,
    first_byte_ms DOUBLE, end_ms DOUBLE);
CREATE TABLE IF NOT EXISTS link_checks (
    profile_name VARCHAR, configured VARCHAR, measured VARCHAR, passed BOOLEAN,
    detail VARCHAR, checked_at TIMESTAMP);
CREATE TABLE IF NOT EXISTS round_orders (
    cell_id VARCHAR, round INTEGER, arm_order VARCHAR, PRIMARY KEY (cell_id, round));
"""

_JSON_COLUMNS = {
    "experiments": ("versions",),
    "cells": ("link_profile", "workload_json", "options", "dims"),
    "runs": ("options", "artifacts", "goodput"),
    "link_checks": ("configured", "measured"),
    "round_orders": ("arm_order",),
}


def utcnow() -> datetime:
    """Naive UTC (the store's TIMESTAMP columns are UTC by convention)."""
    return datetime.now(timezone.utc).replace(tzinfo=None)


def _naive_utc(t: datetime | None) -> datetime | None:
    if t is None or t.tzinfo is None:
        return t
    return t.astimezone(timezone.utc).replace(tzinfo=None)


# ---------------------------------------------------------------- records

class ObjectTiming(BaseModel):
    """One object of a page load (fetch JSON `objects[]`); ms from the first packet sent."""

    model_config = ConfigDict(extra="ignore")
    path: str
    status: int | None = None
    bytes: int | None = None
    start_ms: float | None = None
    first_byte_ms: float | None = None
    end_ms: float | None = None


class RunRecord(BaseModel):
    """One run as stored: the fetch JSON's fields plus where the run belongs in the grid
    (cell, round, position in the round, arm, attempt) and its outcome."""

    model_config = ConfigDict(extra="forbid")
    run_id: str
    cell_id: str
    round: int = Field(ge=0)
    position: int = Field(ge=0)  # 0-based place in the round's order
    arm: str  # arm label (= protocol unless the scenario defines [[arms]])
    protocol_requested: str
    protocol_negotiated: str | None = None
    status: Status
    attempt: int = Field(default=1, ge=1)
    error: str | None = None
    plt_ms: float | None = None
    handshake_ms: float | None = None
    ttfb_ms: float | None = None
    bytes: int | None = None
    zero_rtt_attempted: bool = False
    zero_rtt_accepted: bool = False
    started_at: datetime | None = None
    duration_s: float | None = None
    url: str | None = None
    mode: str | None = None
    local_addr: str | None = None
    options: dict[str, Any] = {}  # effective run options (protocol, cc, 0-RTT, ...)
    artifacts: dict[str, str] = {}  # name -> path relative to DIR
    goodput: list[list[float]] = []  # [[t_ms, cumulative_bytes], ...]
    objects: list[ObjectTiming] = []

    @classmethod
    def from_fetch(cls, fetch: dict, *, run_id: str, cell_id: str, round: int, position: int,
                   arm: str, attempt: int = 1, timed_out: bool = False,
                   status: Status | None = None, error: str | None = None,
                   protocol_requested: str | None = None,
                   duration_s: float | None = None, options: dict | None = None,
                   artifacts: dict[str, str] | None = None) -> "RunRecord":
        """Build from `endpoint fetch` output (docs/interfaces.md). `fetch` may be {} when the
        client produced nothing (crash, timeout). The status is derived from the document
        unless given; a run over another protocol than requested is never "ok"."""
        requested = (protocol_requested or fetch.get("protocol_requested")
                     or (options or {}).get("protocol") or arm)
        derived = classify_fetch(fetch, requested, timed_out)
        if status is None or (status == "ok" and derived == "protocol_mismatch"):
            status = derived
        zr = fetch.get("zero_rtt") or {}
        started = fetch.get("started_unix_ms")
        return cls(
            run_id=run_id, cell_id=cell_id, round=round, position=position, arm=arm,
            protocol_requested=requested, protocol_negotiated=fetch.get("protocol"),
            status=status, attempt=attempt,
            error=error or fetch.get("error") or ("timed out" if status == "timeout" else None),
            plt_ms=fetch.get("plt_ms"), handshake_ms=fetch.get("handshake_ms"),
            ttfb_ms=fetch.get("ttfb_ms"), bytes=fetch.get("bytes"),
            zero_rtt_attempted=bool(zr.get("attempted", False)),
            zero_rtt_accepted=bool(zr.get("accepted", False)),
            started_at=(datetime.fromtimestamp(started / 1000, timezone.utc) if started else None),
            duration_s=duration_s, url=fetch.get("url"), mode=fetch.get("mode"),
            local_addr=fetch.get("local_addr"), options=options or {},
            artifacts=artifacts or {}, goodput=fetch.get("goodput") or [],
            objects=[ObjectTiming(**o) for o in fetch.get("objects") or []],
        )


def classify_fetch(fetch: dict, requested: str, timed_out: bool = False) -> Status:
    """ok only when the fetch succeeded over the protocol asked for; a different protocol is
    a protocol_mismatch (never counted), whatever `ok` says."""
    if timed_out:
        return "timeout"
    negotiated = fetch.get("protocol")
    if negotiated is not None and negotiated != requested:
        return "protocol_mismatch"
    if fetch.get("ok") and negotiated == requested:
        return "ok"
    return "failed"


# ---------------------------------------------------------------- versions

_PACKAGES = ("typer", "rich", "pydantic", "numpy", "scipy", "statsmodels", "pandas", "duckdb",
             "matplotlib", "jinja2")


def environment_versions(**extra: Any) -> dict[str, Any]:
    """What this process can see: longlook, Python, kernel, packages. The runner adds the
    endpoint's and linkem's versions as keyword arguments."""
    from . import __version__

    pkgs = {}
    for name in _PACKAGES:
        try:
            pkgs[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pkgs[name] = None
    return {"longlook": __version__, "python": sys.version.split()[0],
            "kernel": platform.release(), "machine": platform.machine(),
            "packages": pkgs, **extra}


# ---------------------------------------------------------------- the store

class Store:
    """`Store.open(dir)`; every `record_*` call commits before it returns."""

    def __init__(self, directory: Path, con: duckdb.DuckDBPyConnection, read_only: bool):
        self.directory = directory
        self.read_only = read_only
        self._con = con

    @classmethod
    def open(cls, directory: str | Path, *, read_only: bool = False) -> "Store":
        directory = Path(directory)
        db = directory / DB_FILE
        if read_only and not db.exists():
            raise LonglookError(f"{directory}: no results here (no {DB_FILE})",
                                hint="give the directory that `longlook run` wrote to")
        directory.mkdir(parents=True, exist_ok=True)
        try:
            con = duckdb.connect(str(db), read_only=read_only)
        except duckdb.IOException as e:
            raise LonglookError(f"{db}: cannot open: {e}",
                                hint="is an experiment still running on this directory?") from None
        if not read_only:
            con.execute(_SCHEMA)
        return cls(directory, con, read_only)

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transactions

    def _transaction(self, statements: Iterable[tuple[str, list]], many: bool = False) -> None:
        """All or nothing, including when interrupted (KeyboardInterrupt is a BaseException).
        Each statement's params are one row, or a list of rows when many=True."""
        con = self._con
        con.begin()
        try:
            for sql, params in statements:
                if not many:
                    con.execute(sql, params)
                elif params:
                    con.executemany(sql, params)
            con.commit()
        except BaseException:
            con.rollback()
            raise

    # -- experiment

    def start_experiment(self, scenario: Scenario, versions: dict[str, Any] | None = None, *,
                         allow_version_change: bool = False) -> str:
        """Record the experiment and its cells; on a directory that already holds this
        scenario, resume it (same id). A different scenario in the same directory is refused,
        and so is resuming with other software versions (results would mix them) unless
        allow_version_change, which records what changed."""
        toml = scenario.toml_text or scenario.model_dump_json()
        existing = self._con.execute(
            "SELECT id, scenario_toml, versions FROM experiments ORDER BY started_at LIMIT 1").fetchone()
        if existing:
            exp_id, stored_toml, stored_versions = existing
            if stored_toml != toml:
                raise LonglookError(
                    f"{self.directory}: holds results of another scenario (or an edited one)",
                    hint="use a new directory for a new or changed scenario")
            merged = self._resumed_versions(json.loads(stored_versions or "{}"), versions,
                                            allow_version_change)
            self._record_cells(scenario)
            self._transaction([("UPDATE experiments SET ended_at = NULL, versions = ? WHERE id = ?",
                                [json.dumps(merged), exp_id])])
            return exp_id
        exp_id = f"{utcnow():%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"
        self._transaction([(
            "INSERT INTO experiments VALUES (?, ?, ?, ?, ?, NULL, ?)",
            [exp_id, scenario.name, toml, scenario.seed, utcnow(), json.dumps(versions or {})])])
        self._record_cells(scenario)
        return exp_id

    def _resumed_versions(self, stored: dict, now: dict | None, allow: bool) -> dict:
        resumed = {"at": utcnow().isoformat(timespec="seconds") + "Z"}
        if now is not None:
            changed = {k: {"was": stored.get(k), "now": v} for k, v in now.items()
                       if k != "resumed" and stored.get(k) != v}
            if changed and not allow:
                what = "; ".join(f"{k}: {c['was']} -> {c['now']}" for k, c in changed.items())
                raise LonglookError(
                    f"{self.directory}: versions changed since this experiment started ({what})",
                    hint="use a new directory, or allow the change explicitly (it is recorded)")
            if changed:
                resumed["changed"] = changed
        return {**stored, "resumed": [*stored.get("resumed", []), resumed]}

    def finish_experiment(self) -> None:
        self._transaction([("UPDATE experiments SET ended_at = ?", [utcnow()])])

    def experiment(self) -> dict[str, Any] | None:
        df = self._frame("experiments")
        return None if df.empty else df.iloc[0].to_dict()

    def scenario(self) -> Scenario:
        exp = self.experiment()
        if exp is None:
            raise LonglookError(f"{self.directory}: no experiment recorded")
        return Scenario.from_toml(exp["scenario_toml"], source=f"{self.directory} (stored scenario)")

    def _record_cells(self, scenario: Scenario) -> None:
        rows = [[c.id, c.index, c.link.name, c.link.model_dump_json(exclude_none=True),
                 c.workload.label, c.workload.model_dump_json(), c.options.model_dump_json(),
                 json.dumps(c.dims())] for c in scenario.cells()]
        self._transaction([
            ("INSERT INTO cells VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING", rows)],
            many=True)

    # -- runs

    def new_run_id(self) -> str:
        """Sortable by time and unique: also the name of the run's artifact directory."""
        return f"{datetime.now(timezone.utc):%Y%m%dT%H%M%S%f}-{secrets.token_hex(2)}"

    def run_dir(self, run_id: str) -> Path:
        d = self.directory / RUNS_DIR / run_id
        d.mkdir(parents=True, exist_ok=True)
        return d

    def record_run(self, run: RunRecord) -> None:
        """Store one run and its objects atomically; durable when this returns."""
        r = run
        row = [r.run_id, r.cell_id, r.round, r.position, r.arm, r.protocol_requested,
               r.protocol_negotiated, r.status, r.attempt, r.error, r.plt_ms, r.handshake_ms,
               r.ttfb_ms, r.bytes, r.zero_rtt_attempted, r.zero_rtt_accepted,
               _naive_utc(r.started_at), r.duration_s, r.url, r.mode, r.local_addr,
               json.dumps(r.options), json.dumps(r.artifacts), json.dumps(r.goodput), utcnow()]
        objs = [[r.run_id, o.path, o.status, o.bytes, o.start_ms, o.first_byte_ms, o.end_ms]
                for o in r.objects]
        self._transaction([(f"INSERT INTO runs VALUES ({', '.join('?' * len(row))})", [row]),
                           ("INSERT INTO objects VALUES (?, ?, ?, ?, ?, ?, ?)", objs)], many=True)

    def completed_runs(self, cell_id: str) -> set[tuple[int, str]]:
        """(round, arm) pairs of this cell that already have an ok run: skip them on resume."""
        rows = self._con.execute(
            "SELECT DISTINCT round, arm FROM runs WHERE cell_id = ? AND status = 'ok'",
            [cell_id]).fetchall()
        return {(int(r), a) for r, a in rows}

    def attempts(self, cell_id: str, round: int, arm: str) -> int:
        """How many times this (cell, round, arm) has been tried, whatever the outcome."""
        return int(self._con.execute(
            "SELECT count(*) FROM runs WHERE cell_id = ? AND round = ? AND arm = ?",
            [cell_id, round, arm]).fetchone()[0])

    def record_round_order(self, cell_id: str, round: int, order: list[str]) -> None:
        self._transaction([("INSERT INTO round_orders VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                            [cell_id, round, json.dumps(order)])])

    def record_link_check(self, profile_name: str, configured: dict, measured: dict,
                          passed: bool, detail: str | None = None) -> None:
        self._transaction([("INSERT INTO link_checks VALUES (?, ?, ?, ?, ?, ?)",
                            [profile_name, json.dumps(configured, default=str),
                             json.dumps(measured, default=str), passed, detail, utcnow()])])

    # -- reading

    def _frame(self, table: str, order: str = "") -> pd.DataFrame:
        df = self._con.execute(f"SELECT * FROM {table} {order}").df()
        for col in _JSON_COLUMNS.get(table, ()):
            df[col] = df[col].map(lambda s: json.loads(s) if isinstance(s, str) else s)
        return df

    def runs_frame(self) -> pd.DataFrame:
        return self._frame("runs", "ORDER BY recorded_at, run_id")

    def objects_frame(self) -> pd.DataFrame:
        return self._frame("objects", "ORDER BY run_id, start_ms")

    def cells_frame(self) -> pd.DataFrame:
        return self._frame("cells", "ORDER BY position")

    def link_checks_frame(self) -> pd.DataFrame:
        return self._frame("link_checks", "ORDER BY checked_at")

    def round_orders_frame(self) -> pd.DataFrame:
        return self._frame("round_orders", "ORDER BY cell_id, round")

    def sql(self, query: str, params: list | None = None) -> pd.DataFrame:
        """Ad-hoc queries (notebooks)."""
        return self._con.execute(query, params or []).df()
