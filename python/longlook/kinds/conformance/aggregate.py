"""The conformance figures of an experiment, from its store: per cell, the envelope overlap
of the stack with the kernel (one per round, mean and interval across rounds), the stack's
share beside the kernel (paired per run: core.stats.compare_samples), and per parameter the
stack's and the kernel's measured values and verdicts."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ...core.stats import CellComparison, compare_samples
from ...core.status import counted_runs
from .envelope import Envelope, mean_interval, overlap
from .measure import KERNEL_FLOW, STACK_FLOW
from .params.send_clock import pacing_limited


def run_envelope(store, run_id: str, flow: str) -> Envelope:
    s = store.series(run_id)
    s = s[s["key"] == flow]
    mbit = s[s["name"] == "mbit"].set_index("t_s")["value"].rename("mbit")
    queue = s[s["name"] == "queue_ms"].set_index("t_s")["value"].rename("queue_ms")
    pts = pd.concat([mbit, queue], axis=1).reset_index().rename(columns={"index": "t_s"})
    return Envelope(pts.reindex(columns=["t_s", "mbit", "queue_ms"]))


def envelope_overlaps(store, runs: pd.DataFrame, exclude_flagged: bool = True) -> pd.DataFrame:
    """cell_id, round, overlap: each round's stack-alone envelope against the kernel-alone one."""
    good = counted_runs(runs, "mbit", exclude_flagged=exclude_flagged)
    rows = []
    for (cid, rnd), g in good.groupby(["cell_id", "round"]):
        alone, kernel = g[g["arm"] == "alone"], g[g["arm"] == "kernel"]
        if alone.empty or kernel.empty:
            continue
        a = run_envelope(store, alone["run_id"].iloc[0], STACK_FLOW).core()
        b = run_envelope(store, kernel["run_id"].iloc[0], KERNEL_FLOW).core()
        rows.append({"cell_id": cid, "round": int(rnd), "overlap": overlap(a, b)})
    return pd.DataFrame(rows, columns=["cell_id", "round", "overlap"])


def overlap_summary(overlaps: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """Per cell: mean overlap, its interval across rounds, n."""
    rows = []
    for cid, g in overlaps.groupby("cell_id", sort=False):
        mean, lo, hi, n = mean_interval(g["overlap"], confidence)
        # an overlap is a share: its interval is cut to [0, 1]
        rows.append({"cell_id": cid, "overlap": mean, "low": max(lo, 0.0) if lo == lo else lo,
                     "high": min(hi, 1.0) if hi == hi else hi, "n": n})
    return pd.DataFrame(rows, columns=["cell_id", "overlap", "low", "high", "n"])


def share_comparisons(runs: pd.DataFrame, alpha: float = 0.01, exclude_flagged: bool = True
                      ) -> dict[str, CellComparison]:
    """Per cell: the stack's throughput beside the kernel's in the shared runs, paired per run
    (both flows of one run), by the project's one comparison."""
    good = counted_runs(runs, "mbit", exclude_flagged=exclude_flagged)
    shared = good[(good["arm"] == "shared") & good["ref_mbit"].notna()]
    out = {}
    for cid, g in shared.groupby("cell_id", sort=False):
        out[cid] = compare_samples(g["mbit"].astype(float), g["ref_mbit"].astype(float), a_label="stack",
                                   b_label="kernel", cell_id=str(cid), alpha=alpha, metric="mbit",
                                   lower_is_better=False, better_word="faster", paired=True)
    return out


def parameter_summary(table: pd.DataFrame, runs: pd.DataFrame, exclude_flagged: bool = True) -> pd.DataFrame:
    """Per cell, flow (stack | kernel) and parameter, over the counted runs of the alone and
    kernel arms (a flow by itself): median measured, the reference, and the verdicts counted."""
    if {"status", "protocol_requested"} <= set(runs.columns):
        runs = counted_runs(runs, exclude_flagged=exclude_flagged)
    t = table.merge(runs[["run_id", "cell_id"]], on="run_id")
    t = t[((t["flow"] == STACK_FLOW) & (t["arm"] == "alone")) | ((t["flow"] == KERNEL_FLOW) & (t["arm"] == "kernel"))]
    rows = []
    for (cid, flow, stack, version, cc, param), g in t.groupby(
            ["cell_id", "flow", "stack", "version", "cc", "parameter"], sort=False):
        verdicts = g["verdict"].value_counts()
        measured = g["measured"].dropna()
        rows.append({"cell_id": cid, "flow": flow, "stack": stack, "version": version, "cc": cc, "parameter": param,
                     "measured": float(measured.median()) if len(measured) else math.nan,
                     "reference": g["reference"].dropna().iloc[0] if g["reference"].notna().any() else math.nan,
                     "unit": g["unit"].iloc[0], "verdict": verdict_of(verdicts), "runs": len(g),
                     "verdicts": ", ".join(f"{k} {v}" for k, v in verdicts.items()),
                     "tolerance": g["tolerance"].iloc[0], "note": g["note"].iloc[-1]})
    return pd.DataFrame(rows)


def verdict_of(counts: pd.Series) -> str:
    """A cell's verdict from its runs': the majority of the measurable ones, else not measurable."""
    measurable = counts.drop("not measurable", errors="ignore")
    if measurable.empty:
        return "not measurable"
    return str(measurable.idxmax())


def coverage(mean: float, sd: float, n: int, trials: int, seed: int = 1, confidence: float = 0.95) -> float:
    """How often mean_interval covers the true mean of normal samples (the tests' check)."""
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(trials):
        _, lo, hi, _ = mean_interval(rng.normal(mean, sd, n), confidence)
        hits += lo <= mean <= hi
    return hits / trials


SLOW = 0.9  # below this share of the link's rate at the router, a stack is "slow"
CPU_BUSY = 0.85  # cores busy during the transfer: one process at a full core
WINDOW_SHORT = 0.9  # median cwnd below this share of the path's BDP: window-limited
FILL_LOW = 0.6  # median in-flight below this share of cwnd: not the congestion window


def diagnose(runs: pd.DataFrame, rate_mbit: float, object_size: int, exclude_flagged: bool = True,
             buffer_bytes: float | None = None) -> dict:
    """Why a stack's alone runs reach less than SLOW of the link (Kakhki's method: the
    inner state explains the difference), from the medians of its counted alone runs:

    - CPU-bound: its server or client kept ~a core busy over the transfer (CPU seconds over
      first-to-last byte at the router: the CPU accounting of core/audit.py);
    - processing-limited: its RTT (the sender's own RTT - min RTT, `sender_queue_ms`) rose by
      more than the bottleneck buffer can hold (1.5x the buffer's drain time; the router's
      queueing delay never exceeds it): the extra delay is at the endpoints (a process that cannot keep
      up delays its packets and ACKs; on a shared machine its CPU seconds understate it);
    - stalled: the sender sent nothing for 2+ RTTs over 10% or more of the transfer
      (timeouts, blocked on flow control or its application);
    - window-limited: its median congestion window below the path's BDP (rate x min RTT);
    - pacing-limited: it sends steadily (its releases evenly spaced: 10th-percentile gap at
      least half the median) at a rate below SLOW x the link's, while its window would allow
      the link's rate (median cwnd / srtt) and is not full (under 90% in flight): its send
      clock, not the window, holds it back (params/send_clock.py);
    - flow-control or application-limited: a window of a BDP or more kept less than FILL_LOW
      full (the receiver's flow-control window or the sender's application held it back);
    - loss-limited: repeated window cuts (2+ per second of transfer) with the queue not
      filled (mean queueing delay at the router under half the buffer's drain time, else a
      quarter RTT);
    otherwise not diagnosed."""
    good = counted_runs(runs, "mbit", exclude_flagged=exclude_flagged)
    alone = good[good["arm"] == "alone"]
    if alone.empty:
        return {"slow": None, "reason": "no counted alone run", "evidence": ""}
    med = lambda c: float(alone[c].median()) if c in alone and alone[c].notna().any() else math.nan  # noqa: E731
    mbit, transfer = med("mbit"), med("transfer_s")
    util = mbit / rate_mbit if rate_mbit else math.nan
    out = {"slow": bool(util < SLOW), "utilization": util, "mbit": mbit}
    if not util < SLOW:
        return {**out, "reason": "not slow", "evidence": f"{util:.0%} of the link"}
    busy = {p: med(f"{p}_cpu_s") / transfer for p in ("server", "client") if transfer and transfer > 0}
    rtt = med("min_rtt_ms")
    bdp = rate_mbit * 1e6 / 8 * rtt / 1000 if rtt == rtt else math.nan
    cwnd, fill, losses, queue = med("cwnd_bytes"), med("inflight_share"), med("loss_episodes"), med("queue_ms")
    sender_queue = med("sender_queue_ms")
    idle = med("idle_share")
    send, regular, allowed = med("send_mbit"), med("gap_regularity"), med("window_mbit")
    drain_ms = buffer_bytes * 8 / (rate_mbit * 1e6) * 1000 if buffer_bytes else math.nan
    figures = (f"{util:.0%} of the link; CPU over the transfer: server {busy.get('server', math.nan):.2f}, "
               f"client {busy.get('client', math.nan):.2f} cores; median cwnd {cwnd / 1000:.0f} KB vs BDP "
               f"{bdp / 1000:.0f} KB, {fill:.0%} of it in flight; {losses:.0f} window cuts in {transfer:.1f} s; "
               f"queueing {queue:.1f} ms at the router, {sender_queue:.1f} ms in the sender's RTT (the buffer "
               f"drains in {drain_ms:.0f} ms); idle {idle:.0%}; "
               f"sending at {send:.1f} Mbit/s while active (release gaps p10/median {regular:.2f}), "
               f"cwnd/srtt allows {allowed:.1f} Mbit/s")
    who = max(busy, key=busy.get) if busy else None
    if who and busy[who] >= CPU_BUSY:
        return {**out, "reason": f"CPU-bound ({who})", "evidence": figures}
    if sender_queue == sender_queue and drain_ms == drain_ms and sender_queue > 1.5 * drain_ms:
        return {**out, "reason": "processing-limited (RTT inflated beyond the buffer: endpoint delay)",
                "evidence": figures}
    if idle == idle and idle >= 0.1:
        return {**out, "reason": "stalled (idle for 2+ RTTs)", "evidence": figures}
    if cwnd == cwnd and bdp == bdp and cwnd < WINDOW_SHORT * bdp:
        return {**out, "reason": "window-limited (congestion window below the BDP)", "evidence": figures}
    if pacing_limited(send, regular, allowed, fill, rate_mbit, SLOW):
        return {**out, "reason": "pacing-limited (evenly spaced sends below the link's rate, window not limiting)",
                "evidence": figures}
    if fill == fill and fill < FILL_LOW:
        return {**out, "reason": "flow-control or application-limited (window not filled)", "evidence": figures}
    not_full = drain_ms / 2 if drain_ms == drain_ms else (rtt / 4 if rtt == rtt else math.nan)
    if transfer and losses / transfer >= 2 and queue == queue and queue < not_full:
        return {**out, "reason": "loss-limited", "evidence": figures}
    return {**out, "reason": "not diagnosed", "evidence": figures}
