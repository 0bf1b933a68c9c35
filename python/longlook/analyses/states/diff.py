"""StateDiff: what changes in the state machine between two sets of runs (cells/scenarios).

Per protocol, every run gives counts: each transition a->b, entries into each state, and
its loss accounting (declared losses, spurious losses, loss events). For each item:
- presence (runs with count > 0, A vs B): Fisher's exact test, two-sided;
- frequency (per-run counts, A vs B): Mann-Whitney U, two-sided (counts are skewed and often
  tied at 0, so no normality is assumed); both are core.stats'.
`status`: "appears" / "vanishes" when no run of one side has it; "more" / "fewer" when the
decisive test (Fisher for appears/vanishes, Mann-Whitney otherwise) is significant after Holm
correction over all items of the protocol (holm=False: raw p, exploratory), in U's direction;
else "same", which means "no significant change", not a shown equivalence.
With complete separation Mann-Whitney needs about 10 runs a side to pass Holm at 0.01 over
~20 items (6 a side give p >= 0.002 before correction). Runs are the unit of replication.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...core.stats import compare_samples, share_test
from .machine import TransitionGraph
from .runs import RunLogs
from .trace import StateTrace

LOSS_ITEMS = {"QUIC": ("declared_lost", "spurious", "loss_events", "by_packet_threshold", "by_time_threshold"),
              "TCP": ("declared_lost", "spurious", "loss_events", "dsack_spurious")}


def per_run_counts(runs: list[RunLogs]) -> pd.DataFrame:
    """One row per run: `a->b` transition counts, `enter:X` entries, `loss:...` counts."""
    traces = [r.trace() for r in runs]
    g = TransitionGraph.infer(traces)
    entries = g.entries_per_run.drop(columns=["Init"], errors="ignore").add_prefix("enter:")
    losses = pd.DataFrame([{f"loss:{k}": r.losses().as_dict().get(k) for k in LOSS_ITEMS.get(r.protocol, ())}
                           for r in runs], index=[r.run_id for r in runs])
    return pd.concat([g.transitions_per_run, entries, losses], axis=1)


@dataclass
class StateDiff:
    protocol: str
    label_a: str
    label_b: str
    n_a: int
    n_b: int
    alpha: float
    rows: pd.DataFrame  # item, kind, mean_a, mean_b, runs_a, runs_b, p_presence, p_counts, p, p_adjusted, status

    def significant(self) -> pd.DataFrame:
        return self.rows[self.rows.status != "same"]

    def row(self, item: str) -> dict:
        r = self.rows[self.rows["item"] == item]
        return r.iloc[0].to_dict() if len(r) else {}


def _kind(item: str) -> str:
    return "entries" if item.startswith("enter:") else "losses" if item.startswith("loss:") else "transition"


def compare(runs_a: list[RunLogs], runs_b: list[RunLogs], protocol: str, *,
            label_a: str = "A", label_b: str = "B", alpha: float = 0.01,
            holm: bool = True) -> StateDiff:
    a = per_run_counts([r for r in runs_a if r.protocol == protocol])
    b = per_run_counts([r for r in runs_b if r.protocol == protocol])
    items = list(dict.fromkeys(list(a.columns) + list(b.columns)))
    rows = []
    for item in items:
        xa = pd.to_numeric(a.get(item, pd.Series(dtype=float)), errors="coerce").reindex(a.index)
        xb = pd.to_numeric(b.get(item, pd.Series(dtype=float)), errors="coerce").reindex(b.index)
        if _kind(item) != "losses":  # never seen in a run = 0 times; an unknown loss stays unknown
            xa, xb = xa.fillna(0), xb.fillna(0)
        xa, xb = xa.dropna().to_numpy(float), xb.dropna().to_numpy(float)
        ra, rb = int((xa > 0).sum()), int((xb > 0).sum())
        p_pres = share_test(ra, len(xa), rb, len(xb))
        p_cnt, towards = math.nan, 0
        if len(xa) and len(xb):
            if np.ptp(np.concatenate([xa, xb])) > 0:
                c = compare_samples(xa, xb, test="mannwhitney", alpha=alpha)
                p_cnt, towards = c.p_value, -c.direction  # +1: B above A
            else:
                p_cnt = 1.0  # every run of both sides has the same count: nothing moved
        presence_change = (ra == 0) != (rb == 0)
        rows.append({"item": item, "kind": _kind(item),
                     "mean_a": float(xa.mean()) if len(xa) else math.nan,
                     "mean_b": float(xb.mean()) if len(xb) else math.nan,
                     "n_a": len(xa), "n_b": len(xb), "runs_a": ra, "runs_b": rb,
                     "p_presence": p_pres, "p_counts": p_cnt,
                     "p": p_pres if presence_change else p_cnt,
                     "presence_change": presence_change, "towards": towards})
    df = pd.DataFrame(rows)
    if len(df):
        ok = df["p"].notna()
        df["p_adjusted"] = np.nan
        if ok.any():
            df.loc[ok, "p_adjusted"] = holm_adjust(df.loc[ok, "p"].to_numpy(float)) if holm else df.loc[ok, "p"]
        df["status"] = [_status(r, alpha) for r in df.itertuples()]
        df["significant"] = df["p_adjusted"] < alpha
        df["direction"] = [_direction(r) for r in df.itertuples()]
        order = {"appears": 0, "vanishes": 0, "more": 1, "fewer": 1, "same": 2}
        df = df.sort_values(by=["status", "p"], key=lambda s: s.map(order) if s.name == "status" else s,
                            ignore_index=True)
    else:
        df = pd.DataFrame(columns=["item", "kind", "mean_a", "mean_b", "n_a", "n_b", "runs_a", "runs_b",
                                   "p_presence", "p_counts", "p", "presence_change", "towards", "p_adjusted", "status",
                                   "significant", "direction"])
    return StateDiff(protocol=protocol, label_a=label_a, label_b=label_b, n_a=len(a), n_b=len(b),
                     alpha=alpha, rows=df)


def holm_adjust(p: np.ndarray) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values (as statsmodels' multipletests(method="holm"), which
    runs gc.collect() on every call: 0.1 s each, too slow for a report with many diffs)."""
    m = len(p)
    order = np.argsort(p)
    adjusted = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adjusted
    return out


def _direction(r) -> str:
    """Which way the means moved, significant or not (for display next to `significant`)."""
    if r.presence_change:
        return "appears" if r.runs_a == 0 else "vanishes"
    if r.mean_b > r.mean_a:
        return "more"
    return "fewer" if r.mean_b < r.mean_a else "same"


def _status(r, alpha: float) -> str:
    """The decisive test's verdict; its direction is Mann-Whitney's (U), not the means'."""
    if r.presence_change:
        return "appears" if r.runs_a == 0 else "vanishes"
    if not (r.p_adjusted < alpha) or r.towards == 0:
        return "same"
    return "more" if r.towards > 0 else "fewer"


def protocols_in(runs: list[RunLogs]) -> list[str]:
    return sorted({r.protocol for r in runs}, key=lambda p: (p != "QUIC", p))


def traces_of(runs: list[RunLogs], protocol: str) -> list[StateTrace]:
    return [r.trace() for r in runs if r.protocol == protocol]
