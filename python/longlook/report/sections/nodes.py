"""Report section: results by node (`--executor ray`, or a resume on another machine). Shown
when the runs were measured on more than one machine (details["node"]).

Per node: its runs, cells, counted share and flagged share (path audit), and how its primary
metric compares with the other nodes' on the same (cell, arm): the mean of log(metric) minus
the other nodes' mean for that (cell, arm), as a % (one-sample t-test against 0). Cells run
wholly on one node (as Ray runs them) say nothing about the node, so that comparison uses
only cells that ran on several. A node is flagged when that difference, or its share of
audit-flagged runs (Fisher's exact test against the other nodes), is significant at the
scenario's alpha.
"""

from __future__ import annotations

import html
import math
from typing import Any

import numpy as np
import pandas as pd


def _e(x: Any) -> str:
    return html.escape(str(x))


def node_table(
    runs: pd.DataFrame, metric: str | None, *, alpha: float = 0.01, exclude_flagged: bool = True
) -> pd.DataFrame:
    """One row per node (see the module's docstring); empty when runs carry no node."""
    from scipy import stats

    from ...core.status import counted_mask

    if runs.empty or "node" not in runs:
        return pd.DataFrame()
    runs = runs.assign(
        node=runs["node"].fillna("(unrecorded)"),
        _flagged=runs["audit_flagged"].fillna(False).astype(bool),
        _counted=counted_mask(runs, metric, exclude_flagged=exclude_flagged),
    )
    good = runs[runs["_counted"]]
    good = good[good[metric] > 0] if metric and metric in good else good.iloc[0:0]
    logs = good.assign(_log=np.log(good[metric].astype(float))) if metric and len(good) else good
    rows = []
    for node, mine in runs.groupby("node"):
        others = runs[runs["node"] != node]
        table = [
            [int(mine["_flagged"].sum()), int((~mine["_flagged"]).sum())],
            [int(others["_flagged"].sum()), int((~others["_flagged"]).sum())],
        ]
        p_flag = float(stats.fisher_exact(table)[1]) if len(others) else math.nan
        diff, p_diff, n_shared = math.nan, math.nan, 0
        if metric and len(logs):
            residuals = []
            other_means = logs[logs["node"] != node].groupby(["cell_id", "arm"])["_log"].mean()
            for key, group in logs[logs["node"] == node].groupby(["cell_id", "arm"]):
                if key in other_means.index:
                    residuals += list(group["_log"] - other_means[key])
            n_shared = len(residuals)
            if n_shared >= 2:
                diff = 100 * (math.exp(float(np.mean(residuals))) - 1)
                p_diff = float(stats.ttest_1samp(residuals, 0.0).pvalue) if np.std(residuals) > 0 else math.nan
        rows.append(
            {
                "node": node,
                "runs": len(mine),
                "cells": mine["cell_id"].nunique(),
                "counted_share": float(mine["_counted"].mean()),
                "flagged_share": float(mine["_flagged"].mean()),
                "p_flagged": p_flag,
                "shared_runs": n_shared,
                "metric_diff_pct": diff,
                "p_metric": p_diff,
                "differs": bool((p_flag < alpha) or (p_diff < alpha)),
            }
        )
    return pd.DataFrame(rows)


def _num(x: float, fmt: str) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)


def section(store, analysis):
    from ...render.html import Section

    metric = analysis.metric.name if analysis.metric else None
    table = node_table(analysis.runs, metric, alpha=analysis.statistics.alpha, exclude_flagged=analysis.exclude_flagged)
    if len(table) < 2:
        return None
    flag = ' class="verdict-inconclusive"'
    rows = "".join(
        f"<tr{flag if r.differs else ''}><td>{_e(r.node)}</td>"
        f"<td>{r.runs}</td><td>{r.cells}</td><td>{r.counted_share:.0%}</td>"
        f"<td>{r.flagged_share:.0%} (p {_num(r.p_flagged, '.3g')})</td>"
        f"<td>{_num(r.metric_diff_pct, '+.1f')}% over {r.shared_runs} runs (p {_num(r.p_metric, '.3g')})</td>"
        f"<td>{'<strong>differs</strong>' if r.differs else 'consistent'}</td></tr>"
        for r in table.itertuples()
    )
    shared = int(table["shared_runs"].sum())
    note = (
        ""
        if shared
        else "<p>No cell ran on more than one node, so differences in "
        f"{_e(metric)} cannot be told apart from differences between cells; only the path "
        "audit is compared.</p>"
    )
    html_text = (
        f"<p>Each node's runs against the other nodes' (alpha {analysis.statistics.alpha:g}). "
        f"The {_e(metric)} column is the node's mean difference from the other nodes on the same "
        "(cell, arm), as a ratio of geometric means.</p>"
        + note
        + "<table><tr><th>node</th><th>runs</th><th>cells</th><th>counted</th><th>flagged by audit</th>"
        f"<th>{_e(metric)} vs other nodes</th><th></th></tr>{rows}</table>"
    )
    return Section("nodes", "Results by node", html_text)
