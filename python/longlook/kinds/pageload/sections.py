"""Report section: the same cells through different page-load clients (the native endpoint
and headless Chromium). Shown when the scenario's arms use more than one client.

Per client, a QUIC-vs-TCP heatmap of its own h3 and h2 arms (the main heatmaps compare
every arm with the one baseline arm). Then, per protocol, each cell's median PLT under each
client and the ratio to the native client's (Chromium / native), so a browser's own
overheads (rendering, scheduling, its QUIC stack) are visible next to the protocol effect.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

import pandas as pd

from ...core.stats import CellComparison, compare_cells, options
from ...core.status import counted_runs
from ...render.html import Section
from ...render.palette import cell_colors

REFERENCE_CLIENT = "native"


@dataclass(frozen=True)
class ClientArm:
    label: str
    client: str
    protocol: str


def client_arms(scenario) -> list[ClientArm]:
    return [ClientArm(a.label, a.client or scenario.client, a.protocol) for a in scenario.arms]


def arm_for(arms: list[ClientArm], client: str, protocol: str) -> str | None:
    """The first arm running `protocol` with `client` (arms are in scenario order)."""
    return next((a.label for a in arms if a.client == client and a.protocol == protocol), None)


def plt_ratios(runs: pd.DataFrame, cell_ids: list[str], arm: str, reference_arm: str) -> list[dict]:
    """Per cell: median PLT of `arm` and of `reference_arm` over usable runs, their ratio."""
    good = counted_runs(runs, "plt_ms")
    rows = []
    for cid in cell_ids:
        a = good[(good["cell_id"] == cid) & (good["arm"] == arm)]["plt_ms"]
        b = good[(good["cell_id"] == cid) & (good["arm"] == reference_arm)]["plt_ms"]
        med_a = float(a.median()) if len(a) else math.nan
        med_b = float(b.median()) if len(b) else math.nan
        ratio = med_a / med_b if len(a) and len(b) and med_b > 0 else math.nan
        rows.append(
            {
                "cell_id": cid,
                "median_ms": med_a,
                "n": len(a),
                "reference_median_ms": med_b,
                "reference_n": len(b),
                "ratio": ratio,
            }
        )
    return rows


def clients_section(store, analysis) -> Section | None:
    scenario = analysis.scenario
    if scenario is None or analysis.runs.empty:
        return None
    arms = client_arms(scenario)
    clients = list(dict.fromkeys(a.client for a in arms))
    if len(clients) < 2:
        return None
    cells = analysis.cells
    cell_ids = list(cells["cell_id"])
    dims = {cid: d for cid, d in zip(cells["cell_id"], cells["dims"])}
    st = analysis.statistics
    parts = [
        "<p>The same cells loaded by each client. Heatmaps: QUIC (h3) vs TCP (h2) "
        "within one client, % difference = (TCP − QUIC) / TCP of the mean PLT, coloured "
        "only where significant. Ratios: median PLT of a client over the native "
        f"client's, same protocol and cell (n = usable runs; α = {st.alpha:g}).</p>"
    ]
    for client in clients:
        h3, h2 = arm_for(arms, client, "h3"), arm_for(arms, client, "h2")
        if not (h3 and h2):
            continue
        comps = compare_cells(
            analysis.runs,
            [(h3, h2)],
            cell_ids=cell_ids,
            **options(
                st, metric=analysis.metric, timeout_s=scenario.timeout_s, exclude_flagged=analysis.exclude_flagged
            ),
        )
        parts.append(f"<h3>{escape(client)}: QUIC vs TCP ({escape(h3)} vs {escape(h2)})</h3>")
        parts.append(_heatmap_table(comps, dims))
    reference = REFERENCE_CLIENT if REFERENCE_CLIENT in clients else clients[0]
    for protocol in ("h3", "h2"):
        ref_arm = arm_for(arms, reference, protocol)
        others = [(c, arm_for(arms, c, protocol)) for c in clients if c != reference]
        others = [(c, a) for c, a in others if a]
        if not ref_arm or not others:
            continue
        parts.append(f"<h3>PLT ratio to {escape(reference)}, {escape(protocol)}</h3>")
        parts.append(_ratio_table(analysis.runs, cell_ids, dims, reference, ref_arm, others))
    return Section(id="clients", title="Clients compared", html="\n".join(parts))


def _cell_name(d: dict) -> str:
    return f"{d.get('link', '')} · {d.get('workload', '')}"


def _heatmap_table(comps: list[CellComparison], dims: dict) -> str:
    """Rows = links, columns = workloads, as in the paper's heatmaps."""
    links = list(dict.fromkeys(dims[c.cell_id].get("link") for c in comps))
    workloads = list(dict.fromkeys(dims[c.cell_id].get("workload") for c in comps))
    by = {}
    for c in comps:
        by.setdefault((dims[c.cell_id].get("link"), dims[c.cell_id].get("workload")), []).append(c)
    head = "".join(f"<th>{escape(str(w))}</th>" for w in workloads)
    rows = []
    for link in links:
        tds = []
        for w in workloads:
            found = by.get((link, w))
            if not found or len(found) > 1:  # several option combos: see the table below
                tds.append("<td>–</td>" if not found else f"<td>{len(found)} cells</td>")
                continue
            c = found[0]
            bg, fg = cell_colors(c.verdict, c.percent_difference)
            diff = "n/a" if math.isnan(c.percent_difference) else f"{c.percent_difference:+.1f}%"
            p = "p n/a" if math.isnan(c.p_adjusted) else f"p={c.p_adjusted:.2g}"
            tds.append(
                f'<td style="background:{bg};color:{fg}" title="{escape(c.cell_id)}">'
                f"{diff}<br><small>{escape(c.verdict_text)}, {p}, n={c.a.n}/{c.b.n}</small></td>"
            )
        rows.append(f"<tr><th>{escape(str(link))}</th>{''.join(tds)}</tr>")
    return f'<table class="heatmap"><tr><th></th>{head}</tr>{"".join(rows)}</table>'


def _ratio_table(runs, cell_ids, dims, reference: str, ref_arm: str, others: list[tuple[str, str]]) -> str:
    ref = escape(reference)
    head = (
        f"<tr><th>cell</th><th>{ref} median PLT</th>"
        + "".join(f"<th>{escape(c)} median PLT</th><th>{escape(c)} / {ref}</th>" for c, _ in others)
        + "</tr>"
    )
    ratios = {c: {r["cell_id"]: r for r in plt_ratios(runs, cell_ids, a, ref_arm)} for c, a in others}
    rows = []
    for cid in cell_ids:
        first = next(iter(ratios.values()))[cid]
        tds = [f"<td>{_ms(first['reference_median_ms'])} (n={first['reference_n']})</td>"]
        for c, _ in others:
            r = ratios[c][cid]
            ratio = "n/a" if math.isnan(r["ratio"]) else f"{r['ratio']:.2f}×"
            tds.append(f"<td>{_ms(r['median_ms'])} (n={r['n']})</td><td>{ratio}</td>")
        rows.append(f'<tr><th title="{escape(cid)}">{escape(_cell_name(dims[cid]))}</th>{"".join(tds)}</tr>')
    return f'<table class="ratios">{head}{"".join(rows)}</table>'


def _ms(v: float) -> str:
    return "n/a" if math.isnan(v) else f"{v:.0f} ms"
