"""Per bandwidth pattern: QoE of QUIC-enabled sessions against TCP-only ones (Welch), and
the share of session pairs where TCP did better or the same (Chaudhary §5: 61%)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from scipy import stats


def _welch(a: np.ndarray, b: np.ndarray) -> float:
    if len(a) < 2 or len(b) < 2 or (np.ptp(a) == 0 and np.ptp(b) == 0):
        return float("nan")
    with warnings.catch_warnings():  # nearly equal samples: scipy warns, p is still defined
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(stats.ttest_ind(a, b, equal_var=False).pvalue)


def pair_verdicts(quic: list, tcp: list, *, alpha: float = 0.05, higher_is_better: bool = True) -> list[str]:
    """One verdict per session pair: "tcp_better", "same" or "quic_better". Each side is a
    sample array (e.g. the session's per-second QoE; Welch at `alpha`, "same" when not
    significant, as the paper's pairwise tests) or a scalar (compared directly; equal =
    "same")."""
    out = []
    for q, t in zip(quic, tcp, strict=True):
        q, t = np.atleast_1d(np.asarray(q, float)), np.atleast_1d(np.asarray(t, float))
        sign = 1 if higher_is_better else -1
        diff = sign * (np.mean(t) - np.mean(q))
        if len(q) > 1 and len(t) > 1:
            p = _welch(q, t)
            significant = not np.isnan(p) and p < alpha
        else:
            significant = diff != 0
        out.append("same" if not significant else ("tcp_better" if diff > 0 else "quic_better"))
    return out


def compare_patterns(sessions: pd.DataFrame, *, quic_arm: str = "h3", tcp_arm: str = "h2",
                     metric: str = "qoe", higher_is_better: bool = True, alpha: float = 0.05,
                     samples: str | None = None) -> pd.DataFrame:
    """`sessions`: one row per session with `pattern`, `arm`, `round` and the `metric`
    (optionally a `samples` column of arrays for pairwise Welch). Per pattern: n and mean
    per side, Welch p over sessions, verdict, number of pairs (same pattern and round) and
    the share of pairs where TCP is better or the same."""
    rows = []
    for pattern, g in sessions.groupby("pattern", sort=True):
        q = g[g["arm"] == quic_arm]
        t = g[g["arm"] == tcp_arm]
        a, b = q[metric].dropna().to_numpy(float), t[metric].dropna().to_numpy(float)
        p = _welch(a, b)
        better = (np.mean(b) > np.mean(a)) == higher_is_better if len(a) and len(b) else None
        verdict = ("inconclusive" if np.isnan(p) or p >= alpha
                   else ("TCP better" if better else "QUIC better"))
        pairs = q.merge(t, on="round", suffixes=("_q", "_t"))
        col = samples if samples is not None else metric
        verdicts = pair_verdicts(list(pairs[f"{col}_q"]), list(pairs[f"{col}_t"]), alpha=alpha,
                                 higher_is_better=higher_is_better) if len(pairs) else []
        rows.append({
            "pattern": pattern, "n_quic": len(a), "n_tcp": len(b),
            "mean_quic": float(np.mean(a)) if len(a) else float("nan"),
            "mean_tcp": float(np.mean(b)) if len(b) else float("nan"),
            "p_welch": p, "verdict": verdict, "pairs": len(verdicts),
            "tcp_better_or_same_share": (sum(v != "quic_better" for v in verdicts) / len(verdicts)
                                         if verdicts else float("nan")),
        })
    return pd.DataFrame(rows)
