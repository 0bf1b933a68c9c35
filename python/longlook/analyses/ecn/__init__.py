"""Each sender's ECN, read from what linkem saw on the wire (per run: the packets toward the
client that arrived, and of them ECT(0), ECT(1) and CE; the AQM's marks and drops; the
queue's delay; core.audit.queue_figures), under the path conditions a scenario's links set:
a queue that marks ECN-capable packets CE (`aqm.ecn`, or DualPI2), and ECN path faults
(`middlebox.ecn`: bleach, drop_ect, ...). Arrivals are counted before the middlebox, so
behind a bleaching box they are still what the sender marked.

The table's entries per arm (a stack, as server and client), each with its evidence:

- **sends ECT**: on a marking path with no fault, the share of its packets toward the client
  that carried ECT(0) or ECT(1) (RFC 9000 §13.4: QUIC senders should; kernel TCP only when
  asked), "yes" from SENDS_SHARE of its packets, "no" under NONE_SHARE;
- **validates**: behind a bleaching box its ACKs report no ECT, and RFC 9000 §13.4.2 has a
  sender stop marking when validation fails: "stops" when it marked at most STOPS_SHARE of
  its packets (and how many), "keeps marking" otherwise;
- **survives an ECT black hole**: behind drop_ect, the runs that completed, and the ECT
  packets it sent before giving up marking;
- **reacts to CE**: on the marking path, the CE marks it met per run and the queue delay
  they held (a sender that ignored CE would keep the queue above the AQM's target and be
  marked without end);
- **window on CE**: from the sender's own qlog (qlog.ce_reaction), how often a CE signal was
  followed by a cut of its congestion window within two round trips, by what factor (RFC
  9002 §7.3.2: as for a loss, once per round trip), beside its factor on a loss."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...qlog.ce_reaction import Reaction, reactions
from ...qlog.reader import read_qlog

SENDS_SHARE = 0.5
NONE_SHARE = 0.01
STOPS_SHARE = 0.05


@dataclass(frozen=True)
class Condition:
    """What a link does to ECN toward the client: the queue marks, and the middlebox's fault."""

    marks: bool
    fault: str | None  # bleach, drop_ect, ect0_to_ect1, ect1_to_ect0, mark_ce or None


def condition_of(link) -> Condition:
    down = link.resolved("down")
    aqm, mb = down.aqm, down.middlebox
    marks = aqm is not None and (aqm.ecn or aqm.discipline == "dualpi2")
    return Condition(marks=marks, fault=getattr(mb, "ecn", None) if mb is not None else None)


def _down(details) -> dict:
    details = details if isinstance(details, dict) else {}
    return (details.get("queue") or {}).get("down") or {}


@dataclass(frozen=True)
class Evidence:
    """One arm under one condition, over its runs."""

    runs: int
    completed: int
    ect_share: float  # median over runs of (ECT(0) + ECT(1)) / arrived, toward the client
    ect_packets: float  # median ECT-marked packets per run
    codepoint: str  # "ECT(0)", "ECT(1)", "both" or "none"
    dropped_aqm: float  # median AQM drops per run
    sojourn_ms: float  # median of the runs' mean queue delay toward the client
    marked_runs: int = 0  # runs in which the AQM marked at least one packet
    ce_when_marked: float = math.nan  # median CE marks over those runs
    sojourn_when_marked: float = math.nan  # their median queue delay


def evidence(runs: pd.DataFrame) -> Evidence | None:
    """The ECN evidence of one arm's runs in one cell; None when linkem counted no codepoints
    (an older linkem)."""
    downs = [_down(d) for d in runs["details"]]
    have = [d for d in downs if "received" in d]
    if not have:
        return None
    received = np.array([d["received"] for d in have], float)
    e0 = np.array([d.get("ect0_seen", 0) for d in have], float)
    e1 = np.array([d.get("ect1_seen", 0) for d in have], float)
    share = np.where(received > 0, (e0 + e1) / np.maximum(received, 1), np.nan)
    codepoint = (
        "none" if e0.sum() + e1.sum() == 0 else "ECT(0)" if e1.sum() == 0 else "ECT(1)" if e0.sum() == 0 else "both"
    )
    med = lambda key: float(np.median([d.get(key, 0) for d in have]))  # noqa: E731
    sojourns = [d["sojourn_ms_mean"] for d in have if "sojourn_ms_mean" in d]
    marked = [d for d in have if d.get("ce_marked", 0) > 0]
    marked_sojourns = [d["sojourn_ms_mean"] for d in marked if "sojourn_ms_mean" in d]
    return Evidence(
        runs=len(runs),
        completed=int((runs["status"] == "ok").sum()),
        ect_share=float(np.nanmedian(share)) if np.isfinite(share).any() else math.nan,
        ect_packets=float(np.median(e0 + e1)),
        codepoint=codepoint,
        dropped_aqm=med("dropped_aqm"),
        sojourn_ms=float(np.median(sojourns)) if sojourns else math.nan,
        marked_runs=len(marked),
        ce_when_marked=float(np.median([d["ce_marked"] for d in marked])) if marked else math.nan,
        sojourn_when_marked=float(np.median(marked_sojourns)) if marked_sojourns else math.nan,
    )


def sends_ect(e: Evidence) -> str:
    if math.isnan(e.ect_share):
        return "not measured (no packets toward the client)"
    pct = f"{e.ect_share:.0%} of its packets"
    if e.ect_share >= SENDS_SHARE:
        return f"yes, {e.codepoint} ({pct})"
    if e.ect_share <= NONE_SHARE:
        return f"no ({pct})"
    return f"partly, {e.codepoint} ({pct})"


def validates(e: Evidence, sends: bool) -> str:
    """Behind a bleaching box."""
    if not sends:
        return "n/a: it sends no ECT"
    if math.isnan(e.ect_share):
        return "not measured"
    if e.ect_share <= STOPS_SHARE:
        return f"stops marking: {e.ect_packets:.0f} ECT packets a run ({e.ect_share:.1%}), then not-ECT"
    return f"keeps marking: {e.ect_share:.0%} of its packets ECT although none arrived marked"


def black_hole(e: Evidence, sends: bool) -> str:
    """Behind a box that drops every ECT packet."""
    done = f"{e.completed} of {e.runs} runs completed"
    if not sends:
        return f"{done} (it sends no ECT)"
    return f"{done}; {e.ect_packets:.0f} ECT packets a run sent into the hole ({e.ect_share:.1%})"


def reacts(e: Evidence, sends: bool) -> str:
    """On the marking path with no fault."""
    if not sends:
        return "n/a: it sends no ECT (the queue drops instead)"
    if e.marked_runs == 0:
        return f"no CE met in {e.runs} runs (the queue never marked; {e.sojourn_ms:.1f} ms)"
    return (
        f"marked in {e.marked_runs} of {e.runs} runs: {e.ce_when_marked:.0f} CE marks a run held the queue at "
        f"{e.sojourn_when_marked:.1f} ms ({e.dropped_aqm:.0f} AQM drops a run)"
    )


def _factor(r: Reaction) -> str:
    return f"x{float(np.median(r.factors)):.2f}" if r.factors else "–"


def window_on_ce(experiment, runs: pd.DataFrame) -> str | None:
    """The senders' window after CE, over the runs' server qlogs (their `qlog` artifact);
    None when no run kept one."""
    found = []
    for arts in runs["artifacts"] if "artifacts" in runs else []:
        name = (arts or {}).get("qlog") if isinstance(arts, dict) else None
        path = None if name is None or experiment is None else experiment / name
        if path is not None and path.is_file():
            found.append(reactions(read_qlog(path)))
    if not found:
        return None
    ce, loss = Reaction(), Reaction()
    for x in found:
        for total, one in ((ce, x.ce), (loss, x.loss)):
            total.signals += one.signals
            total.reduced += one.reduced
            total.factors += one.factors
            total.again_within_rtt += one.again_within_rtt
    on_loss = f"; on a loss {_factor(loss)} ({loss.reduced} cuts)" if loss.reduced else ""
    if not any(x.ce_reported for x in found):
        return f"its log carries no CE counts ({len(found)} runs){on_loss}"
    if ce.signals == 0:
        return f"no CE signal in its log ({len(found)} runs){on_loss}"
    again = f", {ce.again_within_rtt} second cuts within a round trip" if ce.again_within_rtt else ""
    return f"cut {_factor(ce)} after {ce.reduced} of {ce.signals} CE signals{again}{on_loss}"


def ecn_table(
    runs: pd.DataFrame,
    conditions: dict[str, Condition],
    switch: dict[str, str] | None = None,
    experiment=None,
) -> dict[str, dict[str, str]]:
    """row -> entry -> text, from the runs of the cells whose link sets each condition
    (`conditions`: cell id -> Condition). A row is an arm, or an arm with the cell's ECN
    switch (`switch`: cell id -> "ecn=on" / "ecn=off"; the sender's own setting, never
    pooled). Entries without a cell of their condition are left out. Several cells of one
    condition and switch (rates, workloads) are read together. `experiment`: its directory,
    where the runs' server qlogs are read for the window on CE."""
    switch = switch or {}
    runs = runs.assign(
        _row=[f"{a}, {switch[c]}" if c in switch else str(a) for a, c in zip(runs["arm"], runs["cell_id"])]
    )
    table: dict[str, dict[str, str]] = {}
    for arm, g in runs.groupby("_row", sort=False):
        by: dict[str | None, list[pd.DataFrame]] = {}  # fault (None: a marking path, no fault)
        for cid, c in conditions.items():
            part = g[g["cell_id"] == cid]
            if len(part) and (c.marks or c.fault):
                by.setdefault(c.fault, []).append(part)
        ev = {k: evidence(pd.concat(v)) for k, v in by.items()}
        row: dict[str, str] = {}
        clean = ev.get(None)
        sends = clean is not None and not math.isnan(clean.ect_share) and clean.ect_share > NONE_SHARE
        if clean is not None:
            row["sends ECT"] = sends_ect(clean)
            row["reacts to CE"] = reacts(clean, sends)
            if sends and (window := window_on_ce(experiment, pd.concat(by[None]))) is not None:
                row["window on CE (its log)"] = window
        if (e := ev.get("bleach")) is not None:
            row["behind bleaching (validation)"] = validates(e, sends if clean is not None else e.ect_share > 0)
        if (e := ev.get("drop_ect")) is not None:
            row["behind an ECT black hole"] = black_hole(e, sends if clean is not None else True)
        if row:
            table[str(arm)] = row
    return table
