"""The QUIC matrix's performance grid: per client x server pair and link rate, the goodput of
a bulk download, each party's CPU per MB, and the regime the runs were in, read from what each
run recorded (its load time and bytes, the CPU of the client, the servers and linkem per run:
core.audit's cgroups), so a slow cell says why:

- **path**: the download reached PATH_SHARE of the link's rate;
- **CPU: server**, **CPU: client**, **CPU: emulator**: below that, with that party's processes
  keeping CPU_SHARE of a core or more busy over the run (the busiest party is named);
- **other**: below the path with no party's CPU saturated: a window, flow control or the
  application held it (the logs of a drill-down say which).

Over the runs that count (core.status); a pair with none says so."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...core.status import counted_runs
from . import pair_of

PATH_SHARE = 0.85
CPU_SHARE = 0.85


@dataclass(frozen=True)
class Perf:
    runs: int
    goodput_mbit: float  # median
    client_cpu_s_per_mb: float
    server_cpu_s_per_mb: float
    regime: str


def regime(goodput_mbit: float, rate_mbit: float, shares: dict[str, float]) -> str:
    """The regime of a run (or of a cell's medians): `shares` are each party's CPU cores busy
    over the run (client, server, emulator)."""
    if goodput_mbit >= PATH_SHARE * rate_mbit:
        return "path"
    party, share = max(((k, v) for k, v in shares.items() if not math.isnan(v)), key=lambda kv: kv[1], default=("", 0))
    return f"CPU: {party}" if share >= CPU_SHARE else "other"


def _median(frame: pd.DataFrame, column: str) -> float:
    if column not in frame:
        return math.nan
    x = pd.to_numeric(frame[column], errors="coerce").dropna()
    return float(np.median(x)) if len(x) else math.nan


def perf_grid(runs: pd.DataFrame, rate_mbit: float, object_bytes: int) -> dict[tuple[str, str], Perf]:
    """(client, server) -> Perf over the counted runs of one rate's experiment; a pair whose
    every completed run its path audit flagged says so with the first reason (a stack that
    keeps this 2-vCPU machine busy stalls linkem too: that is its regime, not a number)."""
    flagged = runs["audit_flagged"].fillna(False).astype(bool)
    counted = counted_runs(runs, "plt_ms")
    out: dict[tuple[str, str], Perf] = {}
    for run in runs[(runs["status"] == "ok") & flagged].to_dict("records"):
        reasons = run.get("audit_reasons")
        first = (reasons[0] if isinstance(reasons, (list, tuple)) and len(reasons) else str(reasons or "")).split(";")[
            0
        ]
        out.setdefault(pair_of(run), Perf(0, math.nan, math.nan, math.nan, f"flagged: {first.strip()}"))
    if counted.empty:
        return out
    counted = counted.assign(
        _pair=[pair_of(r) for r in counted.to_dict("records")],
        _goodput=object_bytes * 8 / (pd.to_numeric(counted["plt_ms"], errors="coerce") / 1e3) / 1e6,
    )
    for pair, g in counted.groupby("_pair"):
        goodput = float(np.median(g["_goodput"]))
        shares = {
            "client": _median(g, "client_cpu_share"),
            "server": _median(g, "server_cpu_share"),
            "emulator": _median(g, "router_cpu_share"),
        }
        out[pair] = Perf(
            runs=len(g),
            goodput_mbit=goodput,
            client_cpu_s_per_mb=_median(g, "client_cpu_s_per_mb"),
            server_cpu_s_per_mb=_median(g, "server_cpu_s_per_mb"),
            regime=regime(goodput, rate_mbit, shares),
        )
    return out


def perf_markdown(grids: dict[float, dict[tuple[str, str], Perf]], clients: list[str], servers: list[str]) -> str:
    """Per rate, rows clients and columns servers: the median goodput in Mbit/s and its regime."""
    out = []
    for rate, grid in sorted(grids.items()):
        out += [f"### {rate:g} Mbit/s: goodput (Mbit/s) and regime", ""]
        out += ["| client \\ server | " + " | ".join(servers) + " |", "|---|" + "---|" * len(servers)]
        for c in clients:
            cells = [
                "·"
                if (p := grid.get((c, s))) is None
                else p.regime
                if p.runs == 0
                else f"{p.goodput_mbit:.0f} {p.regime}"
                for s in servers
            ]
            out.append(f"| {c} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)
