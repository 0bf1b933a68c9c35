"""Per bandwidth pattern: QoE of QUIC-enabled sessions against TCP-only ones, and per
session pair the paper's test (Chaudhary §5: TCP "better or the same" in 61% of pairs).

Every test is core.stats' (one two-sample comparison for the whole project). A pair is the
QUIC-enabled and the TCP-only session of the same cell and round (never of another cell
that shares the pattern's link name). The paper compares a pair by Welch's t-test on the two
sessions' temporal QoE (the series `qoe_t` a kind records, e.g. the video kind); "the same" is its reading of a test that
is not significant, so we call that outcome what it is: "not significant". A pair without
temporal samples, or with a value that is not a number, is "not testable" and counted
apart, never on either side.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from ...core.stats import Completion, Verdict, compare_samples

PAIR_KEYS = ["cell_id", "round"]
TEMPORAL_QOE = "qoe_t"  # the series a kind records for it (the video kind: R_t - |dR| - 4.3 stalled_t)
QUIC_BETTER, TCP_BETTER, NOT_SIGNIFICANT = "quic_better", "tcp_better", "not_significant"
NOT_TESTABLE = "not testable"


def temporal_samples(series: pd.DataFrame) -> dict[str, np.ndarray]:
    """run_id -> the run's temporal QoE in time order, from the store's series rows."""
    rows = series[series["name"] == TEMPORAL_QOE].sort_values(["run_id", "t_s"])
    return {run_id: g["value"].to_numpy(dtype=float) for run_id, g in rows.groupby("run_id", sort=False)}


def pair_verdict(quic, tcp, *, alpha: float = 0.05, higher_is_better: bool = True) -> tuple[str, str]:
    """One session pair -> (outcome, why when not testable). Each side: the session's
    samples (its temporal QoE)."""
    q = np.atleast_1d(np.asarray(quic, dtype=float))
    t = np.atleast_1d(np.asarray(tcp, dtype=float))
    if len(q) < 2 or len(t) < 2:
        return NOT_TESTABLE, "a session has fewer than 2 samples (its temporal QoE is needed, not one number)"
    c = compare_samples(q, t, a_label="quic", b_label="tcp", alpha=alpha, test="welch",
                        lower_is_better=not higher_is_better)
    if c.verdict is Verdict.A_FASTER:
        return QUIC_BETTER, ""
    if c.verdict is Verdict.B_FASTER:
        return TCP_BETTER, ""
    if c.verdict is Verdict.INCONCLUSIVE:
        return NOT_SIGNIFICANT, ""
    return NOT_TESTABLE, c.reason


def pair_verdicts(quic: Sequence, tcp: Sequence, *, alpha: float = 0.05,
                  higher_is_better: bool = True) -> list[str]:
    """pair_verdict's outcome for each pair."""
    return [pair_verdict(q, t, alpha=alpha, higher_is_better=higher_is_better)[0]
            for q, t in zip(quic, tcp, strict=True)]


def tcp_better_or_same_share(verdicts: Sequence[str]) -> tuple[int, int]:
    """(pairs where TCP was better or QUIC not significantly better, testable pairs)."""
    testable = [v for v in verdicts if v != NOT_TESTABLE]
    return sum(v in (TCP_BETTER, NOT_SIGNIFICANT) for v in testable), len(testable)


def session_pairs(sessions: pd.DataFrame, quic_arm: str, tcp_arm: str) -> pd.DataFrame:
    """QUIC-enabled and TCP-only sessions of the same cell and round, one row per pair
    (columns suffixed _q and _t)."""
    q = sessions[sessions["arm"] == quic_arm]
    t = sessions[sessions["arm"] == tcp_arm]
    return q.merge(t, on=PAIR_KEYS, suffixes=("_q", "_t"))


def compare_patterns(sessions: pd.DataFrame, *, quic_arm: str = "h3", tcp_arm: str = "h2",
                     metric: str = "qoe", higher_is_better: bool = True, alpha: float = 0.05,
                     samples: str | None = None,
                     completion: dict[tuple[str, str], Completion] | None = None) -> pd.DataFrame:
    """`sessions`: one row per session with `pattern`, `arm`, `cell_id`, `round` and the
    `metric` (and a `samples` column of arrays for the pairwise test). Per pattern: n and
    mean per side (sessions without the metric counted apart), the core's comparison over
    sessions (Welch), its verdict (survivorship when `completion` — (pattern, arm) ->
    Completion — says the arms finished at different rates), the pairs, and the share of
    testable pairs where TCP did better or the same."""
    rows = []
    for pattern, g in sessions.groupby("pattern", sort=True):
        q, t = g[g["arm"] == quic_arm], g[g["arm"] == tcp_arm]
        a, b = q[metric].to_numpy(float), t[metric].to_numpy(float)
        missing = int(np.isnan(a).sum() + np.isnan(b).sum())
        done = completion or {}
        c = compare_samples(a[~np.isnan(a)], b[~np.isnan(b)], a_label="QUIC", b_label="TCP",
                            cell_id=str(pattern), alpha=alpha, test="welch", metric=metric,
                            lower_is_better=not higher_is_better, better_word="better",
                            completion_a=done.get((pattern, quic_arm)), completion_b=done.get((pattern, tcp_arm)))
        pairs = session_pairs(g, quic_arm, tcp_arm)
        col = samples if samples is not None else metric
        verdicts = pair_verdicts(list(pairs[f"{col}_q"]), list(pairs[f"{col}_t"]), alpha=alpha,
                                 higher_is_better=higher_is_better) if len(pairs) else []
        k, testable = tcp_better_or_same_share(verdicts)
        rows.append({
            "pattern": pattern, "n_quic": c.a.n, "n_tcp": c.b.n, "n_missing": missing,
            "completion_quic": str(c.completion_a or ""), "completion_tcp": str(c.completion_b or ""),
            "mean_quic": c.a.mean, "mean_tcp": c.b.mean, "p_welch": c.p_value,
            "verdict": c.verdict_text,
            "pairs": len(verdicts), "pairs_testable": testable,
            "tcp_better_or_same_share": k / testable if testable else float("nan"),
        })
    return pd.DataFrame(rows)
