"""StateDiff: what changes in the state machine between two sets of runs (cells/scenarios).

Per protocol, every run gives counts: each transition a->b, entries into each state, and
its loss accounting (declared losses, spurious losses, loss events). For each item one test
decides, and `p` is that test's own p-value:
- when one side has the item in no run and the other in some (a presence change): Fisher's
  exact test on presence (runs with count > 0, A vs B), two-sided;
- otherwise: Mann-Whitney U on the per-run counts, two-sided (counts are skewed and often
  tied at 0, so no normality is assumed); both are core.stats'.
`status`: "appears" / "vanishes" / "more" / "fewer" only when the decisive test is
significant after Holm (core.multiple) over all items of the protocol (holm=False: raw p, for
one item named in advance or to explore), in its direction; else "same", which means "no
significant change", not a shown equivalence. A transition seen in 1 of 10 runs of B and none
of A is "same" (Fisher p = 1): its `direction` ("appears") still says what the data show,
significant or not. Fisher needs 0 of 10 against 7 of 10 (p = 0.003) to pass alone, about 0 of
10 against 9 of 10 (p = 1e-4) to pass Holm over ~20 items; with complete separation
Mann-Whitney needs about 10 runs a side to pass Holm at 0.01 over ~20 items (6 a side give
p >= 0.002 before correction). Runs are the unit of replication; the runs read are those
that count (core.status), failed runs are not in either side.

Calibration (tests/calibration/test_states_diff.py): identical processes on both sides with
the project's shapes (most items rare, per-run presence 0.02-0.3, counts Poisson/geometric;
some always present with skewed counts; 3-30 runs a side, 10-20 items) give a non-"same"
status for any item of a protocol in at most `alpha` of the diffs, and a single item tested
without Holm (as a claim names one) each of its two sides in at most `alpha`. Measured at
alpha 0.01: 0 of 400 families (the old rule, "appears" whenever one side has no run with the
item: 82%), 0 of 400 at q = 0.05 and 10 runs a side (old: 100%), one item 0.13% "appears or
more" and 0.19% "vanishes or fewer" in 1,600 (old: 10% "appears or more"; 23.5% at q = 0.05,
n = 10, each way).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...core.multiple import holm as holm_adjusted
from ...core.stats import compare_samples, share_test
from ...core.verdicts import verdict_producer
from .machine import TransitionGraph
from .runs import RunLogs

LOSS_ITEMS = {
    "QUIC": ("declared_lost", "spurious", "loss_events", "by_packet_threshold", "by_time_threshold"),
    "TCP": ("declared_lost", "spurious", "loss_events", "dsack_spurious"),
}

COLUMNS = [
    "item",
    "kind",
    "mean_a",
    "mean_b",
    "n_a",
    "n_b",
    "runs_a",
    "runs_b",
    "p_presence",
    "p_counts",
    "test",
    "p",
    "presence_change",
    "towards",
    "p_adjusted",
    "status",
    "significant",
    "direction",
]

FISHER, MANN_WHITNEY = "fisher", "mannwhitney"


def per_run_counts(runs: list[RunLogs]) -> pd.DataFrame:
    """One row per run: `a->b` transition counts, `enter:X` entries, `loss:...` counts."""
    traces = [r.trace() for r in runs]
    g = TransitionGraph.infer(traces)
    entries = g.entries_per_run.drop(columns=["Init"], errors="ignore").add_prefix("enter:")
    losses = pd.DataFrame(
        [{f"loss:{k}": r.losses().as_dict().get(k) for k in LOSS_ITEMS.get(r.protocol, ())} for r in runs],
        index=[r.run_id for r in runs],
    )
    return pd.concat([g.transitions_per_run, entries, losses], axis=1)


@dataclass
class StateDiff:
    protocol: str
    label_a: str
    label_b: str
    n_a: int
    n_b: int
    alpha: float
    rows: pd.DataFrame  # COLUMNS: one row per item, the verdict in `status`
    holm: bool = True  # p_adjusted is Holm's over the items (False: the raw p)
    # runs of the protocol whose log recorded no state at all (left out of n_a / n_b)
    unrecorded_a: int = 0
    unrecorded_b: int = 0

    @property
    def measured(self) -> bool:
        """Both sides have runs with states: without, there is nothing to diff, and an
        empty side would read as every item vanishing (or appearing)."""
        return self.n_a > 0 and self.n_b > 0

    def not_measured_text(self) -> str:
        """Why there is no diff, in words; "" when there is one."""
        missing = [
            f"{label} has no {self.protocol} run with states ({gone} logs without any)"
            if gone
            else f"{label} has no {self.protocol} run with a log"
            for label, n, gone in (
                (self.label_a, self.n_a, self.unrecorded_a),
                (self.label_b, self.n_b, self.unrecorded_b),
            )
            if n == 0
        ]
        return f"not measured: {'; '.join(missing)}" if missing else ""

    def significant(self) -> pd.DataFrame:
        return self.rows[self.rows.status != "same"]

    def row(self, item: str) -> dict:
        r = self.rows[self.rows["item"] == item]
        return r.iloc[0].to_dict() if len(r) else {}


def _kind(item: str) -> str:
    return "entries" if item.startswith("enter:") else "losses" if item.startswith("loss:") else "transition"


@verdict_producer(
    "states.diff", "a state-machine item appears / vanishes / is more or less frequent between two sets of runs"
)
def compare(
    runs_a: list[RunLogs],
    runs_b: list[RunLogs],
    protocol: str,
    *,
    label_a: str = "A",
    label_b: str = "B",
    alpha: float = 0.01,
    holm: bool = True,
) -> StateDiff:
    side_a = [r for r in runs_a if r.protocol == protocol]
    side_b = [r for r in runs_b if r.protocol == protocol]
    # a log without states is missing data, never a run in which every transition vanished
    rec_a, rec_b = ([r for r in side if r.trace().recorded()] for side in (side_a, side_b))
    a, b = per_run_counts(rec_a), per_run_counts(rec_b)
    return StateDiff(
        protocol=protocol,
        label_a=label_a,
        label_b=label_b,
        n_a=len(a),
        n_b=len(b),
        alpha=alpha,
        rows=diff_counts(a, b, alpha=alpha, holm=holm) if len(a) and len(b) else pd.DataFrame(columns=COLUMNS),
        holm=holm,
        unrecorded_a=len(side_a) - len(rec_a),
        unrecorded_b=len(side_b) - len(rec_b),
    )


def diff_counts(a: pd.DataFrame, b: pd.DataFrame, *, alpha: float = 0.01, holm: bool = True) -> pd.DataFrame:
    """The diff of two per-run count frames (per_run_counts': one row per run, one column per
    item): one row per item with its decisive test, p, Holm-adjusted p and status."""
    items = list(dict.fromkeys(list(a.columns) + list(b.columns)))
    if not items:
        return pd.DataFrame(columns=COLUMNS)
    ca, cb = _counts(a, items), _counts(b, items)
    df = pd.DataFrame([_item_row(item, ca[:, j], cb[:, j], alpha) for j, item in enumerate(items)])
    p = df["p"].to_numpy(float)
    df["p_adjusted"] = holm_adjusted(p) if holm else p
    df["status"] = _status(df, alpha)
    df["significant"] = df["status"] != "same"
    df["direction"] = _direction(df)
    order = {"appears": 0, "vanishes": 0, "more": 1, "fewer": 1, "same": 2}
    return df.sort_values(
        by=["status", "p"], key=lambda s: s.map(order) if s.name == "status" else s, ignore_index=True
    )[COLUMNS]


def _counts(frame: pd.DataFrame, items: list[str]) -> np.ndarray:
    """(runs, items) counts, nan where unknown: a run that never took a transition took it 0
    times; an unknown loss count stays unknown (left out of that item's test)."""
    x = frame.reindex(columns=items).apply(pd.to_numeric, errors="coerce").to_numpy(float, copy=True)
    counted = np.array([_kind(item) != "losses" for item in items], dtype=bool)
    x[:, counted] = np.nan_to_num(x[:, counted], nan=0.0)
    return x


def _item_row(item: str, xa: np.ndarray, xb: np.ndarray, alpha: float) -> dict:
    xa, xb = xa[~np.isnan(xa)], xb[~np.isnan(xb)]
    ra, rb = int((xa > 0).sum()), int((xb > 0).sum())
    p_pres = share_test(ra, len(xa), rb, len(xb))
    # one side never has it, the other does: Fisher on presence decides and its p is the one
    # shown; Mann-Whitney is not run (its ranks would say nothing but how many runs have it)
    presence_change = bool(len(xa) and len(xb) and (ra == 0) != (rb == 0))
    p_cnt, towards = math.nan, 0
    if presence_change:
        towards = 1 if ra == 0 else -1
    elif len(xa) and len(xb):
        if np.ptp(np.concatenate([xa, xb])) > 0:
            c = compare_samples(xa, xb, a_label="A", b_label="B", metric="count", test="mannwhitney", alpha=alpha)
            p_cnt, towards = c.p_value, -c.direction  # +1: B above A
        else:
            p_cnt = 1.0  # every run of both sides has the same count: nothing moved
    return {
        "item": item,
        "kind": _kind(item),
        "mean_a": float(xa.mean()) if len(xa) else math.nan,
        "mean_b": float(xb.mean()) if len(xb) else math.nan,
        "n_a": len(xa),
        "n_b": len(xb),
        "runs_a": ra,
        "runs_b": rb,
        "p_presence": p_pres,
        "p_counts": p_cnt,
        "test": FISHER if presence_change else MANN_WHITNEY,
        "p": p_pres if presence_change else p_cnt,
        "presence_change": presence_change,
        "towards": towards,
    }


def _status(df: pd.DataFrame, alpha: float) -> np.ndarray:
    """The decisive test's verdict, in its direction (Fisher's presence or U's ranks, not the
    means'); "same" unless it is significant."""
    towards, presence = df["towards"].to_numpy(), df["presence_change"].to_numpy(bool)
    up = np.where(presence, "appears", "more")
    down = np.where(presence, "vanishes", "fewer")
    significant = (df["p_adjusted"].to_numpy(float) < alpha) & (towards != 0)  # nan < alpha is False
    return np.where(significant, np.where(towards > 0, up, down), "same")


def _direction(df: pd.DataFrame) -> np.ndarray:
    """Which way the data moved, significant or not: "appears" / "vanishes" when one side
    never has the item, else the means' way (for display beside `status`)."""
    mean_a, mean_b = df["mean_a"].to_numpy(float), df["mean_b"].to_numpy(float)
    means = np.where(mean_b > mean_a, "more", np.where(mean_b < mean_a, "fewer", "same"))
    return np.where(
        df["presence_change"].to_numpy(bool), np.where(df["runs_a"].to_numpy() == 0, "appears", "vanishes"), means
    )


def direction_text(r, label_a: str = "A", label_b: str = "B") -> str:
    """A row's `direction` in words, with its runs: "only in B, 1 of 10 runs", "more in B"."""
    if r.direction == "appears":
        return f"only in {label_b}, {r.runs_b} of {r.n_b} runs"
    if r.direction == "vanishes":
        return f"only in {label_a}, {r.runs_a} of {r.n_a} runs"
    if r.direction in ("more", "fewer"):
        return f"{r.direction} in {label_b}"
    return "-"


def protocols_in(runs: list[RunLogs]) -> list[str]:
    return sorted({r.protocol for r in runs}, key=lambda p: (p != "QUIC", p))
