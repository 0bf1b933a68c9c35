"""The fairness section of the report (Table 4, Fig. 4, Fig. 5, Jain's index, shares)."""

from __future__ import annotations

import math
import re
from html import escape
import pandas as pd

from ...core.status import counted_mask
from ...render.html import Section
from .aggregate import CELL_COLUMNS, cell_summary, example_run, table4
from .figures import cwnd_svg, timeline_svg
from .latency import latency_html, latency_under_load


class FairnessData:
    """The fairness view of an experiment's store: cells with their knobs, runs with their
    figures, flows, and each run's timeline and cwnd series."""

    def __init__(self, store, runs: pd.DataFrame):
        self.store = store
        cells = store.cells_frame()
        dims = pd.DataFrame(
            [{"cell_id": c, "position": p, **d} for c, p, d in zip(cells["cell_id"], cells["position"], cells["dims"])]
        )
        self.cells = dims.reindex(columns=CELL_COLUMNS)
        self.runs = runs
        if "arm" in runs and runs["arm"].nunique() > 1:
            self.cells, self.runs = per_arm(self.cells, runs)

    def flows(self) -> pd.DataFrame:
        return self.store.table("flows", "ORDER BY run_id, position").merge(
            self.runs[["run_id", "cell_id"]], on="run_id"
        )

    def _series(self, run_id: str, name: str, column: str) -> pd.DataFrame:
        s = self.store.series(run_id, name)
        return pd.DataFrame({"flow": s["key"], "t_s": s["t_s"], column: s["value"]})

    def timeline(self, run_id: str) -> pd.DataFrame:
        return self._series(run_id, "mbit", "mbit")

    def cwnd(self, run_id: str) -> pd.DataFrame:
        return self._series(run_id, "cwnd_bytes", "cwnd_bytes")

    def mean_cwnd(self) -> pd.DataFrame:
        """cell_id, flow, cwnd_kb: the mean of the cwnd samples inside each counted run's
        shared window, averaged over runs (how large a window each flow held, Fig. 5)."""
        runs = self.runs[counted_mask(self.runs)]
        rows = []
        for r in runs.itertuples():
            c = self.cwnd(r.run_id)
            c = c[(c["t_s"] >= r.window_start_s) & (c["t_s"] <= r.window_end_s)]
            for flow, g in c.groupby("flow"):
                rows.append({"cell_id": r.cell_id, "flow": flow, "run_mean": g["cwnd_bytes"].mean()})
        if not rows:
            return pd.DataFrame(columns=["cell_id", "flow", "cwnd_kb"])
        f = pd.DataFrame(rows).groupby(["cell_id", "flow"])["run_mean"].mean() / 1000
        return f.rename("cwnd_kb").reset_index()


def per_arm(cells: pd.DataFrame, runs: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Several arms (e.g. a release sweep's): each (cell, arm) its own row of Table 4 and its
    own figures, the arm named with the matchup; never two arms' runs pooled."""
    arms = sorted(runs["arm"].unique())
    rows = []
    for _, c in cells.iterrows():
        for i, arm in enumerate(arms):
            rows.append(
                {
                    **c.to_dict(),
                    "cell_id": f"{c['cell_id']} · {arm}",
                    "matchup": f"{c['matchup']} · {arm}",
                    "position": int(c["position"]) * len(arms) + i,
                }
            )
    return pd.DataFrame(rows, columns=cells.columns), runs.assign(cell_id=runs["cell_id"] + " · " + runs["arm"])


def _num(x, fmt: str = "{:.2f}") -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    return fmt.format(x)


def _mean_sd(mean, sd, fmt: str = "{:.2f}") -> str:
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "–"
    return f"{fmt.format(mean)} ({_num(sd, fmt)})"


def queue_of(link) -> str:
    """The bottleneck's queue discipline, from a link profile's name (`...,aqm=fq_codel`)."""
    m = re.search(r"(?:^|,)aqm=([^,]+)", link) if isinstance(link, str) else None
    return m.group(1) if m else "drop-tail"


def cell_title(c: pd.Series) -> str:
    parts = [str(c["matchup"]), str(c["start"])]
    if isinstance(c.get("link"), str):  # cells that differ only by their queue must not look alike
        parts.append(f"queue {queue_of(c['link'])}")
    if isinstance(c["quic_cc"], str):
        parts.append(f"QUIC {c['quic_cc']}" + (f", N={int(c['n_conn'])}" if c["n_conn"] == c["n_conn"] else ""))
    if isinstance(c["tcp_cc"], str):
        parts.append(f"TCP {c['tcp_cc']}")
    buf = c["buffer_bytes"]
    parts.append(f"buffer {int(buf) / 1000:g} KB" if buf == buf and buf is not None else "no buffer limit")
    return " · ".join(parts)


def _table4_html(t4: pd.DataFrame, summary: pd.DataFrame, cwnd: pd.DataFrame) -> str:
    # with N-connection emulation, equal throughput is not the goal: also judge x_i / weight_i
    weighted = bool((summary["n_conn"].fillna(1) > 1).any())
    t4 = t4.merge(cwnd, on=["cell_id", "flow"], how="left") if len(cwnd) else t4.assign(cwnd_kb=float("nan"))
    rows = []
    for _, c in summary.iterrows():
        flows = t4[t4["cell_id"] == c["cell_id"]]
        jain = _mean_sd(c["jain_mean"], c["jain_sd"], "{:.3f}")
        n_rows = max(len(flows), 1)
        head = (
            f'<td rowspan="{n_rows}">{escape(cell_title(c))}</td>'
            f'<td rowspan="{n_rows}" class="num">{c["ok"]}/{c["runs"]}</td>'
            f'<td rowspan="{n_rows}" class="num">{jain}</td>'
            + (f'<td rowspan="{n_rows}" class="num">{_num(c["jain_weighted_mean"], "{:.3f}")}</td>' if weighted else "")
        )
        if flows.empty:
            rows.append(f"<tr>{head}<td colspan='5' class='note'>no successful run</td></tr>")
            continue
        for i, (_, f) in enumerate(flows.iterrows()):
            ratio = f["share_ratio"]
            cls = "over" if ratio > 1.2 else "under" if ratio < 0.8 else ""
            rows.append(
                "<tr>" + (head if i == 0 else "") + f"<td>{escape(f['flow'])}</td>"
                f"<td class='num'>{_mean_sd(f['mbit_mean'], f['mbit_sd'])}</td>"
                f"<td class='num'>{_mean_sd(f['share_mean'] * 100, f['share_sd'] * 100, '{:.0f}')}%</td>"
                f"<td class='num'>{f['expected_share'] * 100:.0f}%</td>"
                f"<td class='num {cls}'>{_num(ratio)}</td>"
                f"<td class='num'>{_num(f['cwnd_kb'], '{:.1f}')}</td></tr>"
            )
    return (
        "<table class='data'><thead><tr><th>scenario</th><th>runs ok</th><th>Jain's index (sd)</th>"
        + ("<th>Jain's index of throughput / weight</th>" if weighted else "")
        + "<th>flow</th><th>avg. throughput, Mbit/s (sd)</th><th>share (sd)</th><th>expected</th>"
        "<th>share / expected</th><th>mean cwnd, KB</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
    )


def _accounting_html(flows: pd.DataFrame) -> str:
    """Router bytes per endpoint byte, by protocol: the headers' overhead (and any data the
    router forwarded after the client stopped reading)."""
    f = flows[(flows["status"] == "ok") & (flows["endpoint_bytes"] > 0)]
    if f.empty:
        return ""
    ratio = (f["router_bytes"] / f["endpoint_bytes"]).groupby(f["protocol"]).agg(["mean", "min", "max", "count"])
    names = {"h3": "QUIC", "h2": "TCP"}
    items = ", ".join(
        f"{names.get(p, p)} {r['mean']:.3f} (range {r['min']:.3f}–{r['max']:.3f}, n={int(r['count'])})"
        for p, r in ratio.iterrows()
    )
    return (
        f"<p class='note'>Cross-check: IP bytes forwarded by the router per body byte the client "
        f"read: {escape(items)}. The excess is packet headers (IP/UDP/QUIC or IP/TCP, TLS, "
        f"HTTP framing) and data in flight when a flow was stopped.</p>"
    )


def fairness_html(data: FairnessData, heading_level: int = 3) -> str | None:
    """The body of the fairness section; None when nothing was recorded."""
    runs = data.runs
    if runs.empty:
        return None
    cells, flows = data.cells, data.flows()
    t4, summary = table4(cells, runs, flows), cell_summary(cells, runs)
    h = f"h{heading_level}"
    first = cells.iloc[0]
    out = [
        f"<p>Flows sharing one bottleneck ({first['rate_mbit']:g} Mbit/s, {first['rtt_ms']:g} ms RTT), "
        "each a long bulk download. Throughput is measured at the router from linkem's per-flow "
        "counters (IP bytes forwarded towards the client), independent of the endpoints, over the "
        "window in which all flows of a run were active. The expected share of a flow is its weight "
        "over the sum of weights (1/(M+1) for one QUIC flow against M TCP flows; N/(M+N) when QUIC "
        "emulates N connections). Jain's index = (Σx)²/(n·Σx²) over the flows' throughputs; 1 is "
        "perfectly equal. Mean (standard deviation) over the runs that count (ok, path audit clean).</p>",
        _table4_html(t4, summary, data.mean_cwnd()),
        _accounting_html(flows),
        latency_html(latency_under_load(runs), summary, cell_title),
    ]
    left_out = runs[~counted_mask(runs)]
    if len(left_out):
        out.append(
            f"<p class='note'>{len(left_out)} run(s) are left out (see Excluded runs): "
            + "; ".join(escape(f"{r.run_id}: {r.error or r.audit_reasons or r.status}") for r in left_out.itertuples())
            + "</p>"
        )
    for _, c in summary.iterrows():
        run_id = example_run(runs, c["cell_id"])
        if run_id is None:
            continue
        names = list(flows[flows["run_id"] == run_id].sort_values("position")["flow"])
        jain = runs.loc[runs["run_id"] == run_id, "jain"].iloc[0]
        out.append(
            f"<{h}>{escape(cell_title(c))}</{h}>"
            f"<p class='note'>Run {escape(run_id)} (median Jain's index of the cell, {jain:.3f}).</p>"
        )
        out.append(
            timeline_svg(
                data.timeline(run_id),
                names,
                "Throughput at the router (Fig. 4)",
                f"fair-tl-{c['position']}",
                capacity_mbit=float(c["rate_mbit"]),
            )
        )
        cwnd = data.cwnd(run_id)
        if len(cwnd):
            out.append(cwnd_svg(cwnd, names, "Congestion window at the server (Fig. 5a)", f"fair-cw-{c['position']}"))
            w0, w1 = runs.loc[runs["run_id"] == run_id, ["window_start_s", "window_end_s"]].iloc[0]
            if w1 - w0 > 10:  # a 5-s zoom in the middle of the shared window, as Fig. 5b
                mid = (w0 + w1) / 2
                out.append(
                    cwnd_svg(
                        cwnd, names, "5-second zoom (Fig. 5b)", f"fair-cwz-{c['position']}", zoom=(mid - 2.5, mid + 2.5)
                    )
                )
    return "\n".join(out)


def fairness_section(store, analysis) -> Section | None:
    html = fairness_html(FairnessData(store, analysis.runs))
    return Section(id="fairness", title="Fairness (Kakhki Table 4, Fig. 4–5)", html=html) if html else None
