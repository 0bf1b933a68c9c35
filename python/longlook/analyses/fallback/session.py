"""One session's fallback analysis, and the same over many sessions with the paper's shares."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from .crosscorr import cross_correlation
from .granger import granger_test
from .grid import on_grid
from .stationarity import make_stationary

EFFECTS = ("B", "S")


@dataclass(frozen=True)
class SessionResult:
    n: int  # samples on the grid
    corr_B: float
    lag_B_s: float | None
    corr_S: float
    lag_S_s: float | None
    diff_order: int | None  # differences applied before Granger; None = unsuitable
    suitable: bool
    p_B: float  # Granger F -> B (NaN = not tested, see reason_B)
    lag_order_B: int | None
    reason_B: str | None
    p_S: float
    lag_order_S: int | None
    reason_S: str | None

    def row(self) -> dict:
        return asdict(self)


def analyze_session(frame: pd.DataFrame, *, step_s: float = 1.0, alpha_kpss: float = 0.05,
                    max_ccf_lag: int | None = None, max_var_lag: int | None = None,
                    criterion: str = "aic") -> SessionResult:
    """`frame`: columns F, B, S on a regular grid of `step_s` (see `grid.on_grid`).
    Cross-correlation on the series as measured; Granger on the stationary transform."""
    f = frame["F"].to_numpy(dtype=float)
    cc = {e: cross_correlation(f, frame[e].to_numpy(dtype=float), max_ccf_lag) for e in EFFECTS}
    st = make_stationary(frame[["F", *EFFECTS]], alpha=alpha_kpss)
    tests = {}
    for e in EFFECTS:
        if st.data is None:
            tests[e] = (float("nan"), None, "not stationary after second differences")
            continue
        g = granger_test(st.data["F"].to_numpy(), st.data[e].to_numpy(), max_lag=max_var_lag,
                         criterion=criterion)
        tests[e] = (g.p_value, g.lag, g.reason)
    lag_s = {e: None if cc[e].lag is None else cc[e].lag * step_s for e in EFFECTS}
    return SessionResult(
        n=len(frame), corr_B=cc["B"].max_corr, lag_B_s=lag_s["B"], corr_S=cc["S"].max_corr,
        lag_S_s=lag_s["S"], diff_order=st.order, suitable=st.order is not None,
        p_B=tests["B"][0], lag_order_B=tests["B"][1], reason_B=tests["B"][2],
        p_S=tests["S"][0], lag_order_S=tests["S"][1], reason_S=tests["S"][2])


def analyze_sessions(rows: pd.DataFrame, *, step_s: float = 1.0, how: dict[str, str] | None = None,
                     **options) -> pd.DataFrame:
    """Long rows (`run_id`, `name`, `t_s`, `value`) of many sessions -> one row per session
    (`run_id` + the SessionResult fields). A session lacking F, B or S gets `error`."""
    out = []
    for run_id, g in rows.groupby("run_id", sort=True):
        try:
            frame = on_grid(g, step_s=step_s, how=how)
        except Exception as e:  # noqa: BLE001 - one bad session is reported, not fatal
            out.append({"run_id": run_id, "error": str(e)})
            continue
        out.append({"run_id": run_id, "error": None,
                    **analyze_session(frame, step_s=step_s, **options).row()})
    return pd.DataFrame(out)


def summarize(results: pd.DataFrame, alpha: float = 0.05) -> dict:
    """The paper's numbers over sessions: median max correlation with B and S, share of
    sessions unsuitable for Granger, and the share of suitable sessions rejecting "F does
    not Granger-cause B" / S / either (p < alpha)."""
    nan = float("nan")
    out = {"sessions": int(len(results)), "analysed": 0, "suitable": 0, "unsuitable_share": nan,
           "median_corr_B": nan, "median_corr_S": nan, "granger_B_share": nan,
           "granger_S_share": nan, "granger_either_share": nan, "alpha": alpha}
    if "suitable" not in results:
        return out
    ok = results[results["error"].isna()] if "error" in results else results
    suitable = ok[ok["suitable"].astype(bool)]
    out.update(analysed=int(len(ok)), suitable=int(len(suitable)))
    if len(ok):
        out["unsuitable_share"] = float(1 - len(suitable) / len(ok))
        for e in EFFECTS:
            c = ok[f"corr_{e}"].dropna()
            out[f"median_corr_{e}"] = float(c.median()) if len(c) else nan
    if len(suitable):
        rej_b, rej_s = suitable["p_B"] < alpha, suitable["p_S"] < alpha
        out.update(granger_B_share=float(rej_b.mean()), granger_S_share=float(rej_s.mean()),
                   granger_either_share=float((rej_b | rej_s).mean()))
    return out
