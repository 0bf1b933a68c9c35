"""Kakhki Table 4: per cell and flow, mean (sd) throughput over the ok runs, with the flow's
share against its expected share, and Jain's index per cell."""

from __future__ import annotations

import pandas as pd

from ...core.status import counted_mask

CELL_COLUMNS = [
    "cell_id",
    "position",
    "matchup",
    "start",
    "quic_cc",
    "n_conn",
    "tcp_cc",
    "buffer_bytes",
    "rate_mbit",
    "rtt_ms",
    "duration_s",
    "link",
]


def table4(cells: pd.DataFrame, runs: pd.DataFrame, flows: pd.DataFrame) -> pd.DataFrame:
    """One row per (cell, flow): n, mean/sd of router throughput (Mbit/s, shared window), of
    the share, the expected share, and share / expected, over the runs that count."""
    ok = runs.loc[counted_mask(runs), "run_id"]
    f = flows[flows["run_id"].isin(ok)]
    if f.empty:
        return pd.DataFrame(
            columns=CELL_COLUMNS
            + ["flow", "n", "mbit_mean", "mbit_sd", "share_mean", "share_sd", "expected_share", "share_ratio"]
        )
    g = f.groupby(["cell_id", "flow"], sort=False)
    t = g.agg(
        n=("run_id", "nunique"),
        flow_position=("position", "first"),
        mbit_mean=("router_mbit", "mean"),
        mbit_sd=("router_mbit", "std"),
        share_mean=("share", "mean"),
        share_sd=("share", "std"),
        expected_share=("expected_share", "first"),
    ).reset_index()
    t["share_ratio"] = t["share_mean"] / t["expected_share"]
    t = t.merge(cells[CELL_COLUMNS], on="cell_id")
    return t.sort_values(["position", "flow_position"]).reset_index(drop=True)


def cell_summary(cells: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """One row per cell: runs counted / recorded, Jain's index mean (sd), weighted Jain mean,
    total throughput mean."""
    counted = counted_mask(runs)
    g = runs.assign(ok=counted).groupby("cell_id")
    ok_runs = runs[counted].groupby("cell_id")
    s = pd.DataFrame({"runs": g.size(), "ok": g["ok"].sum()})
    s = s.join(
        ok_runs.agg(
            jain_mean=("jain", "mean"),
            jain_sd=("jain", "std"),
            jain_weighted_mean=("jain_weighted", "mean"),
            total_mbit_mean=("total_mbit", "mean"),
        )
    )
    s = cells[CELL_COLUMNS].merge(s.reset_index(), on="cell_id", how="left")
    s[["runs", "ok"]] = s[["runs", "ok"]].fillna(0).astype(int)
    return s.sort_values("position").reset_index(drop=True)


def example_run(runs: pd.DataFrame, cell_id: str) -> str | None:
    """The run shown in the timeline and cwnd figures: the cell's ok run whose Jain's index
    is the median (a typical run, not the best or worst)."""
    ok = runs[(runs["cell_id"] == cell_id) & counted_mask(runs)].sort_values("jain")
    if ok.empty:
        return None
    return str(ok.iloc[(len(ok) - 1) // 2]["run_id"])
