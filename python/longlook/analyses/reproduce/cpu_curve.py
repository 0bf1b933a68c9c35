"""The CPU budget curve the CPU claims are read beside: per client CPU budget (a CFS quota
of one core), the load time and CPU per MB of our native h3 and h2 clients, and h3's load
time against h2's with its interval. A CPU ratio measured on an unconstrained client (the
CPU claims) says what an idle core lets the stack spend; this says what a client that has
little CPU meets. A reading with the two-sample comparison's intervals, not a verdict."""

from __future__ import annotations

import math

from ...core.status import counted_runs
from ...core.store import DB_FILE
from .measured import Measured
from .rules.common import _compare

SCENARIO = "cpu-budget-curve"
ARMS = ("h3", "h2")


def _median(m: Measured, cell_id: str, arm: str, metric: str) -> tuple[float, int]:
    """The median of `metric` over the arm's counted runs in the cell (core.status), and n."""
    if m.runs.empty or metric not in m.runs:
        return math.nan, 0
    counted = counted_runs(m.runs, metric, exclude_flagged=m.exclude_flagged)
    values = counted.loc[(counted["cell_id"] == cell_id) & (counted["arm"] == arm), metric]
    return (float(values.median()) if len(values) else math.nan), len(values)


def _fmt(v: float, scale: float = 1.0, spec: str = "{:.0f}") -> str:
    return "-" if math.isnan(v) else spec.format(v * scale)


def curve_markdown(m: Measured) -> list[str]:
    """The curve as a markdown table, budgets in the scenario's order."""
    lines = [
        "| client CPU budget | h3 load time (ms) | h2 load time (ms) | h3 vs h2 load time | h3 CPU (ms/MB) | "
        "h2 CPU (ms/MB) | h3 / h2 cores busy | n (h3/h2) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for cell_id in m.cells["cell_id"]:
        budget = m.dims(cell_id).get("client_cpu", "unlimited")
        plt = {a: _median(m, cell_id, a, "plt_ms") for a in ARMS}
        cpu = {a: _median(m, cell_id, a, "client_cpu_s_per_mb")[0] for a in ARMS}
        share = {a: _median(m, cell_id, a, "client_cpu_share")[0] for a in ARMS}
        c = _compare(m, "h3", "h2", [cell_id], "plt_ms", True, False, holm=False)[0]
        if math.isnan(c.percent_difference):
            versus = c.verdict_text or "-"
        else:
            # the project's % difference: (h2 - h3) / h2, positive when h3 is faster
            interval = "" if math.isnan(c.ci_low) else f" [{c.ci_low:+.1f}, {c.ci_high:+.1f}]"
            versus = f"{c.percent_difference:+.1f}%{interval} ({c.verdict_text})"
        cells = [
            budget,
            _fmt(plt["h3"][0]),
            _fmt(plt["h2"][0]),
            versus,
            _fmt(cpu["h3"], 1000, "{:.1f}"),
            _fmt(cpu["h2"], 1000, "{:.1f}"),
            f"{_fmt(share['h3'], 1, '{:.3f}')} / {_fmt(share['h2'], 1, '{:.3f}')}",
            f"{plt['h3'][1]}/{plt['h2'][1]}",
        ]
        lines.append("| " + " | ".join(map(str, cells)) + " |")
    return lines


def curve_section(scenario_runs) -> list[str]:
    """The page's section, or [] when the curve's scenario holds no data."""
    run = next((r for r in scenario_runs if r.name == SCENARIO and not r.foreign), None)
    if run is None or not (run.directory / DB_FILE).exists():
        return []
    m = Measured.from_store(run.directory)
    if m.runs.empty:
        return []
    return [
        "## What a CPU-poor client meets",
        "",
        "The CPU claims above divide CPU seconds by megabytes on a client or server with a core to spare; "
        "that figure is elastic (with CPU to spare a stack wakes for every few packets, under a budget it "
        "batches), so it holds only at the load the row states. Below, the same native clients fetch 3 MB at "
        "50 Mbit/s, 36 ms RTT, under a CFS quota of one core (`cpu-budget-curve`): load time and CPU per MB "
        "per budget, medians of the counted runs; h3 vs h2 is the % difference of their load times "
        "(positive: h3 faster) with the comparison's interval and verdict.",
        "",
        *curve_markdown(m),
        "",
    ]
