"""Report section: what a change of the path did to each protocol, cell by cell, where a link
of the experiment has a NAT (linkem's, crates/linkem/README.md "A NAT in front of the
bottleneck"). Per cell and arm, over every run attempted (a run that failed is the outcome
here: did the connection survive?): the runs whose flows the NAT rebound, how many of them
completed, when the rebinding came (ms from the run's start, from linkem's account), and the
longest silence the client met (our QUIC client's trace, `qlog.gaps`) with when it began, so
a stall that starts at the rebinding reads off the row. Cells without a NAT sit beside them:
their longest silence is the baseline (a handshake, a slow start). Where the runs kept a full
pcap and their key log (`[capture]`), each rebound QUIC run's capture is judged by the
interop case of its move (wire.cases: rebind-port, rebind-addr): did the server validate
the new path (PATH_CHALLENGE, the client's PATH_RESPONSE) and did data continue over it."""

from __future__ import annotations

import math
from html import escape

import numpy as np

from ...analyses.wire_runs import judge_run
from ...render.html import Section, numbers_table


def _fmt(v: float, spec: str = "{:.1f}") -> str:
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else spec.format(v)


def _median(values) -> float:
    x = np.array([float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))])
    return float(np.median(x)) if len(x) else math.nan


def _events(value) -> list:
    """A run's NAT rebindings (a list in its details; absent: nan in the frame)."""
    return list(value) if isinstance(value, (list, tuple, np.ndarray)) else []


def _max(values) -> float:
    x = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    return max(x) if x else math.nan


def _first_rebinding_ms(events) -> float | None:
    times = [e.get("t_ms") for e in _events(events) if isinstance(e, dict) and e.get("t_ms") is not None]
    return min(times) if times else None


def section(store, analysis) -> Section | None:
    sc = analysis.scenario
    runs = analysis.runs
    if sc is None or runs.empty:
        return None
    try:
        cells = {c.id: c for c in sc.cells()}
    except (AttributeError, ValueError):
        return None
    nat = {cid: getattr(getattr(c, "link", None), "nat", None) is not None for cid, c in cells.items()}
    if not any(nat.values()):
        return None
    col = lambda name: runs[name] if name in runs else [None] * len(runs)  # noqa: E731
    frame = runs.assign(
        _rebound=[bool(_events(e)) for e in col("nat_rebindings")],
        _first=[_first_rebinding_ms(e) for e in col("nat_rebindings")],
        _stall=list(col("receive_stall_ms")),
        _stall_from=list(col("receive_stall_from_ms")),
    )
    capture = getattr(sc, "capture", None)
    full = capture is not None and capture.pcap == "full" and capture.keylog
    experiment = getattr(store, "directory", None)
    order = {cid: i for i, cid in enumerate(analysis.cells["cell_id"])}
    rows = []
    for (cid, arm), g in sorted(frame.groupby(["cell_id", "arm"]), key=lambda t: (order.get(t[0][0], 0), t[0][1])):
        rebound = g[g["_rebound"]]
        ok = int((rebound["status"] == "ok").sum())
        validated = _validation(experiment, cells.get(cid), rebound) if full and experiment is not None else "–"
        rows.append(
            [
                escape(cid),
                "NAT" if nat.get(cid) else "none",
                escape(arm),
                str(len(g)),
                str(len(rebound)),
                f"{ok} of {len(rebound)}" if len(rebound) else "–",
                _fmt(_median(rebound["_first"]), "{:.0f}"),
                _fmt(_median(g["_stall"])),
                _fmt(_max(g["_stall"])),
                _fmt(_median(g["_stall_from"]), "{:.0f}"),
                validated,
            ]
        )
    head = [
        "cell",
        "NAT",
        "arm",
        "runs",
        "runs rebound",
        "of those completed",
        "rebinding at, median (ms)",
        "longest silence, median (ms)",
        "worst (ms)",
        "silence began, median (ms)",
        "new path validated (from the wire)",
    ]
    note = (
        "<p class='note'>Per cell and arm, over every run attempted: a run that failed after its path "
        "changed is the answer to whether the connection survived. Rebinding: when linkem's NAT moved "
        "the run's first flow to a new external port or address, from the run's start. Longest silence: "
        "the longest gap between packets our QUIC client received, read from its trace (TCP runs and "
        "other clients have none), and when it began; without a NAT it is the handshake's or a slow "
        "start's. New path validated: where the runs kept a full pcap and key log, the rebound "
        "QUIC runs whose capture shows the server's PATH_CHALLENGE to the new address, the client's "
        "PATH_RESPONSE and data continuing (the interop case of the move, read by tshark), with "
        "the first other run's evidence.</p>"
    )
    return Section(id="path-changes", title="Path changes", html=note + numbers_table(head, rows))


def _validation(experiment, cell, rebound) -> str:
    """ "k of m" rebound QUIC runs whose capture passed the case of the NAT's move, and the
    evidence of the first that did not; "–" when none kept a capture to judge."""
    nat = getattr(getattr(cell, "link", None), "nat", None)
    case = "rebind-addr" if getattr(nat, "rebind_to", "port") == "address" else "rebind-port"
    results = []
    for _, run in rebound.iterrows():
        if run.get("protocol_requested") != "h3":  # a TCP run's capture has no QUIC to judge
            continue
        r = judge_run(experiment, run.to_dict(), case)
        if r is not None:
            results.append(r)
    if not results:
        return "–"
    passed = sum(r["verdict"] == "passed" for r in results)
    other = next((r for r in results if r["verdict"] != "passed"), None)
    text = f"{passed} of {len(results)} ({case})"
    return text + (f"; {escape(other['verdict'])}: {escape(other['evidence'])}" if other else "")
