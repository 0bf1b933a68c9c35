"""An experiment directory as pandas frames: the Python API for notebooks, and what
`longlook export` writes.

    import longlook
    r = longlook.open("results/quick")
    r.runs           # one row per run: the runs table (status, protocols, audit_* columns),
                     # with its cell's dimensions as columns (rate_mbit, rtt_ms, workload, ...)
    r.metrics        # wide: run_id and one column per metric (NaN where a run has none)
    r.series         # long: run_id, name, key, t_s, value (time series of a run)
    r.tables         # the kind's own tables by name (pageload: objects; fairness: flows; ...)
    r.cells          # the grid: one row per cell, its dimensions as columns
    r.comparisons()  # the report's heatmap numbers: one row per (cell, compared pair), with
                     # n, means, % difference, test, p, interval, verdict (core.stats)
    r.analysis()     # core.experiment_stats.Analysis: the same comparisons with the runs behind them

The store is opened read-only for each frame and closed again, so a notebook never holds
the experiment's lock. JSON-valued columns (options, artifacts, details) are dicts here; the
export keeps them as the JSON text the store holds.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import LonglookError
from .experiment_stats import Analysis, analyse
from .stats import Test
from .store import DB_FILE, Store

# the store's own tables; any other table is one a kind declared (Kind.tables)
CORE_TABLES = ("experiments", "cells", "runs", "metrics", "series", "link_checks", "round_orders", "longlook_schema")
RUN_ORDER = "ORDER BY recorded_at, run_id"


def open_store(directory: str | Path) -> Store:
    """The store of `directory`, read-only; one clear error when there is none."""
    directory = Path(directory)
    if not (directory / DB_FILE).is_file():
        raise LonglookError(
            f"{directory}: no experiment store here (no {DB_FILE})",
            hint="run an experiment into it first: `longlook run SCENARIO --out DIR` "
            "(e.g. `bash scripts/quick.sh` writes results/quick)",
        )
    return Store.open(directory, read_only=True)


def table_names(store: Store) -> list[str]:
    """The tables of the store's schema that it has: the core's, then the kind's (the ones
    its Kind declares), in name order. A store is untrusted input (researchers share
    experiment directories): a table that no schema declares is never read, named in a
    path or pasted into SQL."""
    names = set(
        store.sql("SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE'")["table_name"]
    )
    kind = store.kind_or_none()
    declared = sorted(getattr(kind, "tables", None) or {})
    return [t for t in CORE_TABLES if t in names] + [t for t in declared if t in names and t not in CORE_TABLES]


def kind_table_names(store: Store) -> list[str]:
    return [t for t in table_names(store) if t not in CORE_TABLES]


def dims_frame(cells: pd.DataFrame, taken: set[str] = frozenset()) -> pd.DataFrame:
    """cell_id and one column per cell dimension (from the decoded `dims` column); a dimension
    whose name is already a column in `taken` becomes `cell_<name>`."""
    rows = [{"cell_id": c, **(d if isinstance(d, dict) else {})} for c, d in zip(cells["cell_id"], cells["dims"])]
    df = pd.DataFrame(rows, columns=["cell_id"] if not rows else None)
    return df.rename(columns={c: f"cell_{c}" for c in df.columns if c != "cell_id" and c in taken})


def with_dims(runs: pd.DataFrame, cells: pd.DataFrame) -> pd.DataFrame:
    """The runs with their cell's dimensions as columns, right after cell_id."""
    dims = dims_frame(cells, taken=set(runs.columns))
    merged = runs.merge(dims, on="cell_id", how="left")
    at = list(runs.columns).index("cell_id") + 1
    cols = list(runs.columns)
    order = cols[:at] + [c for c in dims.columns if c != "cell_id"] + cols[at:]
    return merged[order]


def metrics_wide(store: Store, run_ids: pd.Series) -> pd.DataFrame:
    """run_id and one column per metric, one row per run in `run_ids` (NaN where absent);
    the kind's metrics first, in the kind's order."""
    long = store.sql("SELECT run_id, name, value FROM metrics")
    try:
        kind = store.kind()
    except LonglookError:
        kind = None  # a kind this longlook does not know: the stored names are all there is
    names = list(
        dict.fromkeys([*(m.name for m in getattr(kind, "metrics", ()) if m.name in set(long["name"])), *long["name"]])
    )
    wide = (
        long.pivot_table(index="run_id", columns="name", values="value", aggfunc="first", dropna=False)
        if len(long)
        else pd.DataFrame(index=pd.Index([], name="run_id"))
    )
    wide = wide.reindex(index=pd.Index(run_ids, name="run_id"), columns=names).reset_index()
    wide.columns.name = None
    return wide


class Results:
    """One experiment directory's results as pandas frames (see the module's docstring)."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        with open_store(self.directory) as store:  # fails now, not on first use
            self.experiment: dict[str, Any] = store.experiment() or {}
            self.kind: str | None = store.kind_name()

    def __repr__(self) -> str:
        return f"<longlook results {self.directory} ({self.kind})>"

    def _read(self, fn):
        with open_store(self.directory) as store:
            return fn(store)

    @functools.cached_property
    def cells(self) -> pd.DataFrame:
        """One row per cell: position, link, and its dimensions as columns."""

        def read(store):
            cells = store.cells_frame()
            base = cells[["cell_id", "position", "link_name"]]
            return base.merge(dims_frame(cells, taken={"position", "link_name"}), on="cell_id", how="left")

        return self._read(read)

    @functools.cached_property
    def runs(self) -> pd.DataFrame:
        def read(store):
            return with_dims(store.table("runs", RUN_ORDER), store.cells_frame())

        return self._read(read)

    @functools.cached_property
    def metrics(self) -> pd.DataFrame:
        return self._read(
            lambda store: metrics_wide(store, store.sql(f"SELECT run_id FROM runs {RUN_ORDER}")["run_id"])
        )

    @functools.cached_property
    def series(self) -> pd.DataFrame:
        return self._read(lambda store: store.series())

    @functools.cached_property
    def tables(self) -> dict[str, pd.DataFrame]:
        return self._read(lambda store: {t: store.table(t) for t in kind_table_names(store)})

    def runs_with_metrics(self) -> pd.DataFrame:
        """`runs` and `metrics` side by side: one row per run."""
        return self.runs.merge(self.metrics, on="run_id", how="left")

    def analysis(self, *, test: Test | None = None, alpha: float | None = None, holm: bool | None = None) -> Analysis:
        """The report's statistics model (core.experiment_stats), with the scenario's [statistics]
        unless overridden."""
        return self._read(lambda store: analyse(store, test=test, alpha=alpha, holm=holm))

    def comparisons(
        self, *, test: Test | None = None, alpha: float | None = None, holm: bool | None = None
    ) -> pd.DataFrame:
        """The report's comparisons: one row per (cell, pair) on the kind's primary metric,
        the cell's dimensions as columns."""
        return self.analysis(test=test, alpha=alpha, holm=holm).frame()


def open_results(directory: str | Path) -> Results:
    """`longlook.open(DIR)`: an experiment directory's results as pandas frames."""
    return Results(directory)
