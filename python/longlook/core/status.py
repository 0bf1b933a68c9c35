"""How a run ended, which runs are settled (no more attempts), and which runs count.

One definition for every kind, client and analysis: a run counts for the statistics only
when it ended ok, over the protocol it asked for (where it asked for one), with its path
audit clean (unless the scenario keeps flagged runs), and with the metric measured.
"""

from __future__ import annotations

from typing import Iterable, Literal

import pandas as pd

Status = Literal["ok", "failed", "timeout", "protocol_mismatch"]
STATUSES: tuple[str, ...] = ("ok", "failed", "timeout", "protocol_mismatch")
# retrying will not change these: the run worked, or the network decided the protocol
SETTLED: tuple[str, ...] = ("ok", "protocol_mismatch")


def settles(status: str, flagged: bool, *, retry_flagged: bool) -> bool:
    """Does this run end its (round, arm)? A run whose path audit failed measured a path
    the scenario did not ask for; with `retry_flagged` it is kept (excluded, shown) and the
    round's arm is measured again within the same `retries` budget as a failed run."""
    return status in SETTLED and not (retry_flagged and status == "ok" and bool(flagged))


def classify(
    *,
    ok: bool,
    requested: str | None,
    negotiated: str | None,
    timed_out: bool = False,
    protocol_unavailable: bool = False,
) -> Status:
    """ok only when the run succeeded over the protocol asked for; another protocol is a
    protocol_mismatch (never counted), whatever `ok` says."""
    if timed_out:
        return "timeout"
    if protocol_unavailable or (negotiated is not None and requested is not None and negotiated != requested):
        return "protocol_mismatch"
    if ok and (requested is None or negotiated == requested):
        return "ok"
    return "failed"


def protocol_verified(runs: pd.DataFrame) -> pd.Series:
    req, neg = runs["protocol_requested"], runs["protocol_negotiated"]
    return req.isna() | (neg == req)


def counted_mask(
    runs: pd.DataFrame, metric: str | None = None, *, exclude_flagged: bool = True, metric_free_arms: Iterable[str] = ()
) -> pd.Series:
    """`metric_free_arms`: arms whose runs measure something else than `metric` (a kind's
    Kind.metric_free_arms): they count by status and audit alone."""
    ok = (runs["status"] == "ok") & protocol_verified(runs)
    if exclude_flagged and "audit_flagged" in runs:
        ok &= ~runs["audit_flagged"].fillna(False).astype(bool)
    if metric is not None:
        has = runs[metric].notna() if metric in runs else pd.Series(False, index=runs.index)
        free = set(metric_free_arms)
        ok &= has | runs["arm"].isin(free) if free and "arm" in runs else has
    return ok


def counted_runs(runs: pd.DataFrame, metric: str | None = None, *, exclude_flagged: bool = True) -> pd.DataFrame:
    """The runs that count (see the module's docstring)."""
    if runs.empty:
        return runs
    return runs[counted_mask(runs, metric, exclude_flagged=exclude_flagged)]


def exclusion_reason(r: pd.Series, metric: str | None = None, *, exclude_flagged: bool = True) -> str:
    """Why a run does not count, in words for the report."""
    req, neg = r.get("protocol_requested"), r.get("protocol_negotiated")
    if r["status"] == "protocol_mismatch" or (r["status"] == "ok" and isinstance(req, str) and neg != req):
        return f"asked for {req}, got {neg if isinstance(neg, str) else 'nothing'}"
    if r["status"] == "ok" and exclude_flagged and bool(r.get("audit_flagged") or False):
        return f"path not as configured: {r.get('audit_reasons')}"
    if r["status"] == "ok":
        return f"no {metric}" if metric else "no measurement"
    err = r.get("error")
    text = err if isinstance(err, str) and err else r["status"]
    phase = r.get("failure_phase")
    return f"{phase}: {text}" if isinstance(phase, str) and phase else text


def completion(
    runs: pd.DataFrame,
    metric: str | None = None,
    *,
    exclude_flagged: bool = True,
    metric_free_arms: Iterable[str] = (),
    failures_as_outcomes: bool = False,
) -> pd.DataFrame:
    """Per (cell, arm): the rounds tried, those that ended with a counted run, and the share.
    Where a protocol cannot finish under a condition, this is the result, not its PLT.
    `failures_as_outcomes` (`[statistics] failures = "outcome"`): a round whose last attempt
    failed or timed out counts too, as core.stats.with_failures_as_outcomes gives it a value."""
    cols = ["cell_id", "arm", "rounds", "counted", "share"]
    if runs.empty:
        return pd.DataFrame(columns=cols)
    mask = counted_mask(runs, metric, exclude_flagged=exclude_flagged, metric_free_arms=metric_free_arms)
    if failures_as_outcomes:
        mask = mask.copy()
        mask[failed_rounds(runs, runs[mask]).index] = True
    r = runs.assign(_counted=mask)
    per_round = r.groupby(["cell_id", "arm", "round"])["_counted"].any().reset_index()
    out = per_round.groupby(["cell_id", "arm"])["_counted"].agg(rounds="size", counted="sum").reset_index()
    out["counted"] = out["counted"].astype(int)
    out["share"] = out["counted"] / out["rounds"]
    return out[cols]


def failed_rounds(runs: pd.DataFrame, good: pd.DataFrame) -> pd.DataFrame:
    """The last attempt of every (cell, arm, round) that has no run in `good` (the counted
    ones) and whose last attempt failed or timed out: a round the arm lost, not one a flag or
    a protocol mismatch left unmeasured. Rows keep their index in `runs`."""
    keys = ["cell_id", "arm", "round"]
    last = (runs.sort_values("attempt") if "attempt" in runs else runs).drop_duplicates(keys, keep="last")
    have = pd.MultiIndex.from_frame(good[keys]) if not good.empty else pd.MultiIndex.from_tuples([], names=keys)
    lost = last["status"].isin(["failed", "timeout"]) & ~pd.MultiIndex.from_frame(last[keys]).isin(have)
    return last[lost]


def shortfalls(done: pd.DataFrame, cell_arms: dict[str, list[str]], need: int) -> list[str]:
    """Cells where an arm ended with fewer counted runs than `need`, in words ("cell: h2 has
    1 of 5 rounds counted"); an arm never tried counts as 0."""
    have = {
        (c, a): (int(k), int(n)) for c, a, n, k in done[["cell_id", "arm", "rounds", "counted"]].itertuples(index=False)
    }
    short = []
    for cell, arms in cell_arms.items():
        lacking = [
            f"{a} has {have.get((cell, a), (0, 0))[0]} of {have.get((cell, a), (0, 0))[1]} rounds counted"
            for a in arms
            if have.get((cell, a), (0, 0))[0] < need
        ]
        if lacking:
            short.append(f"{cell}: " + ", ".join(lacking))
    return short
