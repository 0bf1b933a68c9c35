"""Report section: the client's CPU, run by run summed up per cell and arm (core.audit,
testbed/cpu.py). With client_cpu budgets swept, each cell's figures sit beside the same cell
without a budget, so a protocol's slow-down on a slow device reads off one table (Kakhki §5:
QUIC's gains shrank on phones whose CPUs could not keep up)."""

from __future__ import annotations

import math
from html import escape

import pandas as pd

from ...render.html import Section, numbers_table


def _num(v: float, fmt: str) -> str:
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else fmt.format(v)


def _base_cell(cell_id: str) -> str:
    """The cell id without its budget (`|cpu=...` is always last)."""
    return cell_id.rsplit("|cpu=", 1)[0]


def section(store, analysis) -> Section | None:
    runs = analysis.runs
    if runs.empty or "client_cpu_s" not in runs or runs["client_cpu_s"].notna().sum() == 0:
        return None
    metric = analysis.metric
    good = analysis.counted(metric.name)
    good = good[good["client_cpu_s"].notna()]
    if good.empty:
        return None
    budget = good["client_cpu"] if "client_cpu" in good else pd.Series("unlimited", index=good.index)
    good = good.assign(client_cpu=budget.fillna("unlimited"), base=good["cell_id"].map(_base_cell))
    order = {cid: i for i, cid in enumerate(analysis.cells["cell_id"])}
    rows = []
    for (cid, arm), g in sorted(good.groupby(["cell_id", "arm"]), key=lambda t: (order.get(t[0][0], 0), t[0][1])):
        twin = good[(good["base"] == g["base"].iloc[0]) & (good["arm"] == arm) & (good["client_cpu"] == "unlimited")]
        m, ref = g[metric.name].median(), twin[metric.name].median() if len(twin) else math.nan
        ratio = m / ref if ref and not math.isnan(ref) and g["client_cpu"].iloc[0] != "unlimited" else math.nan
        rows.append(
            [
                escape(g["base"].iloc[0]),
                escape(str(g["client_cpu"].iloc[0])),
                escape(arm),
                str(len(g)),
                _num(m, "{:.0f}"),
                _num(ratio, "{:.2f}x"),
                _num(g["client_cpu_s"].median(), "{:.3f}"),
                _num(g["client_cpu_share"].median(), "{:.2f}"),
                _num(g["client_throttled_s"].median() if "client_throttled_s" in g else math.nan, "{:.2f}"),
            ]
        )
    head = [
        "cell",
        "client CPU",
        "arm",
        "n",
        f"median {escape(metric.name)} ({escape(metric.unit)})",
        "vs unlimited",
        "client CPU (s)",
        "cores busy",
        "throttled (s)",
    ]
    table = numbers_table(head, rows)
    note = (
        "<p class='note'>Per cell and arm, over the runs that count: the median of the kind's "
        "metric, its ratio to the same cell and arm with no budget, and the client's CPU time "
        "(user + system of every client process, from its cgroup), the cores it kept busy on "
        "average (CPU time / the time its processes ran, not the run's window, which also "
        "holds a server's start and the translation of a stack's logs) and how long its "
        "budget throttled it. A budget is a CFS quota (a share of one core) on a cpuset of its cores "
        "(testbed/cpu.py). TCP's receive path runs in the kernel's softirq, mostly not "
        "charged to the client, so a budget slows QUIC's user-space stack more.</p>"
    )
    return Section(id="client-cpu", title="Client CPU", html=note + table)
