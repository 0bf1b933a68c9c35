"""Per bandwidth pattern: QoE of QUIC-enabled sessions against TCP-only ones, and per
session pair a test that can say "TCP better or the same" (Chaudhary §5: in 61% of pairs).

A pair is the QUIC-enabled and the TCP-only session of the same cell and round (never of
another cell that shares the pattern's link name). The paper compared a pair by Welch's
t-test on the two sessions' temporal QoE (the series `qoe_t` a kind records, e.g. the video
kind) and read "not significant" as "the same". Both halves of that mislead:

- temporal QoE is strongly autocorrelated (a quality level is held for many seconds, a stall
  lasts several), so its seconds are not independent samples: two sessions of the same
  process are "significantly" different in about 64% of pairs by Welch on their seconds
  (simulated below);
- "not significant" is no evidence of sameness: the less a pair can tell, the more pairs
  would count as "the same".

The pair test here: each session's series is cut into `BLOCKS` contiguous blocks and a
session is summarised by its block means (batch means: with a fixed, small number of
blocks the t statistic stays close to its t distribution under autocorrelation, where a
per-second test does not). The difference of the two sessions' means, TCP - QUIC in the
better direction, gets Welch's interval on the block means (core.stats.compare_samples) at
level 1 - 2 alpha, so each of its ends is a one-sided test at `alpha`:

- `tcp_better`: its lower end above 0 (TCP better, shown);
- `same`: its lower end above -margin, not above 0 (TCP not worse than QUIC by more than
  `margin` QoE units: shown by a non-inferiority test, never by a test that failed);
- `quic_better`: its upper end below -margin (QUIC better by more than the margin, shown);
- `undecided`: none of these (the pair cannot tell);
- `not testable`: fewer than 2 samples per block, a value that is not a number, or no
  spread at all, counted apart, never on either side.

"TCP better or the same" (`TCP_AS_GOOD`) is `tcp_better` or `same`: each is wrong (the
QUIC process better by the margin or more) in at most `alpha` of pairs, and `quic_better`
is wrong (TCP's process within the margin or better) in at most `alpha`.

Calibration (tests/calibration/test_reproduce_rules.py, and the simulation behind BLOCKS):
temporal QoE of 20-120 s sessions built like the video kind's (a bitrate ladder of 0.1-2
Mbit/s walked up and down at 2 s segments from the lowest rung, switch penalties, stalls
of geometric length at -4.3 per second). Identical processes: Welch on the seconds calls a
pair different in 56-65% of pairs at 0.05; a one-sided block test at 0.05 errs in 4-5%
of pairs with 3 blocks, 7-9% with 4, 9-13% with 5 (20,000 pairs each), so 3. The price is power: a 20-30 s stall
of the QUIC session in 60 s (a fallback behind a 30 s idle timeout) is shown "TCP better"
in about 1 pair in 9; one pair of sessions says little, and the claims that read pairs
stay inconclusive unless many pairs agree.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from ...core.stats import Completion, Verdict, compare_samples
from ...core.verdicts import verdict_producer

PAIR_KEYS = ["cell_id", "round"]
TEMPORAL_QOE = "qoe_t"  # the series a kind records for it (the video kind: R_t - |dR| - 4.3 stalled_t)
TCP_BETTER, SAME, QUIC_BETTER, UNDECIDED = "tcp_better", "same", "quic_better", "undecided"
NOT_TESTABLE = "not testable"
TCP_AS_GOOD = (TCP_BETTER, SAME)  # the paper's "TCP better or the same", each shown by a test
PAIR_OUTCOMES = (TCP_BETTER, SAME, UNDECIDED, QUIC_BETTER, NOT_TESTABLE)
BLOCKS = 3  # blocks per session (module docstring: more blocks err more often)
# QoE units (Mbit/s of the bitrate ladder) within which TCP counts as "the same": the step
# between the 240p and 360p rungs, or one second of stall in 17
MARGIN = 0.25


def temporal_samples(series: pd.DataFrame) -> dict[str, np.ndarray]:
    """run_id -> the run's temporal QoE in time order, from the store's series rows."""
    rows = series[series["name"] == TEMPORAL_QOE].sort_values(["run_id", "t_s"])
    return {run_id: g["value"].to_numpy(dtype=float) for run_id, g in rows.groupby("run_id", sort=False)}


def block_means(x: np.ndarray, blocks: int = BLOCKS) -> np.ndarray:
    """The means of `blocks` contiguous blocks of nearly equal length."""
    return np.array([b.mean() for b in np.array_split(x, blocks)])


@verdict_producer(
    "fallback.pair_verdict",
    "one session pair: TCP better / the same (within a margin) / QUIC better, on block means of the temporal QoE",
)
def pair_verdict(
    quic, tcp, *, alpha: float = 0.05, higher_is_better: bool = True, margin: float = MARGIN
) -> tuple[str, str]:
    """One session pair -> (outcome, why when not testable). Each side: the session's
    temporal QoE in time order. See the module's docstring for the outcomes."""
    q = np.atleast_1d(np.asarray(quic, dtype=float))
    t = np.atleast_1d(np.asarray(tcp, dtype=float))
    if min(len(q), len(t)) < 2 * BLOCKS:
        return NOT_TESTABLE, (
            f"a session has fewer than {2 * BLOCKS} samples (its temporal QoE is needed, {BLOCKS} blocks of at least 2)"
        )
    if not (np.all(np.isfinite(q)) and np.all(np.isfinite(t))):
        return NOT_TESTABLE, "a temporal QoE value is not a number"
    # TCP's advantage: A = TCP, B = QUIC, in the direction where larger is better
    sign = 1.0 if higher_is_better else -1.0
    c = compare_samples(
        sign * block_means(t),
        sign * block_means(q),
        a_label="tcp",
        b_label="quic",
        metric="qoe",
        alpha=alpha,
        test="welch",
        confidence=1 - 2 * alpha,
        lower_is_better=False,
    )
    if c.verdict in (Verdict.INSUFFICIENT, Verdict.NOT_TESTABLE) or np.isnan(c.diff_low):
        return NOT_TESTABLE, c.reason or "no spread in either session's block means"
    if c.diff_low > 0:
        return TCP_BETTER, ""
    if c.diff_low > -margin:
        return SAME, ""
    if c.diff_high < -margin:
        return QUIC_BETTER, ""
    return UNDECIDED, ""


def pair_verdicts(
    quic: Sequence, tcp: Sequence, *, alpha: float = 0.05, higher_is_better: bool = True, margin: float = MARGIN
) -> list[str]:
    """pair_verdict's outcome for each pair."""
    return [
        pair_verdict(q, t, alpha=alpha, higher_is_better=higher_is_better, margin=margin)[0]
        for q, t in zip(quic, tcp, strict=True)
    ]


def tcp_better_or_same_share(verdicts: Sequence[str]) -> tuple[int, int]:
    """(pairs shown TCP better or the same, testable pairs)."""
    testable = [v for v in verdicts if v != NOT_TESTABLE]
    return sum(v in TCP_AS_GOOD for v in testable), len(testable)


def session_pairs(sessions: pd.DataFrame, quic_arm: str, tcp_arm: str) -> pd.DataFrame:
    """QUIC-enabled and TCP-only sessions of the same cell and round, one row per pair
    (columns suffixed _q and _t)."""
    q = sessions[sessions["arm"] == quic_arm]
    t = sessions[sessions["arm"] == tcp_arm]
    return q.merge(t, on=PAIR_KEYS, suffixes=("_q", "_t"))


def compare_patterns(
    sessions: pd.DataFrame,
    *,
    quic_arm: str = "h3",
    tcp_arm: str = "h2",
    metric: str = "qoe",
    higher_is_better: bool = True,
    alpha: float = 0.05,
    samples: str | None = None,
    margin: float = MARGIN,
    completion: dict[tuple[str, str], Completion] | None = None,
) -> pd.DataFrame:
    """`sessions`: one row per session with `pattern`, `arm`, `cell_id`, `round` and the
    `metric` (and a `samples` column of arrays for the pairwise test). Per pattern: n and
    mean per side (sessions without the metric counted apart), the core's comparison over
    sessions (Welch), its verdict (survivorship when `completion` — (pattern, arm) ->
    Completion — says the arms finished at different rates), the pairs, and the share of
    testable pairs shown TCP better or the same."""
    rows = []
    for pattern, g in sessions.groupby("pattern", sort=True):
        q, t = g[g["arm"] == quic_arm], g[g["arm"] == tcp_arm]
        a, b = q[metric].to_numpy(float), t[metric].to_numpy(float)
        missing = int(np.isnan(a).sum() + np.isnan(b).sum())
        done = completion or {}
        c = compare_samples(
            a[~np.isnan(a)],
            b[~np.isnan(b)],
            a_label="QUIC",
            b_label="TCP",
            cell_id=str(pattern),
            alpha=alpha,
            test="welch",
            metric=metric,
            lower_is_better=not higher_is_better,
            better_word="better",
            completion_a=done.get((pattern, quic_arm)),
            completion_b=done.get((pattern, tcp_arm)),
        )
        pairs = session_pairs(g, quic_arm, tcp_arm)
        col = samples if samples is not None else metric
        verdicts = (
            pair_verdicts(
                list(pairs[f"{col}_q"]),
                list(pairs[f"{col}_t"]),
                alpha=alpha,
                higher_is_better=higher_is_better,
                margin=margin,
            )
            if len(pairs)
            else []
        )
        k, testable = tcp_better_or_same_share(verdicts)
        rows.append(
            {
                "pattern": pattern,
                "n_quic": c.a.n,
                "n_tcp": c.b.n,
                "n_missing": missing,
                "completion_quic": str(c.completion_a or ""),
                "completion_tcp": str(c.completion_b or ""),
                "mean_quic": c.a.mean,
                "mean_tcp": c.b.mean,
                "p_welch": c.p_value,
                "verdict": c.verdict_text,
                "pairs": len(verdicts),
                "pairs_testable": testable,
                "tcp_better_or_same_share": k / testable if testable else float("nan"),
            }
        )
    return pd.DataFrame(rows)
