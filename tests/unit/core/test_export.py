"""`longlook export` and `longlook.open`: the store's tables as files and as pandas frames,
read back equal to the store; docs/notebook.ipynb runs against a small experiment."""

import json
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import longlook
from longlook.cli import app
from longlook.core.record import new_run_id
from longlook.core.store import DB_FILE, Store, environment_versions
from longlook.kinds.pageload import Scenario, record_from_fetch
from repo_paths import ROOT

SCENARIO = """
name = "export-test"
rounds = 3
workloads = ["1x5k", "1x1m"]
[[links]]
rate_mbit = 10
rtt_ms = 36
"""


def _make(directory: Path) -> None:
    """Two cells x 3 rounds x h3/h2, each run with a short cwnd series and one object row;
    one h3 run fell back to h2 (kept, not counted)."""
    sc = Scenario.from_toml(SCENARIO)
    rng = np.random.default_rng(7)
    with Store.open(directory) as st:
        st.start_experiment(sc, environment_versions(endpoint="endpoint 0.1.0", linkem="linkem 0.1.0"))
        for cell in sc.cells():
            for rnd in range(sc.rounds):
                order = sc.round_order(cell, rnd)
                st.record_round_order(cell.id, rnd, [a.label for a in order])
                for pos, arm in enumerate(order):
                    fell_back = cell.index == 0 and rnd == 1 and arm.label == "h3"
                    plt = (70 if arm.label == "h3" else 100) * rng.normal(1, 0.02)
                    f = {
                        "protocol_requested": arm.protocol,
                        "protocol": "h2" if fell_back else arm.protocol,
                        "ok": True,
                        "plt_ms": plt,
                        "zero_rtt": {"attempted": False, "accepted": False},
                        "objects": [
                            {
                                "path": "/obj/x/0.jpg",
                                "bytes": cell.workload.object_size,
                                "start_ms": 1.0,
                                "first_byte_ms": 2.0,
                                "end_ms": plt,
                            }
                        ],
                    }
                    rec = record_from_fetch(
                        f, run_id=new_run_id(), cell_id=cell.id, round=rnd, position=pos, arm=arm.label
                    )
                    rec = rec.model_copy(
                        update={
                            "series": [
                                {"name": "cwnd", "key": "server", "t_s": t / 10, "value": 10.0 + t} for t in range(4)
                            ]
                        }
                    )
                    st.record_run(rec)
        st.finish_experiment()


@pytest.fixture(scope="module")
def experiment(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("export") / "exp"
    _make(d)
    return d


def _store_frame(directory: Path, sql: str) -> pd.DataFrame:
    con = duckdb.connect(str(directory / DB_FILE), read_only=True)
    try:
        return con.execute(sql).df()
    finally:
        con.close()


def _read(path: Path) -> pd.DataFrame:
    return duckdb.sql(f"SELECT * FROM '{path}'").df()


def _same(a: pd.DataFrame, b: pd.DataFrame, key: list[str]) -> None:
    a = a.sort_values(key).reset_index(drop=True)
    b = b.sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b[a.columns], check_dtype=False)


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_export_round_trips(experiment, tmp_path, fmt):
    out = tmp_path / fmt
    result = CliRunner().invoke(app, ["export", str(experiment), "--format", fmt, "--out", str(out)])
    assert result.exit_code == 0, result.output
    files = {p.name for p in out.iterdir()}
    assert {
        f"{t}.{fmt}"
        for t in ("runs", "metrics", "series", "cells", "experiments", "link_checks", "round_orders", "objects")
    } <= files

    runs = _read(out / f"runs.{fmt}")
    stored_runs = _store_frame(experiment, "SELECT * FROM runs")
    assert len(runs) == len(stored_runs) == 12
    # every stored column, as stored; CSV types come back by DuckDB's inference, so compare
    # the columns that inference cannot change the meaning of
    cols = (
        list(stored_runs.columns)
        if fmt == "parquet"
        else [
            "run_id",
            "cell_id",
            "round",
            "position",
            "arm",
            "status",
            "protocol_requested",
            "protocol_negotiated",
            "audit_flagged",
            "options",
            "artifacts",
            "details",
        ]
    )
    _same(stored_runs[cols], runs[cols], ["run_id"])
    # the cell's dimensions as columns
    cells = _store_frame(experiment, "SELECT cell_id, dims FROM cells")
    dims = {c: json.loads(d) for c, d in zip(cells["cell_id"], cells["dims"])}
    for row in runs.itertuples():
        assert row.rate_mbit == dims[row.cell_id]["rate_mbit"]
        assert row.workload == dims[row.cell_id]["workload"]

    # metrics: wide, back to long equals the store
    wide = _read(out / f"metrics.{fmt}")
    assert len(wide) == 12 and "plt_ms" in wide.columns
    long = wide.melt(id_vars="run_id", var_name="name", value_name="value").dropna(subset=["value"])
    _same(_store_frame(experiment, "SELECT run_id, name, value FROM metrics"), long, ["run_id", "name"])

    for table, key in (
        ("series", ["run_id", "name", "key", "t_s"]),
        ("objects", ["run_id", "path"]),
        ("round_orders", ["cell_id", "round"]),
    ):
        _same(_store_frame(experiment, f"SELECT * FROM {table}"), _read(out / f"{table}.{fmt}"), key)


def test_export_without_a_store_names_the_directory(tmp_path):
    result = CliRunner().invoke(app, ["export", str(tmp_path)])
    assert result.exit_code != 0
    assert str(tmp_path) in str(result.exception) and "longlook run" in str(result.exception)


def test_export_rejects_an_unknown_format(experiment, tmp_path):
    result = CliRunner().invoke(app, ["export", str(experiment), "--format", "xlsx", "--out", str(tmp_path)])
    assert result.exit_code != 0 and "parquet or csv" in str(result.exception)


def test_open_gives_frames_and_the_reports_comparisons(experiment):
    from longlook.core.experiment_stats import analyse

    r = longlook.open(experiment)
    assert len(r.runs) == 12 and {"rate_mbit", "workload", "arm", "status", "audit_flagged"} <= set(r.runs.columns)
    assert isinstance(r.runs["details"].iloc[0], dict)  # JSON columns decoded in Python
    assert list(r.metrics["run_id"]) == list(r.runs["run_id"])
    assert len(r.series) == 12 * 4 and set(r.tables) == {"objects"}
    assert len(r.cells) == 2
    with Store.open(experiment, read_only=True) as st:
        expected = analyse(st).frame()
    pd.testing.assert_frame_equal(r.comparisons(), expected)
    # the fell-back QUIC run is kept among the runs but not counted
    assert set(r.comparisons()["n_a"]) == {2, 3}


def test_notebook_runs(experiment, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    from nbclient import NotebookClient

    nb = nbformat.read(ROOT / "docs" / "notebook.ipynb", as_version=4)
    monkeypatch.setenv("LONGLOOK_EXPERIMENT", str(experiment))
    NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(ROOT / "docs")}}
    ).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any("QUIC faster" in str(o.get("data", {})) for o in outputs)
