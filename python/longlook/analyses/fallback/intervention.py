"""Causality by experiment: the average treatment effect of a QUIC-breaking
middlebox, switched on at a random time in randomly chosen sessions (a video scenario's
[intervention], kinds/video/intervention.py), on QoE, bitrate and stall time, beside the
Granger verdicts (`store.analyze_store`) of the same sessions.

The estimator: per cell and over all cells, mean(treated) - mean(control) of the
QUIC-enabled sessions, with Welch's interval and p from core.stats.compare_samples (the
one two-sample comparison). Under complete randomisation that difference is unbiased for
the sample's ATE, and Welch's variance is Neyman's conservative one, so the interval covers
the ATE at least at its level even when effects differ between sessions
(tests/unit/analyses/test_intervention.py simulates it). Pooling cells is valid because every cell treats
the same share of its rounds. What is randomised is the break; with every treated session
falling back (compliance, shown) it is the effect of the fallback together with the silence
that forces it.

A session that failed, did not settle, lost its audit or lacks the outcome is a missing
outcome of its arm, never dropped silently: each row counts the sessions tried and those
with the outcome per arm (`completion_treated`, `completion_control`), and both go to
compare_samples, whose verdict must survive the missing sessions at their worst. The
interval is a claim too (it excludes 0 exactly when Welch's p < 1 - confidence): where a
session is missing, it is shown only when that claim survives the same worst case, else
it is blank and `why` says so. Simulated (tests/calibration/test_intervention_ate.py): true
ATE 0, the worst quarter of the treated sessions failing, 8 sessions per arm: "interval
wholly above 0" in 11% of experiments before, at most its 2.5% now.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ...core.stats import Completion, Verdict, compare_samples
from ...core.store import Store
from ...core.verdicts import verdict_producer
from ...errors import LonglookError
from .session import TCP_SERVED, summarize
from .from_store import SETTLED, analyze_store

# (metric, lower is better): the outcomes Chaudhary et al. judge a session by
OUTCOMES = (("qoe", False), ("avg_bitrate_mbit", False), ("stall_s", True))
ALL = "all cells"


@dataclass
class InterventionAnalysis:
    effects: pd.DataFrame  # one row per (scope, metric): n, means, ATE with interval, p
    sessions: pd.DataFrame  # one row per QUIC-enabled session: assignment, outcomes, Granger p
    summary: dict  # compliance, Granger shares per arm, the agreement of the two answers

    def write(self, out: Path) -> list[Path]:
        out.mkdir(parents=True, exist_ok=True)
        paths = [out / "intervention-ate.csv", out / "intervention-sessions.csv", out / "intervention-summary.json"]
        self.effects.to_csv(paths[0], index=False)
        self.sessions.drop(columns=["intervention"], errors="ignore").to_csv(paths[1], index=False)
        paths[2].write_text(json.dumps(self.summary, indent=2, default=float) + "\n")
        return paths


@verdict_producer("fallback.intervention_ate", "the ATE's interval wholly above or below 0; treated better / worse")
def ate_rows(
    sessions: pd.DataFrame, *, alpha: float = 0.05, confidence: float = 0.95, outcomes=OUTCOMES, scope: str = ALL
) -> list[dict]:
    """ATE of `treated` on each outcome over `sessions` (columns treated, and the outcomes):
    one row per session tried, its outcome nan where the session gave none (it failed, did
    not settle, was flagged): a missing outcome of its arm (see the module's docstring)."""
    rows = []
    treated = sessions["treated"].astype(bool)
    for metric, lower in outcomes:
        x = sessions[metric].astype(float) if metric in sessions else pd.Series(np.nan, index=sessions.index)
        t = x[treated].dropna().to_numpy(dtype=float)
        c = x[~treated].dropna().to_numpy(dtype=float)
        done_t, done_c = Completion(len(t), int(treated.sum())), Completion(len(c), int((~treated).sum()))
        common = dict(
            a_label="treated",
            b_label="control",
            test="welch",
            confidence=confidence,
            metric=metric,
            lower_is_better=lower,
            better_word="better",
            completion_a=done_t,
            completion_b=done_c,
        )
        cmp = compare_samples(t, c, alpha=alpha, **common)
        lo, hi, why = cmp.diff_low, cmp.diff_high, cmp.reason
        lost = done_t.counted < done_t.tried or done_c.counted < done_c.tried
        if lost and (lo > 0 or hi < 0):  # the interval says a side: that claim must survive too
            held = compare_samples(t, c, alpha=1 - confidence, **common)
            if held.verdict is Verdict.SURVIVORSHIP:
                lo, hi = math.nan, math.nan
                why = f"no interval: {held.reason}"
        rows.append(
            {
                "scope": scope,
                "metric": metric,
                "n_treated": len(t),
                "n_control": len(c),
                "completion_treated": str(done_t),
                "completion_control": str(done_c),
                "mean_treated": float(t.mean()) if len(t) else math.nan,
                "mean_control": float(c.mean()) if len(c) else math.nan,
                "ate": cmp.diff,
                "ci_low": lo,
                "ci_high": hi,
                "confidence": confidence,
                "p": cmp.p_value,
                "verdict": cmp.verdict_text,
                "why": why,
            }
        )
    return rows


def agreement(qoe: dict, granger: dict, alpha: float) -> str:
    """Do the two answers agree? Interventional: the QoE ATE's interval wholly below 0
    (the break and its fallback lower QoE) or not. Observational (Chaudhary §6): F
    Granger-causes B or S in more than half of the treated sessions it could be tested in."""
    lo, hi = qoe.get("ci_low", math.nan), qoe.get("ci_high", math.nan)
    tested = granger.get("tested_either", 0)
    if math.isnan(lo) or math.isnan(hi):
        return "undecided: the ATE has no interval (too few sessions per arm)"
    if not tested:
        return "undecided: Granger could be tested in no treated session"
    harm = hi < 0
    share = granger["granger_either_share"]
    says = share > 0.5
    ate_text = f"the ATE on QoE is {'negative' if harm else 'not shown negative'} ([{lo:.3g}, {hi:.3g}])"
    obs_text = f"Granger F -> B or S in {share:.0%} of {tested} tested treated sessions (p < {alpha:g})"
    return ("agree" if harm == says else "disagree") + f": {ate_text}; {obs_text}"


def intervention_sessions(runs: pd.DataFrame, quic_arm: str) -> pd.DataFrame:
    """The QUIC-enabled sessions that carry an assignment, with treated / onset_s / fell_back."""
    if "intervention" not in runs:
        raise LonglookError(
            "no run records an intervention",
            hint="a video scenario with [intervention] (scenarios/chaudhary-intervention.toml)",
        )
    s = runs[(runs["arm"] == quic_arm) & runs["intervention"].map(lambda d: isinstance(d, dict))].copy()
    s["treated"] = s["intervention"].map(lambda d: bool(d.get("treated")))
    s["onset_s"] = s["intervention"].map(lambda d: d.get("onset_s"))
    s["fell_back"] = s["protocol_negotiated"].isin(TCP_SERVED)
    return s


def tried_sessions(all_runs: pd.DataFrame, kept: pd.DataFrame, scenario, quic_arm: str) -> pd.DataFrame:
    """Every QUIC-enabled session tried (one per cell and round, whatever its status), its
    assignment (the one the run recorded, else the scenario's draw for it: a run that
    crashed recorded nothing) and the outcomes of `kept` (the settled, counted sessions);
    nan outcomes where the session gave none."""
    cols = ["cell_id", "round"]
    runs = all_runs[all_runs["arm"] == quic_arm]
    keys = runs[cols].drop_duplicates()
    cells = {c.id: c for c in scenario.cells()}
    arm = next(a for a in scenario.arm_list() if a.label == quic_arm)

    def drawn(cid: str, rnd: int) -> bool:
        if cid not in cells:  # the store's runs come from its own scenario's cells
            raise LonglookError(f"run of cell {cid!r}: not a cell of the stored scenario")
        return bool(scenario.assignment(cells[cid], arm, int(rnd)).treated)

    keys = keys.assign(treated=[drawn(c, r) for c, r in keys.itertuples(index=False)])
    have = kept[[*cols, "treated", *[m for m, _ in OUTCOMES if m in kept]]].rename(columns={"treated": "_recorded"})
    out = keys.merge(have, on=cols, how="left")
    out["treated"] = out["_recorded"].where(out["_recorded"].notna(), out["treated"]).astype(bool)
    return out.drop(columns="_recorded")


def analyze_intervention(
    directory: str | Path, *, alpha: float | None = None, include_flagged: bool = False
) -> InterventionAnalysis:
    with Store.open(directory, read_only=True) as store:
        sc = store.scenario()
        runs = store.runs_frame()
        cells = store.cells_frame()
    alpha = sc.statistics.alpha if alpha is None else alpha
    quic_arm = next((a.label for a in sc.arm_list() if a.protocol == "race"), None)
    if quic_arm is None or getattr(sc, "intervention", None) is None:
        raise LonglookError(
            f"{directory}: not an interventional experiment",
            hint="run a video scenario with [intervention], e.g. scenarios/chaudhary-intervention.toml",
        )
    all_runs = runs
    runs = runs[runs["status"].isin(SETTLED)]
    if not include_flagged and "audit_flagged" in runs:
        runs = runs[~runs["audit_flagged"].fillna(False).astype(bool)]
    if "attempt" in runs:
        runs = runs.sort_values("attempt").drop_duplicates(["cell_id", "round", "arm"], keep="last")
    s = intervention_sessions(runs, quic_arm).merge(cells[["cell_id", "link_name"]], on="cell_id", how="left")
    if s.empty:
        raise LonglookError(f"{directory}: no settled QUIC-enabled session with an assignment")
    tried = tried_sessions(all_runs, s, sc, quic_arm)
    rows = ate_rows(tried, alpha=alpha, confidence=sc.statistics.confidence)
    if tried["cell_id"].nunique() > 1:
        for cid, g in tried.groupby("cell_id", sort=True):
            rows += ate_rows(g, alpha=alpha, confidence=sc.statistics.confidence, scope=cid)
    effects = pd.DataFrame(rows)
    granger_note = ""
    try:
        fb = analyze_store(directory, quic_arm=quic_arm, alpha=alpha, include_flagged=include_flagged).sessions
        keep = ["run_id", "suitable", "p_B", "p_S", "corr_B", "corr_S", "pair_verdict"]
        s = s.merge(fb[[c for c in keep if c in fb]], on="run_id", how="left")
    except LonglookError as e:  # no F/B/S series: the ATE stands alone
        granger_note = e.message
    # the run's own error column is not the Granger analysis's: summarize must not read it
    judged = s.drop(columns=["error"], errors="ignore").assign(served=s["protocol_negotiated"])
    g = {arm: summarize(judged[judged["treated"] == t], alpha) for arm, t in (("treated", True), ("control", False))}
    qoe = next(r for r in rows if r["scope"] == ALL and r["metric"] == "qoe")
    summary = {
        "alpha": alpha,
        "sessions": int(len(s)),
        "treated": int(s["treated"].sum()),
        "control": int((~s["treated"]).sum()),
        "tried": {"treated": int(tried["treated"].sum()), "control": int((~tried["treated"]).sum())},
        "compliance": {
            "treated_fell_back": int(s.loc[s["treated"], "fell_back"].sum()),
            "control_fell_back": int(s.loc[~s["treated"], "fell_back"].sum()),
        },
        "onset_s": sorted(float(x) for x in s["onset_s"].dropna()),
        "granger": g,
        "granger_note": granger_note,
        "agreement": agreement(qoe, g["treated"], alpha),
        "estimator": "difference in means, Welch interval and p (core.stats.compare_samples); "
        "complete randomisation of rounds per cell",
    }
    cols = [
        "run_id",
        "cell_id",
        "link_name",
        "round",
        "treated",
        "onset_s",
        "protocol_negotiated",
        "fell_back",
        *[m for m, _ in OUTCOMES if m in s],
        *[c for c in ("suitable", "p_B", "p_S", "pair_verdict") if c in s],
    ]
    return InterventionAnalysis(effects, s[cols].sort_values(["cell_id", "round"]), summary)
