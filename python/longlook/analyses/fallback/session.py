"""One session's fallback analysis, and the same over many sessions with the paper's shares.

A session's verdicts (`granger_verdicts`), "F Granger-causes B", "... S" and "either",
rest on the shift-null p of each test (`granger.granger_shift_tests`: how the Granger test
of F as observed ranks among the same test with the fallback moved to the session's other
admissible times) with Holm over the two (`core.multiple.holm`); "either" is Holm's
family-wise rejection. So each of the three is wrong at most alpha of the time when the
fallback's time is independent of B and S: tests/calibration/test_granger.py simulates 600
sessions of the video kind's series and finds 4.0%, 2.1% and 4.9% at alpha 0.05 (the old
reading, the F-test's own p at the VAR's AIC lag with an uncorrected "or": 23%, 14%, 25%).
That textbook p is kept beside the verdict (`p_B_ftest`, `p_S_ftest`) and decides nothing.
What one 60 s session can show is little (granger.py says why: an effect 1 s after the
fallback is found in about a fifth of the sessions, 3 s after almost never), so the shares
over sessions stay small even where fallback does harm.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from ...core.multiple import holm
from ...core.verdicts import verdict_producer
from .crosscorr import cross_correlation
from .granger import MAX_SHIFTS, cumulative_share, default_max_lag, granger_shift_tests
from .grid import on_grid
from .stationarity import make_stationary

EFFECTS = ("B", "S")
# what F is: bytes over TCP per step, or the paper's share T(t) / (T(t) + Q(t)) of the
# session's bytes that went over TCP up to t (Chaudhary §6.1), from F and F_udp
CAUSES = ("bytes", "share")
TCP_SERVED = ("h2", "mixed")  # a QUIC-enabled session's protocol when TCP served a request
GRANGER_P = (
    "per session, how the Granger F-test's p of F -> B (S) as observed ranks among the same test with "
    "the fallback moved to every other admissible time (F rotated when it is there from the start), "
    "+1 corrected; Holm over B and S. Not the F-test's own p, which these shapes make far too small"
)


@dataclass(frozen=True)
class SessionResult:
    n: int  # samples on the grid
    corr_B: float
    lag_B_s: float | None
    corr_S: float
    lag_S_s: float | None
    diff_order: int | None  # differences applied before Granger; None = unsuitable
    suitable: bool
    p_B: float  # Granger F -> B, the shift-null p (NaN = not tested, see reason_B)
    lag_order_B: int | None
    reason_B: str | None
    p_S: float
    lag_order_S: int | None
    reason_S: str | None
    p_B_holm: float  # Holm over the tests that ran (B, S): what the verdicts read
    p_S_holm: float
    p_either: float  # Holm's family-wise p: "F Granger-causes B or S" when < alpha
    p_B_ftest: float  # the textbook F-test's p (the paper's reading; not calibrated, decides nothing)
    p_S_ftest: float
    shifts: int  # versions of F in the null; no p is below 1 / (shifts + 1)
    granger_null: str | None  # how they were made: the fallback's onset moved, or F rotated
    cause: str = "bytes"  # what F was (CAUSES)
    max_lag: int | None = None  # the widest lag window the criterion chose among, in steps

    def row(self) -> dict:
        return asdict(self)


def analyze_session(
    frame: pd.DataFrame,
    *,
    step_s: float = 1.0,
    alpha_kpss: float = 0.05,
    max_ccf_lag: int | None = None,
    max_var_lag: int | None = None,
    criterion: str = "bic",
    max_shifts: int = MAX_SHIFTS,
    cause: str = "bytes",
) -> SessionResult:
    """`frame`: columns F, B, S (and F_udp, QUIC's bytes, when `cause` is "share") on a
    regular grid of `step_s` (see `grid.on_grid`). Cross-correlation on the series as
    measured; Granger on the stationary transform (the paper's KPSS rule), each p against
    F's versions (`granger.null_index`, the same for B and S; when there are more than
    `max_shifts`, drawn with a seed the session's own numbers give), then Holm over B and S.
    `max_var_lag`: the widest lag window, in steps (default `granger.default_max_lag`)."""
    if cause not in CAUSES:
        raise ValueError(f"cause {cause!r}: one of {', '.join(CAUSES)}")
    tcp = frame["F"].to_numpy(dtype=float)
    quic = frame["F_udp"].to_numpy(dtype=float) if cause == "share" else None
    f = tcp if quic is None else cumulative_share(tcp, quic)
    cc = {e: cross_correlation(f, frame[e].to_numpy(dtype=float), max_ccf_lag) for e in EFFECTS}
    st = make_stationary(
        pd.DataFrame({"F": f, **{e: frame[e].to_numpy(dtype=float) for e in EFFECTS}}), alpha=alpha_kpss
    )
    nan = float("nan")
    tests = {e: (nan, None, "not stationary after second differences", nan) for e in EFFECTS}
    shifts, null = 0, None
    if st.order is not None:
        levels = {e: frame[e].to_numpy(dtype=float) for e in EFFECTS}
        results = granger_shift_tests(
            tcp, levels, order=st.order, max_lag=max_var_lag, criterion=criterion, max_shifts=max_shifts, quic=quic
        )
        tests = {e: (g.p_value, g.lag, g.reason, g.p_ftest) for e, g in results.items()}
        shifts = max(g.shifts for g in results.values())
        null = results["B"].null
    adjusted = holm([tests[e][0] for e in EFFECTS])
    lag_s = {e: None if cc[e].lag is None else cc[e].lag * step_s for e in EFFECTS}
    return SessionResult(
        n=len(frame),
        corr_B=cc["B"].max_corr,
        lag_B_s=lag_s["B"],
        corr_S=cc["S"].max_corr,
        lag_S_s=lag_s["S"],
        diff_order=st.order,
        suitable=st.order is not None,
        p_B=tests["B"][0],
        lag_order_B=tests["B"][1],
        reason_B=tests["B"][2],
        p_S=tests["S"][0],
        lag_order_S=tests["S"][1],
        reason_S=tests["S"][2],
        p_B_holm=float(adjusted[0]),
        p_S_holm=float(adjusted[1]),
        p_either=float(np.nanmin(adjusted)) if np.isfinite(adjusted).any() else nan,
        p_B_ftest=tests["B"][3],
        p_S_ftest=tests["S"][3],
        shifts=shifts,
        granger_null=null,
        cause=cause,
        max_lag=default_max_lag(len(frame) - (st.order or 0)) if max_var_lag is None else max_var_lag,
    )


def analyze_sessions(
    rows: pd.DataFrame, *, step_s: float = 1.0, how: dict[str, str] | None = None, **options
) -> pd.DataFrame:
    """Long rows (`run_id`, `name`, `t_s`, `value`) of many sessions -> one row per session
    (`run_id`, `bytes_tcp` = sum of F, `bytes_udp` = sum of F_udp when given, + the
    SessionResult fields). A session lacking F, B or S (or F_udp, for the paper's share)
    gets `error`."""
    names = ("F", "F_udp", "B", "S") if options.get("cause") == "share" else ("F", "B", "S")
    out = []
    for run_id, g in rows.groupby("run_id", sort=True):
        totals = {
            "bytes_tcp": float(g.loc[g["name"] == "F", "value"].sum()),
            "bytes_udp": float(g.loc[g["name"] == "F_udp", "value"].sum()),
        }
        try:
            frame = on_grid(g, names, step_s=step_s, how=how)
        except Exception as e:  # noqa: BLE001 - one bad session is reported, not fatal
            out.append({"run_id": run_id, **totals, "error": str(e)})
            continue
        out.append(
            {"run_id": run_id, **totals, "error": None, **analyze_session(frame, step_s=step_s, **options).row()}
        )
    return pd.DataFrame(out)


@verdict_producer(
    "fallback.granger_session",
    'per session: "F Granger-causes B", "... S", "... B or S" (shift-null p, Holm over B and S)',
)
def granger_verdicts(p_B, p_S, alpha: float = 0.05) -> pd.DataFrame:
    """One row per session from its two shift-null p-values (NaN: that test did not run):
    Holm over the tests that ran (`p_B_holm`, `p_S_holm`), which ran (`tested_B`, `tested_S`,
    `tested_either`), and the verdicts `causes_B`, `causes_S` (the Holm-adjusted p below
    alpha) and `causes_either` (either of them: Holm's family-wise rejection). A test that
    did not run says nothing (False)."""
    p = np.column_stack([np.asarray(p_B, dtype=float), np.asarray(p_S, dtype=float)])
    adjusted = np.array([holm(row) for row in p]).reshape(p.shape)
    tested = ~np.isnan(p)
    causes = np.where(np.isnan(adjusted), np.inf, adjusted) < alpha
    return pd.DataFrame(
        {
            "p_B_holm": adjusted[:, 0],
            "p_S_holm": adjusted[:, 1],
            "tested_B": tested[:, 0],
            "tested_S": tested[:, 1],
            "tested_either": tested.any(axis=1),
            "causes_B": causes[:, 0],
            "causes_S": causes[:, 1],
            "causes_either": causes.any(axis=1),
        }
    )


def summarize(results: pd.DataFrame, alpha: float = 0.05) -> dict:
    """The paper's numbers over sessions: how many fell back (`served`, the protocol the
    client recorded, is h2 or mixed; without it, any byte over TCP), how many had a TCP flow
    at all (`tcp_flow`: with racing, also the losing TCP connection) and the share of all
    bytes that went over TCP; median max correlation of F with B and S (over
    sessions where F varies); share of sessions unsuitable for Granger; and, among suitable
    sessions where the test could run (F and the effect not constant), the share where
    `granger_verdicts` says F Granger-causes B / S / either (`granger_p` says what the p is).
    `granger_cannot_reject`: tested sessions too short for any verdict at this alpha (their
    shift null's smallest p, times the Holm family, is not below alpha), counted in the
    shares as not rejecting."""
    nan = float("nan")
    out = {
        "sessions": int(len(results)),
        "fell_back": 0,
        "tcp_flow": 0,
        "tcp_bytes_share": nan,
        "analysed": 0,
        "suitable": 0,
        "unsuitable_share": nan,
        "median_corr_B": nan,
        "median_corr_S": nan,
        "tested_B": 0,
        "tested_S": 0,
        "tested_either": 0,
        "granger_B_share": nan,
        "granger_S_share": nan,
        "granger_either_share": nan,
        "granger_cannot_reject": 0,
        "alpha": alpha,
        "granger_p": GRANGER_P,
    }
    if "bytes_tcp" in results:
        tcp = float(results["bytes_tcp"].fillna(0).sum())
        udp = float(results["bytes_udp"].fillna(0).sum()) if "bytes_udp" in results else 0.0
        out["tcp_flow"] = out["fell_back"] = int((results["bytes_tcp"] > 0).sum())
        out["tcp_bytes_share"] = tcp / (tcp + udp) if tcp + udp > 0 else nan
    if "served" in results:
        # a race's losing TCP connection carries a handshake and no request: TCP bytes at
        # the router, no fallback. What served the requests (h2 or mixed) says fallback.
        out["fell_back"] = int(results["served"].isin(TCP_SERVED).sum())
    if "suitable" not in results:
        return out
    ok = results[results["error"].isna()] if "error" in results else results
    suitable = ok[ok["suitable"].fillna(False).astype(bool)]
    out.update(analysed=int(len(ok)), suitable=int(len(suitable)))
    if len(ok):
        out["unsuitable_share"] = float(1 - len(suitable) / len(ok))
        for e in EFFECTS:
            c = ok[f"corr_{e}"].dropna()
            out[f"median_corr_{e}"] = float(c.median()) if len(c) else nan
    v = granger_verdicts(suitable["p_B"], suitable["p_S"], alpha)
    for what in ("B", "S", "either"):
        tested = v[f"tested_{what}"].to_numpy()
        out[f"tested_{what}"] = int(tested.sum())
        if tested.any():
            out[f"granger_{what}_share"] = float(v[f"causes_{what}"].to_numpy()[tested].mean())
    if "shifts" in suitable:
        family = v[["tested_B", "tested_S"]].sum(axis=1).to_numpy()
        smallest = family / (pd.to_numeric(suitable["shifts"], errors="coerce").to_numpy(dtype=float) + 1)
        out["granger_cannot_reject"] = int(((family > 0) & ~(smallest < alpha)).sum())
    return out
