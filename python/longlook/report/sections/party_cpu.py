"""Report section: every party's CPU per run (client, server, linkem), per MB the router
forwarded, and who was saturated (core.audit). Langley §6.7 measured a QUIC server's CPU at
3.5x TLS/TCP's per byte (2x after optimisation); Zhang (WWW'24) found QUIC's receiver
CPU-bound at 1 Gbit/s. On this 2-vCPU machine the parties share cores unless pinned
(`[testbed] cpus`); the table says which party kept a core busy."""

from __future__ import annotations

import math
from html import escape

import pandas as pd

from ...render.html import Section, numbers_table

PARTIES = ("client", "server", "router")


def _num(v: float, fmt: str) -> str:
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else fmt.format(v)


def _median(g: pd.DataFrame, col: str) -> float:
    return g[col].median() if col in g and g[col].notna().any() else math.nan


def _saturated(g: pd.DataFrame) -> str:
    if "saturated" not in g:
        return ""
    counts: dict[str, int] = {}
    for parties in g["saturated"]:
        for p in parties if isinstance(parties, list) else []:
            counts[p] = counts.get(p, 0) + 1
    return ", ".join(f"{'linkem' if p == 'router' else p} {n}/{len(g)}" for p, n in sorted(counts.items()))


def section(store, analysis) -> Section | None:
    runs = analysis.runs
    if runs.empty or "server_cpu_s" not in runs or runs["server_cpu_s"].notna().sum() == 0:
        return None
    good = analysis.counted(analysis.metric.name)
    good = good[good["server_cpu_s"].notna()]
    if good.empty:
        return None
    order = {cid: i for i, cid in enumerate(analysis.cells["cell_id"])}
    rows = []
    per_mb: dict[tuple[str, str], float] = {}
    for (cid, arm), g in sorted(good.groupby(["cell_id", "arm"]), key=lambda t: (order.get(t[0][0], 0), t[0][1])):
        per_mb[(cid, arm)] = _median(g, "server_cpu_s_per_mb")
        rows.append(
            [
                escape(cid),
                escape(arm),
                str(len(g)),
                *(_num(_median(g, f"{p}_cpu_s"), "{:.3f}") for p in PARTIES),
                *(_num(_median(g, f"{p}_cpu_s_per_mb") * 1000, "{:.1f}") for p in PARTIES),
                *(_num(_median(g, f"{p}_cpu_share"), "{:.2f}") for p in PARTIES),
                escape(_saturated(g)),
            ]
        )
    head = [
        "cell",
        "arm",
        "n",
        "client CPU (s)",
        "server CPU (s)",
        "linkem CPU (s)",
        "client ms/MB",
        "server ms/MB",
        "linkem ms/MB",
        "client cores",
        "server cores",
        "linkem cores",
        "saturated (runs)",
    ]
    table = numbers_table(head, rows)
    pinned = good["cpus"].dropna().iloc[0] if "cpus" in good and good["cpus"].notna().any() else None
    shared = good["cpus_shared"].dropna().iloc[0] if "cpus_shared" in good and good["cpus_shared"].notna().any() else []
    pins = "; ".join(
        f"{'linkem' if p == 'router' else p} on CPU {', '.join(map(str, c))}" for p, c in (pinned or {}).items()
    )
    where = (
        f"Pinned: {escape(pins)}" + (f"; shared: {escape(', '.join(shared))}" if shared else "") + "."
        if pinned
        else "Not pinned: every party ran on any of the machine's CPUs, so they shared cores."
    )
    note = (
        "<p class='note'>Per cell and arm, medians over the runs that count: each party's CPU "
        "time (user + system, from its cgroup; the server's and linkem's while the client's "
        "processes ran, so a server's start on first use is not a run's), per MB the router "
        "forwarded in both directions (ms of CPU per MB), and the cores it kept busy on "
        "average (CPU time / the time the client's processes ran). A party is saturated in a "
        "run when it kept a core busy (linkem: its busiest thread ran ≥ 95% of the run, which "
        f"flags the run). {where}</p>"
    )
    return Section(id="party-cpu", title="CPU per party", html=note + table + _server_ratio(per_mb))


def _server_ratio(per_mb: dict[tuple[str, str], float]) -> str:
    """Server CPU per MB, h3 over h2, per cell (Langley §6.7's comparison), where both arms ran."""
    cells = sorted({c for c, _ in per_mb})
    lines = []
    for c in cells:
        h3, h2 = per_mb.get((c, "h3"), math.nan), per_mb.get((c, "h2"), math.nan)
        if h2 and not math.isnan(h2) and not math.isnan(h3):
            lines.append(f"<li>{escape(c)}: server CPU per MB, h3 / h2 = {h3 / h2:.2f}x</li>")
    return f"<ul>{''.join(lines)}</ul>" if lines else ""
