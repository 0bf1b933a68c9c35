"""Latency under load in the fairness report: per cell, what a sparse flow beside the bulk
flows met (the scenario's `latency_probe_ms`: its RTT per run, median and 95th percentile)
and the bottleneck queue the flows built (linkem's counters toward the client: mean sojourn,
drops by the AQM and by the buffer, CE marks), each the median over the runs that count, so
a table of shares under drop-tail and under an AQM also says what the AQM bought."""

from __future__ import annotations

import math
from html import escape
from typing import Callable

import numpy as np
import pandas as pd

from ...core.status import counted_mask

COLUMNS = ["probe_rtt_ms", "probe_rtt_p95_ms", "sojourn_ms", "aqm_drops", "buffer_drops", "ce_marks"]


def _down(queue, key: str) -> float:
    """One counter of the data direction (toward the client) from a run's `queue` record."""
    if not isinstance(queue, dict) or not isinstance(queue.get("down"), dict):
        return math.nan
    v = queue["down"].get(key)
    return float(v) if isinstance(v, (int, float)) else math.nan


def latency_under_load(runs: pd.DataFrame) -> pd.DataFrame:
    """cell_id, n and the median over its counted runs of each of COLUMNS (nan where no run
    recorded it: a scenario without the probe, an older run without queue counters)."""
    counted = runs[counted_mask(runs)] if not runs.empty else runs
    if counted.empty:
        return pd.DataFrame(columns=["cell_id", "n", *COLUMNS])
    queue = counted["queue"] if "queue" in counted else pd.Series([None] * len(counted), index=counted.index)
    per_run = pd.DataFrame(
        {
            "cell_id": counted["cell_id"],
            "probe_rtt_ms": pd.to_numeric(counted.get("probe_rtt_ms"), errors="coerce"),
            "probe_rtt_p95_ms": pd.to_numeric(counted.get("probe_rtt_p95_ms"), errors="coerce"),
            "sojourn_ms": [_down(q, "sojourn_ms_mean") for q in queue],
            "aqm_drops": [_down(q, "dropped_aqm") for q in queue],
            "buffer_drops": [_down(q, "dropped_buffer") for q in queue],
            "ce_marks": [_down(q, "ce_marked") for q in queue],
        }
    )
    g = per_run.groupby("cell_id", sort=False)
    out = g[COLUMNS].median().reset_index()
    return out.assign(n=g.size().to_numpy())


def _cell(x: float, fmt: str) -> str:
    return "–" if x is None or not np.isfinite(x) else fmt.format(x)


def latency_html(lat: pd.DataFrame, summary: pd.DataFrame, title: Callable[[pd.Series], str]) -> str:
    """The table, one row per cell in the order of `summary` (fairness.aggregate.cell_summary);
    empty when no run recorded a probe or a queue."""
    if lat.empty or lat[COLUMNS].isna().all().all():
        return ""
    by_cell = lat.set_index("cell_id")
    rows = []
    for _, c in summary.iterrows():
        if c["cell_id"] not in by_cell.index:
            continue
        r = by_cell.loc[c["cell_id"]]
        rows.append(
            f"<tr><td>{escape(title(c))}</td><td class='num'>{int(r['n'])}</td>"
            f"<td class='num'>{_cell(r['probe_rtt_ms'], '{:.1f}')}</td>"
            f"<td class='num'>{_cell(r['probe_rtt_p95_ms'], '{:.1f}')}</td>"
            f"<td class='num'>{_cell(r['sojourn_ms'], '{:.1f}')}</td>"
            f"<td class='num'>{_cell(r['aqm_drops'], '{:.0f}')}</td>"
            f"<td class='num'>{_cell(r['buffer_drops'], '{:.0f}')}</td>"
            f"<td class='num'>{_cell(r['ce_marks'], '{:.0f}')}</td></tr>"
        )
    return (
        "<p>Latency under load: a sparse UDP probe's round trip beside the flows (a call or a game "
        "next to these downloads; the scenario's <code>latency_probe_ms</code>), and the bottleneck "
        "queue toward the client from linkem's counters (mean sojourn, drops by the AQM and by the "
        "buffer, CE marks per run). Medians over the runs that count.</p>"
        "<table class='data'><thead><tr><th>scenario</th><th>runs</th><th>probe RTT, ms</th>"
        "<th>probe RTT p95, ms</th><th>queue sojourn, ms</th><th>AQM drops</th><th>buffer drops</th>"
        "<th>CE marks</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
    )
