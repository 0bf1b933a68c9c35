"""Report section: what a change of the path did to each protocol, cell by cell, where a link
of the experiment has a NAT (linkem's, crates/linkem/README.md "A NAT in front of the
bottleneck") or a handover (a client that moves to a second path, docs/nat.md). Per cell and
arm, over every run attempted (a run that failed is the outcome here: did the connection
survive?): the runs whose path changed (the NAT rebound their flows, or their first path went
down), how many of them completed, when the change came (ms from the run's start, from
linkem's account), when the client moved (its own report), and the
longest silence the client met (our QUIC client's trace, `qlog.gaps`) with when it began, so
a stall that starts at the rebinding reads off the row. Cells without a NAT sit beside them:
their longest silence is the baseline (a handshake, a slow start). Where the runs kept a full
pcap and their key log (`[capture]`), each rebound QUIC run's capture is judged by the
interop case of its move (wire.cases: rebind-port, rebind-addr, connection-migration for a
handover): did the server validate the new path (PATH_CHALLENGE, the client's PATH_RESPONSE)
and did data continue over it."""

from __future__ import annotations

import math
from html import escape

import numpy as np

from ...analyses.server_windows import window_of_run
from ...analyses.wire_runs import judge_run
from ...analyses.wire_runs.moves import move_case
from ...core.effects import median_interval
from ...render.html import Section, numbers_table


def _fmt(v: float, spec: str = "{:.1f}") -> str:
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else spec.format(v)


def median_of(values) -> float:
    x = np.array([float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))])
    return float(np.median(x)) if len(x) else math.nan


def _events(value) -> list:
    """A run's NAT rebindings (a list in its details; absent: nan in the frame)."""
    return list(value) if isinstance(value, (list, tuple, np.ndarray)) else []


def _with_interval(values) -> str:
    """ "median [low, high]": the median's distribution-free 95% interval (core.effects), or
    the median alone where there are too few runs for one."""
    median = median_of(values)
    low, high = median_interval([float(v) for v in values if v is not None])
    if math.isnan(median) or math.isnan(low):
        return _fmt(median)
    return f"{median:.1f} [{low:.1f}, {high:.1f}]"


def _max(values) -> float:
    x = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    return max(x) if x else math.nan


def _field(value, key: str):
    """`key` of a run's details dict (handover, migration; absent: nan in the frame)."""
    return value.get(key) if isinstance(value, dict) else None


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
    change = {cid: change_of(getattr(c, "link", None)) for cid, c in cells.items()}
    if not any(v != "none" for v in change.values()):
        return None
    col = lambda name: runs[name] if name in runs else [None] * len(runs)  # noqa: E731
    went_down = [_field(h, "first_path_down_t_ms") for h in col("handover")]
    frame = runs.assign(
        _rebound=[bool(_events(e)) or d is not None for e, d in zip(col("nat_rebindings"), went_down)],
        _first=[d if d is not None else _first_rebinding_ms(e) for e, d in zip(col("nat_rebindings"), went_down)],
        _moved=[_field(m, "at_ms") for m in col("migration")],
        _controllers=list(col("server_controllers")),
        _stall=list(col("receive_stall_ms")),
        _stall_from=list(col("receive_stall_from_ms")),
        _gap=list(col("delivery_gap_ms")),
        _gap_from=list(col("delivery_gap_from_ms")),
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
        moved = rebound["_moved"].notna().sum() if len(rebound) else 0
        done = g[g["status"] == "ok"]  # a connection that died has no gap it came back from
        rows.append(
            [
                escape(cid),
                change.get(cid, "none"),
                escape(arm),
                str(len(g)),
                str(len(rebound)),
                f"{ok} of {len(rebound)}" if len(rebound) else "–",
                _fmt(median_of(rebound["_first"]), "{:.0f}"),
                f"{moved} of {len(rebound)}, median {_fmt(median_of(rebound['_moved']), '{:.0f}')}" if moved else "–",
                _with_interval(done["_gap"]),
                _fmt(_max(done["_gap"])),
                _fmt(median_of(done["_gap_from"]), "{:.0f}"),
                _with_interval(g["_stall"]),
                _fmt(_max(g["_stall"])),
                _fmt(median_of(g["_stall_from"]), "{:.0f}"),
                _controller_text(rebound["_controllers"], _windows(experiment, rebound)) if len(rebound) else "–",
                validated,
            ]
        )
    head = [
        "cell",
        "path change",
        "arm",
        "runs",
        "runs whose path changed",
        "of those completed",
        "change at, median (ms)",
        "client moved (ms)",
        "longest delivery gap at the router, median [95% interval] (ms)",
        "worst (ms)",
        "gap began, median (ms)",
        "longest silence, median [95% interval] (ms)",
        "worst (ms)",
        "silence began, median (ms)",
        "server's congestion controller",
        "new path validated (from the wire)",
    ]
    note = (
        "<p class='note'>Per cell and arm, over every run attempted: a run that failed after its path "
        "changed is the answer to whether the connection survived. Change: when linkem's NAT moved "
        "the run's first flow to a new external port or address, or (a handover) when the client's first "
        "path went down, from the run's start. Client moved: the runs whose client moved to its second "
        "address, and when (its own report): QUIC moves its connection; TCP, where the handover has "
        "tcp_reconnect, drops its connection and connects again from there, resuming with range "
        "requests. Longest delivery gap: the longest time between linkem's releases of the server's packets "
        "toward the client during the fetch (its flow log, 5 ms intervals: within 5 ms of the true gap), for "
        "every client and protocol, over the runs that completed, and when it began; a median with the "
        "median's distribution-free 95% "
        "interval, from 6 runs. Longest silence: "
        "the longest gap between packets our QUIC client received, read from its trace (TCP runs and "
        "other clients have none), and when it began; without a NAT it is the handshake's or a slow "
        "start's. Server's congestion controller: from our server's trace, in how many of the runs "
        "whose path changed it was made anew (RFC 9000 §9.4: reset on a new address, may be kept when only "
        "the port changed), with the median window before and after the change; other servers' from their "
        "qlog windows around their first PATH_CHALLENGE (the window 20 ms before it, and within 500 ms after: "
        "a new controller for the new path where the log names each window's path, a cut back to the "
        "initial window (a reset), a cut to another window (kept; a loss response: packets sent to the dead "
        "binding are lost), or none), over the runs that completed. "
        "New path validated: where the runs kept a full pcap and key log, the rebound "
        "QUIC runs whose capture shows the server's PATH_CHALLENGE to the new address, the client's "
        "PATH_RESPONSE and data continuing (the interop case of the move, read by tshark), with "
        "the first other run's evidence.</p>"
    )
    return Section(id="path-changes", title="Path changes", html=note + numbers_table(head, rows))


def _controller_text(values, windows: list[dict]) -> str:
    """Our server's controllers (its trace says when it made one): "reset in k of m, cwnd B ->
    A bytes (medians)" or "kept in m of m"; else the other servers' windows from their qlog
    (_windows_text); "–" when neither says."""
    known = [v for v in values if isinstance(v, dict) and v.get("count")]
    if not known:
        return _windows_text(windows)
    reset = [v for v in known if v["count"] > 1]
    if not reset:
        return f"kept in {len(known)} of {len(known)}"
    before = median_of(v.get("cwnd_before") for v in reset)
    after = median_of(v.get("cwnd_after") for v in reset)
    return f"reset in {len(reset)} of {len(known)}, cwnd {_fmt(before, '{:,.0f}')} -> {_fmt(after, '{:,.0f}')} B"


def _windows(experiment, rebound) -> list[dict]:
    """The server's window across the change of each rebound QUIC run that completed, from
    its qlog (analyses.server_windows), where our server's own account is absent."""
    if experiment is None:
        return []
    out = []
    for _, run in rebound.iterrows():
        if run.get("protocol_requested") != "h3" or run.get("status") != "ok":
            continue
        if isinstance(run.get("_controllers"), dict):
            continue
        found = window_of_run(experiment, run.to_dict())
        if found:
            out.append(found)
    return out


def _windows_text(windows: list[dict]) -> str:
    """Per outcome, the commonest first: "reset in k of m: B -> A bytes, T ms after its
    challenge" (medians), read from the servers' own qlog."""
    if not windows:
        return "–"
    by: dict[str, list[dict]] = {}
    for w in windows:
        by.setdefault(w["outcome"], []).append(w)
    parts = []
    for outcome, ws in sorted(by.items(), key=lambda kv: -len(kv[1])):
        of = f"in {len(ws)} of {len(windows)}"
        before = median_of(w.get("before") for w in ws)
        after = median_of(w.get("lowest") for w in ws)
        at = _fmt(median_of(w.get("lowest_at_ms") for w in ws), "{:.0f}")
        b, a = _fmt(before, "{:,.0f}"), _fmt(after, "{:,.0f}")
        if outcome == "new controller":
            first = f"first window {a} B {at} ms after its challenge (old path {b} B)"
            parts.append(f"a new controller for the new path {of}: {first}")
        elif outcome == "reset":
            parts.append(f"reset {of}: {b} -> {a} B {at} ms after its challenge")
        elif outcome == "reduced":
            ratio = _fmt(after / before if before else math.nan, "x{:.2f}")
            cuts = median_of(w.get("reductions") for w in ws)
            parts.append(f"kept {of}, cut {b} -> {a} B ({ratio}, {cuts:.0f} cut(s)) by {at} ms after its challenge")
        elif outcome == "kept":
            parts.append(f"kept {of}, not cut")
        else:
            parts.append(f"its window near the initial one already {of} (a reset would not show)")
    return "; ".join(parts) + "; from its qlog"


def change_of(link) -> str:
    """What changes a cell's path: "NAT", "handover" or "none"."""
    if getattr(link, "handover", None) is not None:
        return "handover"
    return "NAT" if getattr(link, "nat", None) is not None else "none"


def _validation(experiment, cell, rebound) -> str:
    """ "k of m" rebound QUIC runs whose capture passed the case of the move (a client that
    moved on purpose: connection-migration, which also asks for a new connection ID), and the
    evidence of the first that did not; "–" when none kept a capture to judge."""
    link = getattr(cell, "link", None)
    results, cases = [], []
    for _, run in rebound.iterrows():
        if run.get("protocol_requested") != "h3":  # a TCP run's capture has no QUIC to judge
            continue
        case = move_case(link, run.get("migration"))
        if case is None:  # a path that moved no one
            continue
        r = judge_run(experiment, run.to_dict(), case)
        if r is not None:
            results.append(r)
            cases.append(case)
    if not results:
        return "–"
    passed = sum(r["verdict"] == "passed" for r in results)
    other = next((r for r in results if r["verdict"] != "passed"), None)
    text = f"{passed} of {len(results)} ({', '.join(dict.fromkeys(cases))})"
    return text + (f"; {escape(other['verdict'])}: {escape(other['evidence'])}" if other else "")
