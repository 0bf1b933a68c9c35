"""The report's statement of the adaptive-rounds rule, with each cell's rounds: which rule
stopped the cells, how many rounds each got, and the precision each reached."""

from __future__ import annotations

import math
from html import escape

from ...report.sections import Section
from ...core.adaptive import describe, rule_metric, stopping_decision


def adaptive_section(store, analysis) -> Section | None:
    sc = analysis.scenario
    rule = getattr(sc, "adaptive_rounds", None) if sc is not None else None
    if rule is None or analysis.runs.empty:
        return None
    metric = rule_metric(rule, analysis.kind)
    pairs = sc.comparisons()
    rows = []
    for cell_id in analysis.cells["cell_id"]:
        runs = analysis.runs[analysis.runs["cell_id"] == cell_id]
        if runs.empty:
            continue
        d = stopping_decision(runs, rule, pairs, metric, confidence=sc.statistics.confidence,
                              exclude_flagged=analysis.exclude_flagged)
        hw = "-" if math.isnan(d.halfwidth_pct) else f"&plusmn;{d.halfwidth_pct:.1f}%"
        state = "stopped: " + d.reason if not d.more else "unfinished: " + d.reason
        rows.append(f'<tr><td class="mono">{escape(cell_id)}</td><td class="num">{d.rounds}</td>'
                    f'<td class="num">{hw}</td><td>{escape(state)}</td></tr>')
    note = (f'<p class="note">{escape(describe(rule))}. The interval is computed blinded, from the spread '
            f"of both arms' counted {escape(metric)} values pooled, so when a cell stops says nothing about "
            f"which arm is ahead; the test at the end keeps its false-positive rate (simulated: at or below "
            f"alpha). Target: &plusmn;{rule.target_halfwidth_pct:g}%.</p>")
    table = ('<table class="data"><thead><tr><th>cell</th><th>rounds</th><th>half-width reached</th>'
             "<th>state</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>")
    return Section("adaptive-rounds", "Adaptive rounds", note + table)
