"""Report section: the bottleneck's queue, cell by cell, where any of the experiment's links
manages its queue (an AQM in linkem, crates/linkem/README.md). Per cell and arm, over the
runs that count: the mean time a packet waited in the queue toward the client (each run's
mean sojourn, from linkem's counters over the run: core.audit.queue_figures), and per run the
packets the queue dropped full, dropped early (the AQM) and marked CE, in both directions.
Drop-tail cells of the same experiment sit beside the AQM ones, so the queue each protocol
met reads off one table."""

from __future__ import annotations

import math
from html import escape

import numpy as np

from ...render.html import Section, numbers_table


def _aqm_of(cell) -> str:
    names = {which: cell.link.resolved(which).aqm for which in ("down", "up")}
    shown = {w: a.discipline + ("+ecn" if a.ecn else "") for w, a in names.items() if a is not None}
    if not shown:
        return "drop-tail"
    if len(set(shown.values())) == 1 and len(shown) == 2:
        return next(iter(shown.values()))
    return ", ".join(f"{w} {d}" for w, d in shown.items())


def _per_run(queues, which: str, key: str) -> np.ndarray:
    return np.array([float(((q or {}).get(which) or {}).get(key, math.nan)) for q in queues])


def _stat(f, x: np.ndarray) -> float:
    """f over the finite values; nan when there are none (a direction that queued nothing)."""
    x = x[np.isfinite(x)]
    return float(f(x)) if len(x) else math.nan


def _fmt(v: float, spec: str) -> str:
    return "–" if math.isnan(v) else spec.format(v)


def section(store, analysis) -> Section | None:
    sc = analysis.scenario
    runs = analysis.runs
    if sc is None or runs.empty or "queue" not in runs:
        return None
    try:
        cells = {c.id: c for c in sc.cells()}
    except (AttributeError, ValueError):
        return None
    aqm = {cid: _aqm_of(c) for cid, c in cells.items() if getattr(c, "link", None) is not None}
    if not any(v != "drop-tail" for v in aqm.values()):
        return None
    good = analysis.counted()
    good = good[good["queue"].map(lambda q: isinstance(q, dict) and bool(q))]
    if good.empty:
        return None
    order = {cid: i for i, cid in enumerate(analysis.cells["cell_id"])}
    rows = []
    for (cid, arm), g in sorted(good.groupby(["cell_id", "arm"]), key=lambda t: (order.get(t[0][0], 0), t[0][1])):
        q = list(g["queue"])
        sojourn = _per_run(q, "down", "sojourn_ms_mean")
        cols = [escape(cid), escape(aqm.get(cid, "?")), escape(arm), str(len(g))]
        cols.append(_fmt(_stat(np.median, sojourn), "{:.1f}"))
        cols.append(_fmt(_stat(np.max, sojourn), "{:.1f}"))
        for key in ("dropped_buffer", "dropped_aqm", "ce_marked"):
            down, up = _per_run(q, "down", key), _per_run(q, "up", key)
            cols.append(f"{_fmt(_stat(np.mean, down), '{:.1f}')} / {_fmt(_stat(np.mean, up), '{:.1f}')}")
        rows.append(cols)
    head = [
        "cell",
        "queue",
        "arm",
        "runs",
        "queue delay down, median of runs (ms)",
        "worst run (ms)",
        "dropped full per run (down / up)",
        "dropped early per run",
        "CE-marked per run",
    ]
    table = numbers_table(head, rows)
    note = (
        "<p class='note'>Per cell and arm, over the runs that count. Queue delay: each run's mean "
        "sojourn of the packets toward the client (arrival at the bottleneck to the start of their "
        "transmission), from linkem's counters over the run. Dropped full: the buffer's tail drops; "
        "dropped early: the AQM's drops before the buffer was full; CE-marked: packets the AQM "
        "marked instead of dropping (ECN-capable ones, where the link has ecn = true).</p>"
    )
    return Section(id="queue", title="Bottleneck queue", html=note + table)
