"""A cell's values in round order, as the serial-correlation test (core.serial) reads them:
per compared pair, the per-round log ratio of the two arms (what the paired test sees); per
arm, its own log values (what Welch's test sees). Only runs that count (core.status) enter,
the last attempt of a round when it was retried; a cell's series keep the rounds all of
them have, so they can be shuffled together."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .status import counted_runs


def _log(x: pd.DataFrame) -> pd.DataFrame:
    """Log values when all are positive (load times, rates), else the values (shares)."""
    return np.log(x) if x.size and bool((x > 0).all().all()) else x


def round_series(
    runs: pd.DataFrame, pairs: list[tuple[str, str]], metric: str, *, exclude_flagged: bool = True
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """cell -> its compared pairs' log(a / b), one row per pair, one column per round in
    round order; and cell -> its arms' log values, one row per arm."""
    good = counted_runs(runs, metric, exclude_flagged=exclude_flagged)
    paired: dict[str, np.ndarray] = {}
    arms: dict[str, np.ndarray] = {}
    if good.empty or metric not in good:
        return paired, arms
    good = good[good[metric].notna()]
    if "attempt" in good:
        good = good.sort_values("attempt")
    last = good.drop_duplicates(["cell_id", "arm", "round"], keep="last")
    for cell, g in last.groupby("cell_id", sort=False):
        wide = g.pivot(index="round", columns="arm", values=metric).astype(float).sort_index()
        wide = wide[list(dict.fromkeys(g["arm"]))]  # the arms in the order they ran, not sorted
        own = _log(wide.dropna())
        if len(own):
            arms[str(cell)] = own.to_numpy().T
        rows = [(a, b) for a, b in pairs if a in wide and b in wide]
        both = _log(wide[list(dict.fromkeys(x for ab in rows for x in ab))].dropna()) if rows else wide.iloc[:0]
        if len(both):
            paired[str(cell)] = np.vstack([both[a].to_numpy() - both[b].to_numpy() for a, b in rows])
    return paired, arms
