"""The video section of the report: per cell, QUIC vs TCP on every QoE metric with the
core's statistics (the core's heatmaps compare only the primary metric, the QoE), and one
run's timeline per arm and cell (Chaudhary Fig. 4-5)."""

from __future__ import annotations

import math
from html import escape

import pandas as pd

from ...core.stats import compare_cells, options
from ...errors import LonglookError
from ...render.layout import DIM_TITLES
from ...core.status import counted_mask, counted_runs
from ...render.html import Section
from .figures import timeline_svg
from .qoe import QOE_METRICS

# Titles for this kind's heatmap axes (the report shell falls back to the dimension's name).
for _dim, _title in (("player", "player"), ("abr", "ABR rule"), ("video_s", "clip (s)"), ("segment_s", "segment (s)")):
    DIM_TITLES.setdefault(_dim, _title)


def _num(x, fmt="{:.2f}") -> str:
    return "–" if x is None or (isinstance(x, float) and not math.isfinite(x)) else fmt.format(x)


def verdict_table(analysis) -> pd.DataFrame:
    """One row per (cell, metric): n, means, % difference, p, verdict (QUIC vs TCP), with
    the core's comparison (a metric such as stall time is often 0 on the baseline: then
    there is no % difference, the test still runs and `diff` gives the change in seconds)."""
    st, runs, sc = analysis.statistics, analysis.runs, analysis.scenario
    rows = []
    for m in QOE_METRICS:
        if m.name not in runs:
            continue
        comps = compare_cells(
            runs,
            analysis.pairs,
            cell_ids=list(analysis.cells["cell_id"]),
            better_word="better",
            **options(st, metric=m, timeout_s=sc.timeout_s if sc else None, exclude_flagged=analysis.exclude_flagged),
        )
        rows += [{**c.as_row(), "metric": m.name, "title": m.label} for c in comps]
    return pd.DataFrame(rows)


def _table_html(t: pd.DataFrame) -> str:
    body = []
    for cell_id, g in t.groupby("cell_id", sort=False):
        for i, r in enumerate(g.itertuples()):
            head = f"<td rowspan='{len(g)}'>{escape(str(cell_id))}</td>" if i == 0 else ""
            body.append(
                f"<tr>{head}<td>{escape(r.title)}</td>"
                f"<td class='num'>{_num(r.mean_a)} ({_num(r.sd_a)}) n={r.n_a}</td>"
                f"<td class='num'>{_num(r.mean_b)} ({_num(r.sd_b)}) n={r.n_b}</td>"
                f"<td class='num'>{_num(r.percent_difference, '{:+.1f}')}%</td>"
                f"<td class='num'>{_num(r.p_value, '{:.3g}')}</td><td>{escape(r.verdict_text)}</td></tr>"
            )
    a, b = t["a"].iloc[0], t["b"].iloc[0]
    return (
        "<table class='data'><thead><tr><th>cell</th><th>metric</th>"
        f"<th>{escape(a)} mean (sd)</th><th>{escape(b)} mean (sd)</th><th>difference</th>"
        "<th>p</th><th>verdict</th></tr></thead><tbody>" + "".join(body) + "</tbody></table>"
    )


def players_table(analysis) -> pd.DataFrame:
    """The native player against dash.js on the same link, rule and protocol: mean of each
    QoE metric per player over the runs that count, and their difference."""
    cells = pd.DataFrame([{"cell_id": c, **d} for c, d in zip(analysis.cells["cell_id"], analysis.cells["dims"])])
    if cells.empty or cells.get("player", pd.Series(dtype=str)).nunique() < 2:
        return pd.DataFrame()
    rows = []
    for m in QOE_METRICS:
        if m.name not in analysis.runs:
            continue
        good = counted_runs(analysis.runs, m.name, exclude_flagged=analysis.exclude_flagged)
        # the runs frame may carry details of the same names (player, abr): prefix the cell's
        dims = cells[["cell_id", "link", "abr", "player"]].rename(
            columns={"link": "c_link", "abr": "c_abr", "player": "c_player"}
        )
        good = good.merge(dims, on="cell_id")
        means = good.groupby(["c_link", "c_abr", "arm", "c_player"])[m.name].agg(["mean", "count"]).reset_index()
        wide = means.pivot_table(index=["c_link", "c_abr", "arm"], columns="c_player", values=["mean", "count"])
        for key, r in wide.iterrows():
            nat, dj = r.get(("mean", "native")), r.get(("mean", "dashjs"))
            rows.append(
                {
                    "link": key[0],
                    "abr": key[1],
                    "arm": key[2],
                    "metric": m.label,
                    "native": nat,
                    "dashjs": dj,
                    "n_native": r.get(("count", "native")),
                    "n_dashjs": r.get(("count", "dashjs")),
                    "difference": nat - dj,
                }
            )
    return pd.DataFrame(rows)


def _players_html(analysis) -> str:
    t = players_table(analysis)
    if t.empty:
        return ""
    body = "".join(
        f"<tr><td>{escape(str(r.link))}</td><td>{escape(str(r.abr))}</td><td>{escape(str(r.arm))}</td>"
        f"<td>{escape(r.metric)}</td><td class='num'>{_num(r.native)}</td>"
        f"<td class='num'>{_num(r.dashjs)}</td><td class='num'>{_num(r.difference, '{:+.2f}')}</td></tr>"
        for r in t.itertuples()
    )
    return (
        "<p>The native player against dash.js in Chromium on the same link, ABR rule and "
        "protocol (means over the runs that count): how far the CPU-light player's figures "
        "are from the browser's.</p><table class='data'><thead><tr><th>link</th><th>abr</th>"
        "<th>arm</th><th>metric</th><th>native</th><th>dash.js</th><th>native − dash.js</th>"
        "</tr></thead><tbody>" + body + "</tbody></table>"
    )


def video_section(store, analysis) -> Section | None:
    runs = analysis.runs
    if runs.empty or analysis.kind is None or analysis.kind.name != "video":
        return None
    out = [
        "<p>Pensieve's QoE as Chaudhary et al. use it: mean bitrate of the segments played − "
        "mean bitrate change between consecutive segments − 4.3 × stall seconds per segment "
        "(Mbit/s, s; start-up delay reported apart). Mean (sd) over the runs that count; "
        "difference relative to |baseline mean| (positive = the first arm better).</p>"
    ]
    t = verdict_table(analysis)
    if not t.empty:
        out.append(_table_html(t))
    agreement = _players_html(analysis)
    if agreement:
        out.append(agreement)
    starved = [r for r in runs.itertuples() if "CPU-starved" in str(getattr(r, "audit_reasons", "") or "")]
    if starved:
        out.append(
            f"<p class='note'>{len(starved)} run(s) flagged as CPU-starved players: "
            + "; ".join(escape(f"{r.run_id}: {r.audit_reasons}") for r in starved)
            + "</p>"
        )
    counted = runs[counted_mask(runs, exclude_flagged=analysis.exclude_flagged)]
    settled_ok = runs[runs["status"] == "ok"]
    try:
        requests = store.table("requests")
    except LonglookError:
        requests = pd.DataFrame()
    for position, cell_id in enumerate(analysis.cells["cell_id"]):
        for arm in analysis.runs.loc[analysis.runs["cell_id"] == cell_id, "arm"].drop_duplicates():
            # the run with the median QoE of its arm among those that count, else among the
            # ok ones (flagged by their path audit: said so in the title)
            note = ""
            g = counted[(counted["cell_id"] == cell_id) & (counted["arm"] == arm)]
            if g.empty:
                g, note = settled_ok[(settled_ok["cell_id"] == cell_id) & (settled_ok["arm"] == arm)], ", not counted"
            g = g.dropna(subset=["qoe"]).sort_values("qoe") if "qoe" in g else g
            if g.empty:
                continue
            run = g.iloc[len(g) // 2]
            req = requests[requests["run_id"] == run["run_id"]] if len(requests) else requests
            out.append(
                timeline_svg(
                    store.series(run["run_id"]),
                    req,
                    f"{cell_id} · {arm} · run {run['run_id']} (median QoE{note})",
                    f"video-tl-{position}-{escape(str(arm))}",
                )
            )
    return Section(id="video", title="Video QoE (Kakhki §5, Chaudhary Fig. 4–5)", html="\n".join(out))


video_sections = (video_section,)
