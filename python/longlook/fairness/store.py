"""Fairness results in their own DuckDB file beside the page-load store:

    DIR/fairness.duckdb   fairness_experiment, fairness_cells, fairness_runs, fairness_flows,
                          fairness_timeline, fairness_cwnd
    DIR/runs/<run_id>/    fetch JSON per flow, the run's linkem flow log, server logs

A separate file keeps the page-load schema untouched and lets a fairness experiment live in
the same directory as a page-load one. Each run is written in one transaction, so a run is
wholly there or absent; `--resume` asks `completed_runs` what is done.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import pandas as pd

from ..errors import LonglookError
from .measure import RunMeasurement
from .scenario import FairnessCell, FairnessScenario

DB_FILE = "fairness.duckdb"
RUNS_DIR = "runs"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS fairness_experiment (
    name VARCHAR, fingerprint VARCHAR, scenario_toml VARCHAR, started_at TIMESTAMP,
    ended_at TIMESTAMP, versions VARCHAR);
CREATE TABLE IF NOT EXISTS fairness_cells (
    cell_id VARCHAR PRIMARY KEY, position INTEGER, matchup VARCHAR, start VARCHAR,
    quic_cc VARCHAR, n_conn INTEGER, tcp_cc VARCHAR, buffer_bytes BIGINT, rate_mbit DOUBLE,
    rtt_ms DOUBLE, duration_s DOUBLE, stagger_s DOUBLE, link_profile VARCHAR);
CREATE TABLE IF NOT EXISTS fairness_runs (
    run_id VARCHAR PRIMARY KEY, cell_id VARCHAR, run_index INTEGER, status VARCHAR,
    error VARCHAR, launched_at TIMESTAMP, window_start_s DOUBLE, window_end_s DOUBLE,
    jain DOUBLE, jain_weighted DOUBLE, total_mbit DOUBLE, recorded_at TIMESTAMP);
CREATE TABLE IF NOT EXISTS fairness_flows (
    run_id VARCHAR, cell_id VARCHAR, flow VARCHAR, position INTEGER, protocol VARCHAR,
    weight INTEGER, start_s DOUBLE, status VARCHAR, error VARCHAR, local_addr VARCHAR,
    router_mbit DOUBLE, lifetime_mbit DOUBLE, router_bytes BIGINT, router_packets BIGINT,
    router_dropped_buffer BIGINT, endpoint_bytes BIGINT, endpoint_mbit DOUBLE,
    stopped_early BOOLEAN, expected_share DOUBLE, share DOUBLE);
CREATE TABLE IF NOT EXISTS fairness_timeline (run_id VARCHAR, flow VARCHAR, t_s DOUBLE, mbit DOUBLE);
CREATE TABLE IF NOT EXISTS fairness_cwnd (run_id VARCHAR, flow VARCHAR, t_s DOUBLE, cwnd_bytes DOUBLE);
"""


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


class FairnessStore:
    def __init__(self, directory: Path, con: duckdb.DuckDBPyConnection):
        self.directory = directory
        self.con = con

    @classmethod
    def open(cls, directory: str | Path, *, read_only: bool = False) -> "FairnessStore":
        directory = Path(directory)
        path = directory / DB_FILE
        if read_only:
            if not path.exists():
                raise LonglookError(f"{directory}: no fairness results ({DB_FILE} missing)",
                                    hint="run `longlook fairness SCENARIO --out DIR` first")
        else:
            directory.mkdir(parents=True, exist_ok=True)
        con = duckdb.connect(str(path), read_only=read_only)
        if not read_only:
            con.execute(_SCHEMA)
        return cls(directory, con)

    @staticmethod
    def exists(directory: str | Path) -> bool:
        return (Path(directory) / DB_FILE).exists()

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> "FairnessStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- experiment ------------------------------------------------------------------

    def start(self, scenario: FairnessScenario, *, resume: bool, versions: dict | None = None) -> None:
        """Record the scenario; with results present, continue only with `resume` and the
        same scenario."""
        row = self.con.execute("SELECT fingerprint FROM fairness_experiment").fetchone()
        if row is not None:
            if not resume:
                raise LonglookError(f"{self.directory}: already holds fairness results",
                                    hint="add --resume to continue it, or choose another --out")
            if row[0] != scenario.fingerprint():
                raise LonglookError(f"{self.directory}: holds results of another (or an edited) fairness scenario",
                                    hint="choose another --out")
            return
        cells = scenario.cells()
        self.con.execute("BEGIN")
        self.con.execute("INSERT INTO fairness_experiment VALUES (?, ?, ?, ?, NULL, ?)",
                         [scenario.name, scenario.fingerprint(), scenario.toml_text, _now(),
                          json.dumps(versions or {})])
        for c in cells:
            d = c.dims()
            self.con.execute("INSERT INTO fairness_cells VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                             [c.id, c.index, d["matchup"], d["start"], d["quic_cc"], d["n_conn"],
                              d["tcp_cc"], d["buffer_bytes"], d["rate_mbit"], d["rtt_ms"],
                              c.duration_s, c.stagger_s, c.link.model_dump_json(exclude_none=True)])
        self.con.execute("COMMIT")

    def finish(self) -> None:
        self.con.execute("UPDATE fairness_experiment SET ended_at = ?", [_now()])

    def scenario(self) -> FairnessScenario:
        row = self.con.execute("SELECT scenario_toml FROM fairness_experiment").fetchone()
        if row is None:
            raise LonglookError(f"{self.directory}: no fairness experiment recorded")
        return FairnessScenario.from_toml(row[0], source=f"{self.directory} (stored scenario)")

    def run_dir(self, run_id: str) -> Path:
        return self.directory / RUNS_DIR / run_id

    # ---- runs ------------------------------------------------------------------------

    def completed_runs(self) -> set[tuple[str, int]]:
        """(cell_id, run_index) of the successful runs: `--resume` redoes the rest."""
        return {(c, i) for c, i in self.con.execute(
            "SELECT cell_id, run_index FROM fairness_runs WHERE status = 'ok'").fetchall()}

    def record_run(self, run_id: str, cell: FairnessCell, run_index: int, launched_unix: float,
                   m: RunMeasurement) -> None:
        ok_rates = [f.router_mbit for f in m.flows]
        flows = pd.DataFrame([{**asdict(f), "position": i} for i, f in enumerate(m.flows)])
        flows = flows.rename(columns={"label": "flow"})
        flows.insert(0, "cell_id", cell.id)
        flows.insert(0, "run_id", run_id)
        flows = flows[[c for c in _columns(self.con, "fairness_flows")]]
        timeline = m.timeline.assign(run_id=run_id)[["run_id", "flow", "t_s", "mbit"]]
        cwnd = m.cwnd.assign(run_id=run_id)[["run_id", "flow", "t_s", "cwnd_bytes"]]
        self.con.execute("BEGIN")
        try:
            # a redone run replaces the earlier (failed) attempt at the same place
            for table in ("fairness_flows", "fairness_timeline", "fairness_cwnd", "fairness_runs"):
                self.con.execute(f"DELETE FROM {table} WHERE run_id IN (SELECT run_id FROM fairness_runs "
                                 "WHERE cell_id = ? AND run_index = ?)", [cell.id, run_index])
            self.con.execute("INSERT INTO fairness_runs VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                             [run_id, cell.id, run_index, m.status, m.error,
                              datetime.fromtimestamp(launched_unix, timezone.utc).replace(tzinfo=None),
                              m.window[0], m.window[1], _finite(m.jain), _finite(m.jain_weighted),
                              _finite(sum(ok_rates)), _now()])
            for table, frame in (("fairness_flows", flows), ("fairness_timeline", timeline),
                                 ("fairness_cwnd", cwnd)):
                if len(frame):
                    self.con.register("incoming", frame)
                    self.con.execute(f"INSERT INTO {table} SELECT * FROM incoming")
                    self.con.unregister("incoming")
            self.con.execute("COMMIT")
        except BaseException:
            self.con.execute("ROLLBACK")
            raise

    # ---- reading ---------------------------------------------------------------------

    def frame(self, table: str, order: str = "") -> pd.DataFrame:
        return self.con.execute(f"SELECT * FROM {table} {order}").df()

    def cells(self) -> pd.DataFrame:
        return self.frame("fairness_cells", "ORDER BY position")

    def runs(self) -> pd.DataFrame:
        return self.frame("fairness_runs", "ORDER BY cell_id, run_index")

    def flows(self) -> pd.DataFrame:
        return self.frame("fairness_flows", "ORDER BY cell_id, run_id, position")

    def timeline(self, run_id: str) -> pd.DataFrame:
        return self.con.execute("SELECT flow, t_s, mbit FROM fairness_timeline WHERE run_id = ? "
                                "ORDER BY flow, t_s", [run_id]).df()

    def cwnd(self, run_id: str) -> pd.DataFrame:
        return self.con.execute("SELECT flow, t_s, cwnd_bytes FROM fairness_cwnd WHERE run_id = ? "
                                "ORDER BY flow, t_s", [run_id]).df()

    def mean_cwnd(self) -> pd.DataFrame:
        """cell_id, flow, cwnd_kb: the mean of the 50-ms cwnd samples inside each ok run's
        shared window, averaged over runs (how large a window each flow held, Fig. 5)."""
        return self.con.execute("""
            SELECT cell_id, flow, avg(run_mean) / 1000 AS cwnd_kb FROM (
                SELECT r.cell_id, c.flow, c.run_id, avg(c.cwnd_bytes) AS run_mean
                FROM fairness_cwnd c JOIN fairness_runs r USING (run_id)
                WHERE r.status = 'ok' AND c.t_s BETWEEN r.window_start_s AND r.window_end_s
                GROUP BY ALL) GROUP BY cell_id, flow""").df()

    def experiment(self) -> dict | None:
        df = self.frame("fairness_experiment")
        return None if df.empty else df.iloc[0].to_dict()


def _columns(con: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    return [r[0] for r in con.execute(f"DESCRIBE {table}").fetchall()]


def _finite(x: float) -> float | None:
    return x if x == x and abs(x) != float("inf") else None
