"""Put a session's irregularly sampled series on one regular time grid, so F, B and S can
be compared lag by lag."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...errors import LonglookError


def on_grid(
    rows: pd.DataFrame,
    names: tuple[str, ...] = ("F", "B", "S"),
    *,
    step_s: float = 1.0,
    how: dict[str, str] | None = None,
) -> pd.DataFrame:
    """Long rows (`name`, `t_s`, `value`) of one session -> one column per name, indexed by
    the bin start (t_s // step_s * step_s), bins from the first to the last sample of any
    name. Each bin takes the mean of its samples (`how` may say "sum", e.g. for bytes);
    bins without a sample carry the previous value forward (a level series holds between
    samples), and leading empty bins are 0. A name with no rows at all is an error."""
    missing = [n for n in names if not (rows["name"] == n).any()]
    if missing:
        raise LonglookError(f"series {', '.join(missing)}: no samples in this session")
    how = how or {}
    sel = rows[rows["name"].isin(names)]
    bins = np.floor(sel["t_s"].to_numpy() / step_s).astype(int)
    index = np.arange(bins.min(), bins.max() + 1)
    out = {}
    for n in names:
        mask = (sel["name"] == n).to_numpy()
        grouped = pd.Series(sel["value"].to_numpy()[mask]).groupby(bins[mask])
        agg = grouped.sum() if how.get(n) == "sum" else grouped.mean()
        col = agg.reindex(index)
        out[n] = col.fillna(0.0) if how.get(n) == "sum" else col.ffill().fillna(0.0)
    frame = pd.DataFrame(out)
    frame.index = index * step_s
    frame.index.name = "t_s"
    return frame
