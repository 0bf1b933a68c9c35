"""The fallback analysis of an experiment directory: sessions from the store's series
F, B and S (any kind that records them; the video kind records B and S), patterns from the
cells' link names, QoE from a metric, outputs written beside the store."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ...core.stats import Completion
from ...core.store import Store
from ...errors import LonglookError, check_range
from .qoe import PAIR_OUTCOMES, TCP_AS_GOOD, compare_patterns, pair_verdict, session_pairs, temporal_samples
from .session import CAUSES, analyze_sessions, summarize

SETTLED = ("ok", "protocol_mismatch")  # a QUIC-enabled session that fell back is data here


@dataclass
class FallbackAnalysis:
    sessions: pd.DataFrame  # one row per QUIC-enabled session: SessionResult + pattern, round
    patterns: pd.DataFrame  # compare_patterns
    summary: dict  # summarize() over all sessions, and over those where TCP did better or same

    def write(self, out: Path) -> list[Path]:
        from .figures import fig12

        out.mkdir(parents=True, exist_ok=True)
        paths = [
            out / "fallback-sessions.csv",
            out / "fallback-patterns.csv",
            out / "fallback-summary.json",
            out / "fallback-fig12.svg",
        ]
        self.sessions.to_csv(paths[0], index=False)
        self.patterns.to_csv(paths[1], index=False)
        paths[2].write_text(json.dumps(self.summary, indent=2, default=float) + "\n")
        fig12(self.sessions, self.summary["all"]["alpha"]).savefig(paths[3], bbox_inches="tight")
        return paths


def _completion(all_runs: pd.DataFrame, kept: pd.DataFrame, metric: str) -> dict:
    """(pattern, arm) -> Completion: the (cell, round)s whose session settled, passed the
    audit and has the metric, of those tried. A dash.js session that did not reach its end
    is "failed": when one arm loses more sessions than the other, its survivors are not a
    fair sample (core.stats: "inconclusive: survivorship")."""
    have = kept[kept[metric].notna()] if metric in kept else kept.iloc[0:0]
    tried = all_runs.groupby(["pattern", "arm"])[["cell_id", "round"]].apply(lambda g: len(g.drop_duplicates()))
    done = (
        have.groupby(["pattern", "arm"])[["cell_id", "round"]].apply(lambda g: len(g.drop_duplicates()))
        if len(have)
        else pd.Series(dtype=int)
    )
    return {k: Completion(int(done.get(k, 0)), int(n)) for k, n in tried.items()}


def analyze_store(
    directory: str | Path,
    *,
    quic_arm: str | None = None,
    tcp_arm: str = "h2",
    metric: str = "qoe",
    higher_is_better: bool = True,
    alpha: float = 0.05,
    include_flagged: bool = False,
    step_s: float = 1.0,
    cause: str = "bytes",
    max_lag_s: float | None = None,
) -> FallbackAnalysis:
    """F is summed per grid step of `step_s` (bytes), B and S averaged (levels). `cause`:
    the Granger cause, bytes over TCP per step or the paper's share T / (T + Q) of bytes
    over TCP so far (session.CAUSES); `max_lag_s`: the widest lag window the criterion
    chooses among (the paper's lags reach 250 s; default: granger.default_max_lag steps). Runs count when settled
    (`ok`, or `protocol_mismatch`: a QUIC-enabled session that used TCP) and not flagged by
    the audit (unless `include_flagged`). `quic_arm` None: the racing client's arm if the
    scenario has one, else "h3". Session pairs are compared on their temporal QoE
    (series `qoe_t`, qoe.pair_verdict); a session without `metric` is counted apart
    (`missing_metric`), never silently on either side. The Granger shares are the sessions'
    calibrated verdicts (session.granger_verdicts: shift-null p, Holm over B and S), over all
    sessions and over those shown TCP better or the same (qoe.TCP_AS_GOOD)."""
    check_range("--alpha", alpha, 0, 1, low_open=True, high_open=True, hint="a significance level, e.g. 0.01")
    check_range("--step", step_s, 0.1, 600, hint="seconds per grid step, e.g. 1 or 5")
    if cause not in CAUSES:
        raise LonglookError(f"--cause {cause}: not a cause", hint=f"one of {', '.join(CAUSES)}")
    max_lag = None
    if max_lag_s is not None:
        check_range("--max-lag", max_lag_s, step_s, 3600, hint=f"seconds, at least one step ({step_s:g} s)")
        max_lag = int(round(max_lag_s / step_s))
    with Store.open(directory, read_only=True) as store:
        arms = store.scenario().arm_list()
        if quic_arm is None:
            quic_arm = next((a.label for a in arms if a.protocol == "race"), "h3")
        labels = [a.label for a in arms]
        for option, arm in (("--quic-arm", quic_arm), ("--tcp-arm", tcp_arm)):
            if arm not in labels:
                raise LonglookError(
                    f"{option} {arm}: {directory} has no such arm", hint=f"its arms: {', '.join(labels)}"
                )
        runs = store.runs_frame()
        cells = store.cells_frame()
        series = store.series()
    runs = runs.merge(cells[["cell_id", "link_name"]], on="cell_id", how="left")
    runs["pattern"] = runs["link_name"].fillna(runs["cell_id"])
    tried = runs
    runs = runs[runs["status"].isin(SETTLED)]
    if not include_flagged and "audit_flagged" in runs:
        runs = runs[~runs["audit_flagged"].fillna(False).astype(bool)]
    # with flagged runs kept, a round may hold several attempts of an arm: the last one counts
    if "attempt" in runs:
        runs = runs.sort_values("attempt").drop_duplicates(["cell_id", "round", "arm"], keep="last")
    missing = [n for n in ("F", "B", "S") if not (series["name"] == n).any()]
    if missing:
        raise LonglookError(
            f"{directory}: no series {', '.join(missing)} in this experiment",
            hint="F = bytes over TCP per second in a QUIC-enabled session "
            "(analyses.fallback.bytes_per_second from linkem's flow log), B = quality drop, "
            "S = stall; the kind's measure() must record them as series rows",
        )
    quic_runs = runs[runs["arm"] == quic_arm]
    rows = series[series["run_id"].isin(quic_runs["run_id"]) & series["name"].isin(["F", "F_udp", "B", "S"])]
    sessions = analyze_sessions(rows, step_s=step_s, how={"F": "sum", "F_udp": "sum"}, cause=cause, max_var_lag=max_lag)
    if sessions.empty:
        raise LonglookError(f"{directory}: no settled {quic_arm!r} run has series F, B and S")
    meta = quic_runs[["run_id", "pattern", "cell_id", "round", "protocol_negotiated"]].rename(
        columns={"protocol_negotiated": "served"}
    )
    sessions = meta.merge(sessions, on="run_id", how="inner")
    temporal = temporal_samples(series)
    runs = runs.assign(samples=[temporal.get(r, np.array([])) for r in runs["run_id"]])
    if metric not in runs:
        runs = runs.assign(**{metric: np.nan})
    patterns = compare_patterns(
        runs,
        quic_arm=quic_arm,
        tcp_arm=tcp_arm,
        metric=metric,
        higher_is_better=higher_is_better,
        alpha=alpha,
        samples="samples",
        completion=_completion(tried, runs, metric),
    )
    # the paper's Granger shares are over sessions where TCP did better (or the same)
    pairs = session_pairs(runs, quic_arm, tcp_arm)
    outcomes = [
        pair_verdict(q, t, alpha=alpha, higher_is_better=higher_is_better)
        for q, t in zip(pairs["samples_q"], pairs["samples_t"])
    ]
    verdicts = pd.DataFrame(
        {
            "run_id": pairs["run_id_q"],
            "pair_verdict": [o for o, _ in outcomes],
            "pair_note": [why for _, why in outcomes],
        }
    )
    sessions = sessions.merge(verdicts, on="run_id", how="left")
    sessions["pair_verdict"] = sessions["pair_verdict"].fillna("no TCP-only session in its cell and round")
    better_or_same = sessions["pair_verdict"].isin(TCP_AS_GOOD)
    summary = {
        "all": summarize(sessions, alpha),
        "tcp_better_or_same": summarize(sessions[better_or_same], alpha),
        "pairs": {"pairs": len(outcomes), **{v: sum(o == v for o, _ in outcomes) for v in PAIR_OUTCOMES}},
        "missing_metric": int(runs[metric].isna().sum()),
    }
    # the paper's shares per pattern too: fallback, correlation, Granger beside the QoE test
    per_pattern = pd.DataFrame(
        [
            {"pattern": p, **{k: v for k, v in summarize(g, alpha).items() if k not in ("alpha", "granger_p")}}
            for p, g in sessions.groupby("pattern", sort=True)
        ]
    )
    patterns = patterns.merge(per_pattern, on="pattern", how="left")
    return FallbackAnalysis(sessions, patterns, summary)
