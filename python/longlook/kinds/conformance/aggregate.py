"""The conformance figures of an experiment, from its store: per cell, the envelope overlap
of the stack with the kernel (one per round, mean and interval across rounds) beside the
kernel's own round-to-round overlap and the verdict from their difference
(envelope_verdict.py); the stack's share beside the kernel (paired per run:
core.stats.compare_samples, Holm across cells where the scenario asks for it); and per
parameter the stack's and the kernel's values with the verdict across runs (judge.py)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ...core.multiple import holm
from ...core.stats import SURVIVORSHIP_ALPHA, CellComparison, Completion, compare_samples, holm_adjust
from ...core.status import counted_runs
from ...core.verdicts import verdict_producer
from .envelope import Envelope, mean_interval, overlap
from .envelope_verdict import envelope_test, overlap_matrix
from .judge import (
    DEVIATES,
    MIN_SPLIT_RUNS,
    NOT_MEASURABLE,
    ParameterInput,
    judge_parameters,
    judge_reference,
    reference_against_itself,
)
from .measure import KERNEL_FLOW, STACK_FLOW
from .params import bound_of
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
        rows.append(
            {
                "cell_id": cid,
                "overlap": mean,
                "low": max(lo, 0.0) if lo == lo else lo,
                "high": min(hi, 1.0) if hi == hi else hi,
                "n": n,
            }
        )
    return pd.DataFrame(rows, columns=["cell_id", "overlap", "low", "high", "n"])


ENVELOPE_COLUMNS = [
    "cell_id",
    "between",
    "within",
    "difference",
    "p_value",
    "p_adjusted",
    "smallest_p",
    "verdict",
    "n_stack",
    "n_kernel",
    "reason",
]


def envelope_verdicts(
    store, runs: pd.DataFrame, *, alpha: float = 0.01, holm_cells: bool = False, exclude_flagged: bool = True
) -> pd.DataFrame:
    """Per cell, envelope_test on the counted alone (stack) and kernel runs: the stack's
    overlap with the kernel beside the kernel's with itself, and the verdict; Holm across
    the cells with `holm_cells` (the scenario's holm)."""
    good = counted_runs(runs, "mbit", exclude_flagged=exclude_flagged)
    rows = []
    for cid, g in good.groupby("cell_id", sort=False):
        alone = g[g["arm"] == "alone"]["run_id"].tolist()
        kernel = g[g["arm"] == "kernel"]["run_id"].tolist()
        if not alone and not kernel:
            continue
        cores = [run_envelope(store, r, STACK_FLOW).core() for r in alone] + [
            run_envelope(store, r, KERNEL_FLOW).core() for r in kernel
        ]
        t = envelope_test(overlap_matrix(cores), [False] * len(alone) + [True] * len(kernel), alpha=alpha)
        rows.append(
            {
                "cell_id": cid,
                "between": t.between,
                "within": t.within,
                "difference": t.difference,
                "p_value": t.p_value,
                "p_adjusted": t.p_value,
                "smallest_p": t.smallest_p,
                "verdict": t.verdict,
                "n_stack": t.n_stack,
                "n_kernel": t.n_kernel,
                "reason": t.reason,
            }
        )
    out = pd.DataFrame(rows, columns=ENVELOPE_COLUMNS)
    if holm_cells and len(out):
        out["p_adjusted"] = holm(out["p_value"].to_numpy(float))
        lost = (out["verdict"] == "differs") & ~(out["p_adjusted"] < alpha)
        out.loc[lost, "verdict"] = "inconclusive"
        out.loc[lost, "reason"] = f"Holm over {int(out['p_value'].notna().sum())} cells"
    return out


def _rounds_tried(runs: pd.DataFrame) -> dict[tuple[str, str], int]:
    """(cell, arm) -> rounds tried, whatever their outcome; {} without the columns."""
    if not {"cell_id", "arm", "round"} <= set(runs.columns) or runs.empty:
        return {}
    return {k: int(n) for k, n in runs.groupby(["cell_id", "arm"])["round"].nunique().items()}


@verdict_producer("conformance.share", "the stack's throughput beside the kernel's in shared runs: faster/slower")
def share_comparisons(
    runs: pd.DataFrame,
    alpha: float = 0.01,
    exclude_flagged: bool = True,
    *,
    holm_cells: bool = False,
    survivorship_alpha: float = SURVIVORSHIP_ALPHA,
) -> dict[str, CellComparison]:
    """Per cell: the stack's throughput beside the kernel's in the shared runs, paired per run
    (both flows of one run), by the project's one comparison, with the shared arm's
    completion (a shared run that failed lost both flows); Holm across the cells with
    `holm_cells` (the scenario's holm)."""
    tried = _rounds_tried(runs)
    good = counted_runs(runs, "mbit", exclude_flagged=exclude_flagged)
    shared = good[(good["arm"] == "shared") & good["ref_mbit"].notna()]
    out = {}
    for cid, g in shared.groupby("cell_id", sort=False):
        n_tried = tried.get((cid, "shared"))
        counted = int(g["round"].nunique()) if "round" in g else len(g)
        done = Completion(min(counted, n_tried), n_tried) if n_tried else None
        out[cid] = compare_samples(
            g["mbit"].astype(float),
            g["ref_mbit"].astype(float),
            a_label="stack",
            b_label="kernel",
            cell_id=str(cid),
            alpha=alpha,
            metric="mbit",
            lower_is_better=False,
            better_word="faster",
            paired=True,
            completion_a=done,
            completion_b=done,
            survivorship_alpha=survivorship_alpha,
        )
    if holm_cells and out:
        out = dict(zip(out, holm_adjust(list(out.values()))))
    return out


SUMMARY_COLUMNS = [
    "cell_id",
    "flow",
    "stack",
    "version",
    "cc",
    "parameter",
    "measured",
    "reference",
    "unit",
    "verdict",
    "runs",
    "verdicts",
    "outside",
    "tolerance",
    "bound",
    "low",
    "high",
    "centre",
    "interval_low",
    "interval_high",
    "values",
    "kernel_values",
    "against",
    "p_value",
    "p_adjusted",
    "reason",
    "self",
    "note",
]


def _bound_text(low: float, high: float, unit: str) -> str:
    if math.isfinite(low) and math.isfinite(high):
        return f"{_number(low)}–{_number(high)} {unit}"
    if math.isfinite(high):
        return f"≤ {_number(high)} {unit}"
    if math.isfinite(low):
        return f"≥ {_number(low)} {unit}"
    return "–"


def _number(v: float) -> str:
    return f"{v:.0f}" if abs(v) >= 1000 else f"{v:.3g}"  # bytes in full, the rest to 3 digits


def _values_text(x: np.ndarray) -> str:
    """Median, range and n of per-run values."""
    if not x.size:
        return "–"
    med = _number(float(np.median(x)))
    return f"{med} (n=1)" if x.size == 1 else f"{med} [{_number(x.min())}–{_number(x.max())}] (n={x.size})"


def _completion(g: pd.DataFrame | None, tried: dict, cid: str, arm: str) -> Completion | None:
    """Rounds with a value of the parameter, of the arm's rounds tried (None without them)."""
    n_tried = tried.get((cid, arm))
    if not n_tried:
        return None
    have = g[g["measured"].notna()] if g is not None else pd.DataFrame(columns=["measured"])
    counted = int(have["round"].nunique()) if "round" in have else len(have)
    return Completion(min(counted, n_tried), n_tried)


def _moved(kernel: pd.DataFrame | None, reference: float) -> np.ndarray:
    """The kernel's values in the stack's specification: each moved by the difference of the
    two references (TCP's 10 x MSS initial window is QUIC's 10 x 1200 bytes)."""
    if kernel is None or kernel.empty:
        return np.array([])
    k = kernel[kernel["measured"].notna()]
    own = k["reference"].fillna(k["reference"].median()).to_numpy(float)
    shift = (reference - own) if math.isfinite(reference) else np.zeros(len(k))
    return k["measured"].to_numpy(float) + np.nan_to_num(shift)


def parameter_summary(
    table: pd.DataFrame,
    runs: pd.DataFrame,
    exclude_flagged: bool = True,
    *,
    alpha: float = 0.01,
    test: str = "welch",
    holm_cells: bool = False,
    survivorship_alpha: float = SURVIVORSHIP_ALPHA,
) -> pd.DataFrame:
    """Per cell, flow (stack | kernel) and parameter, over the counted runs of the alone and
    kernel arms (a flow by itself): the median measured, the reference and the bound, the
    runs' own verdicts against the bound (how many fell outside), and the verdict across
    runs (judge.py): the stack's against the kernel's runs of the cell, Holm over the
    stack's parameters (over every cell's with `holm_cells`); the kernel's own against the
    bound, with the kernel against itself (its runs split in two)."""
    tried = _rounds_tried(runs)
    if {"status", "protocol_requested"} <= set(runs.columns):
        runs = counted_runs(runs, exclude_flagged=exclude_flagged)
    keep = ["run_id", "cell_id"] + (["round"] if "round" in runs.columns and "round" not in table.columns else [])
    t = table.merge(runs[keep], on="run_id")
    t = t[((t["flow"] == STACK_FLOW) & (t["arm"] == "alone")) | ((t["flow"] == KERNEL_FLOW) & (t["arm"] == "kernel"))]
    if t.empty:
        return pd.DataFrame(columns=SUMMARY_COLUMNS)
    groups = dict(list(t.groupby(["cell_id", "flow", "stack", "version", "cc", "parameter"], sort=False)))
    kernel_of = {(k[0], k[5]): g for k, g in groups.items() if k[1] == KERNEL_FLOW}
    rows, items = [], []
    for (cid, flow, stack, version, cc, param), g in groups.items():
        verdicts = g["verdict"].value_counts()
        values = g["measured"].dropna().to_numpy(float)
        reference = float(g["reference"].median()) if g["reference"].notna().any() else math.nan
        low, high = bound_of(param, reference, tcp=flow == KERNEL_FLOW)
        measurable = int(verdicts.drop(NOT_MEASURABLE, errors="ignore").sum())
        row = {
            "cell_id": cid,
            "flow": flow,
            "stack": stack,
            "version": version,
            "cc": cc,
            "parameter": param,
            "measured": float(np.median(values)) if values.size else math.nan,
            "reference": reference,
            "unit": g["unit"].iloc[0],
            "runs": len(g),
            "verdicts": ", ".join(f"{k} {v}" for k, v in sorted(verdicts.items())),
            "outside": f"{int(verdicts.get(DEVIATES, 0))} of {measurable}" if measurable else "–",
            "tolerance": g["tolerance"].iloc[0],
            "bound": _bound_text(low, high, g["unit"].iloc[0]),
            "low": low,
            "high": high,
            "values": _values_text(values),
            "kernel_values": "",
            "self": "",
            "note": g["note"].iloc[-1],
        }
        if flow == STACK_FLOW:
            kernel = kernel_of.get((cid, param))
            moved = _moved(kernel, reference)
            row["kernel_values"] = _values_text(moved)
            items.append(
                ParameterInput(
                    param,
                    values,
                    moved,
                    (low, high),
                    _completion(g, tried, cid, "alone"),
                    _completion(kernel, tried, cid, "kernel") if kernel is not None else None,
                    key=len(rows),
                )
            )
        else:
            verdict, centre, lo, hi = judge_reference(values, (low, high), alpha)
            row.update(
                verdict=verdict,
                centre=centre,
                interval_low=lo,
                interval_high=hi,
                against="",
                p_value=math.nan,
                p_adjusted=math.nan,
                reason="",
            )
        rows.append(row)
    families: dict = {}
    for it in items:
        families.setdefault("all" if holm_cells else rows[it.key]["cell_id"], []).append(it)
    for family in families.values():
        for v in judge_parameters(family, alpha=alpha, test=test, survivorship_alpha=survivorship_alpha):
            rows[v.key].update(
                verdict=v.verdict,
                centre=v.centre,
                interval_low=v.low,
                interval_high=v.high,
                against=v.against,
                p_value=v.p_value,
                p_adjusted=v.p_adjusted,
                reason=v.reason,
            )
    _add_self_comparison(rows, t, alpha, test)
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


def _add_self_comparison(rows: list[dict], t: pd.DataFrame, alpha: float, test: str) -> None:
    """The kernel's rows: how often its runs, split in two, call it "deviates" from itself."""
    kernel = t[t["flow"] == KERNEL_FLOW]
    for cid, g in kernel.groupby("cell_id", sort=False):
        wide = g.pivot_table(index="run_id", columns="parameter", values="measured", aggfunc="last", dropna=False)
        wide = wide.reindex(sorted(g["run_id"].unique()))
        refs = g.groupby("parameter")["reference"].median()
        bounds = {p: bound_of(p, refs.get(p), tcp=True) for p in wide.columns}
        found = reference_against_itself(
            {p: wide[p].to_numpy(float) for p in wide.columns}, bounds, alpha=alpha, test=test
        )
        for r in rows:
            if r["cell_id"] == cid and r["flow"] == KERNEL_FLOW:
                k = found.get(r["parameter"])
                measured = int(wide[r["parameter"]].notna().sum())
                r["self"] = (
                    "–"
                    if not measured
                    else f"deviates in {k[0]} of {k[1]} splits"
                    if k
                    else f"too few runs to split ({len(wide)}; {MIN_SPLIT_RUNS} needed)"
                )


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


def diagnose(
    runs: pd.DataFrame,
    rate_mbit: float,
    object_size: int,
    exclude_flagged: bool = True,
    buffer_bytes: float | None = None,
) -> dict:
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
    figures = (
        f"{util:.0%} of the link; CPU over the transfer: server {busy.get('server', math.nan):.2f}, "
        f"client {busy.get('client', math.nan):.2f} cores; median cwnd {cwnd / 1000:.0f} KB vs BDP "
        f"{bdp / 1000:.0f} KB, {fill:.0%} of it in flight; {losses:.0f} window cuts in {transfer:.1f} s; "
        f"queueing {queue:.1f} ms at the router, {sender_queue:.1f} ms in the sender's RTT (the buffer "
        f"drains in {drain_ms:.0f} ms); idle {idle:.0%}; "
        f"sending at {send:.1f} Mbit/s while active (release gaps p10/median {regular:.2f}), "
        f"cwnd/srtt allows {allowed:.1f} Mbit/s"
    )
    who = max(busy, key=busy.get) if busy else None
    if who and busy[who] >= CPU_BUSY:
        return {**out, "reason": f"CPU-bound ({who})", "evidence": figures}
    if sender_queue == sender_queue and drain_ms == drain_ms and sender_queue > 1.5 * drain_ms:
        return {
            **out,
            "reason": "processing-limited (RTT inflated beyond the buffer: endpoint delay)",
            "evidence": figures,
        }
    if idle == idle and idle >= 0.1:
        return {**out, "reason": "stalled (idle for 2+ RTTs)", "evidence": figures}
    if cwnd == cwnd and bdp == bdp and cwnd < WINDOW_SHORT * bdp:
        return {**out, "reason": "window-limited (congestion window below the BDP)", "evidence": figures}
    if pacing_limited(send, regular, allowed, fill, rate_mbit, SLOW):
        return {
            **out,
            "reason": "pacing-limited (evenly spaced sends below the link's rate, window not limiting)",
            "evidence": figures,
        }
    if fill == fill and fill < FILL_LOW:
        return {**out, "reason": "flow-control or application-limited (window not filled)", "evidence": figures}
    not_full = drain_ms / 2 if drain_ms == drain_ms else (rtt / 4 if rtt == rtt else math.nan)
    if transfer and losses / transfer >= 2 and queue == queue and queue < not_full:
        return {**out, "reason": "loss-limited", "evidence": figures}
    return {**out, "reason": "not diagnosed", "evidence": figures}
