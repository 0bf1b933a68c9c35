"""One session's fallback analysis, and the same over many sessions with the paper's shares."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import pandas as pd

from .crosscorr import cross_correlation
from .granger import granger_test
from .grid import on_grid
from .stationarity import make_stationary

EFFECTS = ("B", "S")
TCP_SERVED = ("h2", "mixed")  # a QUIC-enabled session's protocol when TCP served a request


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
    (`run_id`, `bytes_tcp` = sum of F, `bytes_udp` = sum of F_udp when given, + the
    SessionResult fields). A session lacking F, B or S gets `error`."""
    out = []
    for run_id, g in rows.groupby("run_id", sort=True):
        totals = {"bytes_tcp": float(g.loc[g["name"] == "F", "value"].sum()),
                  "bytes_udp": float(g.loc[g["name"] == "F_udp", "value"].sum())}
        try:
            frame = on_grid(g, step_s=step_s, how=how)
        except Exception as e:  # noqa: BLE001 - one bad session is reported, not fatal
            out.append({"run_id": run_id, **totals, "error": str(e)})
            continue
        out.append({"run_id": run_id, **totals, "error": None,
                    **analyze_session(frame, step_s=step_s, **options).row()})
    return pd.DataFrame(out)


def summarize(results: pd.DataFrame, alpha: float = 0.05) -> dict:
    """The paper's numbers over sessions: how many fell back (`served`, the protocol the
    client recorded, is h2 or mixed; without it, any byte over TCP), how many had a TCP flow
    at all (`tcp_flow`: with racing, also the losing TCP connection) and the share of all
    bytes that went over TCP; median max correlation of F with B and S (over
    sessions where F varies); share of sessions unsuitable for Granger; and, among suitable
    sessions where the test could run (F and the effect not constant), the share rejecting
    "F does not Granger-cause B" / S / either (p < alpha)."""
    nan = float("nan")
    out = {"sessions": int(len(results)), "fell_back": 0, "tcp_flow": 0, "tcp_bytes_share": nan, "analysed": 0,
           "suitable": 0, "unsuitable_share": nan, "median_corr_B": nan, "median_corr_S": nan,
           "tested_B": 0, "tested_S": 0, "tested_either": 0, "granger_B_share": nan, "granger_S_share": nan,
           "granger_either_share": nan, "alpha": alpha}
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
    tested = {e: suitable[f"p_{e}"].notna() for e in EFFECTS}
    out.update(tested_B=int(tested["B"].sum()), tested_S=int(tested["S"].sum()))
    for e in EFFECTS:
        if tested[e].any():
            out[f"granger_{e}_share"] = float((suitable.loc[tested[e], f"p_{e}"] < alpha).mean())
    either = tested["B"] | tested["S"]
    out["tested_either"] = int(either.sum())
    if either.any():
        rej = (suitable["p_B"] < alpha) | (suitable["p_S"] < alpha)
        out["granger_either_share"] = float(rej[either].mean())
    return out
