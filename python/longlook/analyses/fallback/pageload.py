"""Page loads behind middleboxes (Langley §7): a QUIC-enabled racing client against a
TCP-only one, per cell. What racing costs or gains: the PLT of each arm (core.stats, with completion), how often
and how fast the racing client fell back, the share of bytes it got over QUIC, and the time
lost to a blocked handshake = mean PLT of the racing runs that fell back minus the mean
TCP-only PLT (compare it with the TCP wait they planned, `tcp_delay_ms`).

Racing runs count when `ok` and not flagged (they ask for no protocol, so whatever served
them is data); TCP-only runs when counted by core.status (ok over the protocol asked for).
The report shows the table in report/sections/racing.py.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ...core.stats import compare_samples, completions
from ...core.status import counted_runs
from ...errors import LonglookError, check_range

COLUMNS = (
    "cell_id",
    "pattern",
    "n_quic",
    "n_tcp",
    "plt_quic_ms",
    "plt_tcp_ms",
    "p",
    "verdict",
    "fell_back_share",
    "time_to_fallback_ms_median",
    "tcp_delay_ms_mean",
    "quic_share_mean",
    "served_h3",
    "served_h2",
    "served_mixed",
    "lost_to_blocked_handshake_ms",
)


def race_arm_of(scenario) -> str | None:
    """The first arm running the racing client, or None."""
    return next((a.label for a in getattr(scenario, "arms", []) if a.protocol == "race"), None)


def tcp_arm_of(scenario) -> str | None:
    return next((a.label for a in getattr(scenario, "arms", []) if a.protocol == "h2"), None)


def _mean(x: pd.Series) -> float:
    x = pd.to_numeric(x, errors="coerce").dropna()
    return float(x.mean()) if len(x) else float("nan")


def compare_pageloads(
    runs: pd.DataFrame,
    cells: pd.DataFrame,
    *,
    quic_arm: str,
    tcp_arm: str,
    alpha: float = 0.01,
    test: str = "welch",
    exclude_flagged: bool = True,
) -> pd.DataFrame:
    """One row per cell (COLUMNS). `runs` as Store.runs_frame(); `cells` as cells_frame().
    The PLTs are compared by core.stats, with each arm's completion (a racing client that
    cannot finish where TCP-only can is a survivorship problem, not a faster client)."""
    ok = runs[(runs["status"] == "ok") & runs["plt_ms"].notna()]
    if exclude_flagged and "audit_flagged" in ok:
        ok = ok[~ok["audit_flagged"].fillna(False).astype(bool)]
    race = ok[ok["arm"] == quic_arm]
    tcp = counted_runs(runs[runs["arm"] == tcp_arm], "plt_ms", exclude_flagged=exclude_flagged)
    names = dict(zip(cells["cell_id"], cells.get("link_name", cells["cell_id"])))
    done = completions(runs, pd.concat([race, tcp]))
    rows = []
    for cid in cells["cell_id"]:
        q, t = race[race["cell_id"] == cid], tcp[tcp["cell_id"] == cid]
        c = compare_samples(
            q["plt_ms"].to_numpy(float),
            t["plt_ms"].to_numpy(float),
            a_label="QUIC-enabled",
            b_label="TCP-only",
            metric="plt_ms",
            cell_id=cid,
            alpha=alpha,
            test=test,  # type: ignore[arg-type]
            completion_a=done.get((cid, quic_arm)),
            completion_b=done.get((cid, tcp_arm)),
        )
        ttf = pd.to_numeric(q.get("time_to_fallback_ms", pd.Series(dtype=float)), errors="coerce")
        fell = q[ttf.notna()] if len(q) else q
        served = q["protocol_negotiated"].value_counts() if len(q) else pd.Series(dtype=int)
        lost = _mean(fell["plt_ms"]) - c.b.mean if len(fell) and c.b.n else float("nan")
        rows.append(
            {
                "cell_id": cid,
                "pattern": names.get(cid, cid),
                "n_quic": c.a.n,
                "n_tcp": c.b.n,
                "plt_quic_ms": c.a.mean,
                "plt_tcp_ms": c.b.mean,
                "p": c.p_value,
                "verdict": c.verdict_text,
                "fell_back_share": len(fell) / len(q) if len(q) else float("nan"),
                "time_to_fallback_ms_median": float(ttf.median()) if ttf.notna().any() else float("nan"),
                "tcp_delay_ms_mean": _mean(q.get("tcp_delay_ms", pd.Series(dtype=float))),
                "quic_share_mean": _mean(q.get("quic_share", pd.Series(dtype=float))),
                "served_h3": int(served.get("h3", 0)),
                "served_h2": int(served.get("h2", 0)),
                "served_mixed": int(served.get("mixed", 0)),
                "lost_to_blocked_handshake_ms": lost,
            }
        )
    return pd.DataFrame(rows, columns=list(COLUMNS))


def analyze_pageload_store(
    directory: str | Path,
    *,
    quic_arm: str | None = None,
    tcp_arm: str | None = None,
    alpha: float | None = None,
    include_flagged: bool = False,
) -> pd.DataFrame:
    from ...core.store import Store

    if alpha is not None:
        check_range("--alpha", alpha, 0, 1, low_open=True, high_open=True, hint="a significance level, e.g. 0.01")
    with Store.open(directory, read_only=True) as store:
        scenario = store.scenario()
        runs, cells = store.runs_frame(), store.cells_frame()
    quic_arm = quic_arm or race_arm_of(scenario)
    tcp_arm = tcp_arm or tcp_arm_of(scenario)
    labels = [a.label for a in scenario.arms]
    if quic_arm not in labels or tcp_arm not in labels:
        raise LonglookError(
            f"{directory}: arms {labels} have no racing arm and TCP-only arm to compare "
            f"(asked: {quic_arm!r} vs {tcp_arm!r})",
            hint='give an arm protocol = "race" and one protocol = "h2", or --quic-arm/--tcp-arm',
        )
    return compare_pageloads(
        runs,
        cells,
        quic_arm=quic_arm,
        tcp_arm=tcp_arm,
        alpha=alpha if alpha is not None else scenario.statistics.alpha,
        test=scenario.statistics.test,
        exclude_flagged=not include_flagged,
    )
