"""The HTML page of a comparison (BASE vs CAND) or a history: render's templates and
stylesheet (render/templates/compare.html.j2), with `Section`s like the report's own, so
a comparison can also be shown inside another page."""

from __future__ import annotations

import math
from datetime import datetime, timezone
from html import escape
from pathlib import Path
from typing import Sequence

from ...render.html import Section, environment
from .change import Comparison, Verdict
from .path_setup import differences_text


def _n(x: float | None, fmt: str = ",.1f") -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)


def _change(c) -> str:
    if math.isnan(c.change_pct) and not math.isnan(c.change):
        return f"{c.change:+.3g} {escape(c.unit)}"
    return f"{_n(c.change_pct, '+.1f')}%"


def comparison_section(comparison: Comparison) -> Section:
    """The per-cell table: one row per cell x arm x metric, regressions first."""
    s = comparison.settings
    order = {
        Verdict.REGRESSION: 0,
        Verdict.IMPROVEMENT: 1,
        Verdict.SURVIVORSHIP: 2,
        Verdict.NOT_TESTABLE: 2,
        Verdict.INSUFFICIENT: 2,
        Verdict.NO_CHANGE: 3,
    }
    rows = []
    for c in sorted(comparison.changes, key=lambda c: order[c.verdict]):
        css = c.verdict.name.lower()
        ci = "-" if math.isnan(c.ci_low) else f"[{c.ci_low:+.1f}, {c.ci_high:+.1f}]"
        rows.append(
            f'<tr class="{css}" data-verdict="{escape(c.verdict.value)}"><td class="mono">{escape(c.cell_id)}</td>'
            f"<td>{escape(c.arm)}</td><td>{escape(c.metric)} ({escape(c.unit)})</td>"
            f'<td class="num">{c.n_base} / {c.n_cand}</td>'
            f'<td class="num nowrap">{_n(c.mean_base)} &rarr; {_n(c.mean_cand)}</td>'
            f'<td class="num">{_change(c)}</td><td class="num nowrap">{ci}</td>'
            f'<td class="num">{"&lt;0.0001" if c.p_adjusted < 1e-4 else _n(c.p_adjusted, ".2g")}</td>'
            f"<td>{escape(c.verdict.value)}"
            f"{'<br><span class=note>' + escape(c.note) + '</span>' if c.note else ''}</td></tr>"
        )
    test = "Welch's t-test" if s.test == "welch" else "Mann-Whitney U"
    note = (
        f'<p class="note">% change = (CAND &minus; BASE) / BASE &times; 100 of the mean, per arm; '
        f"{s.confidence:.0%} interval (Fieller's for Welch, Moses' for Mann-Whitney); {test}, "
        f"{'Holm-corrected over all ' + str(len(comparison.changes)) + ' tests' if s.holm else 'no correction'}; "
        f"a change counts when p &lt; {s.alpha:g} and |change| &gt; {s.threshold_pct:g}%; "
        f"a completion row (where a side lost rounds): Fisher's exact test of the share of "
        f"rounds that ended with a counted run, in the same family.</p>"
    )
    table = (
        '<div class="scroll"><table class="data" id="changes"><thead><tr><th>cell</th><th>arm</th>'
        "<th>metric</th><th>n BASE / CAND</th><th>mean BASE &rarr; CAND</th><th>change</th><th>CI</th>"
        f"<th>p{' (Holm)' if s.holm else ''}</th><th>verdict</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table></div>"
    )
    return Section("changes", "Per cell", note + table)


def render_page(title: str, lead: str, summary: Sequence[tuple[str, str]], sections: Sequence[Section]) -> str:
    return (
        environment()
        .get_template("compare.html.j2")
        .render(
            title=title,
            lead=lead,
            summary=list(summary),
            sections=list(sections),
            generated=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        )
    )


def comparison_page(comparison: Comparison) -> str:
    b, c = comparison.base, comparison.cand
    counts = ", ".join(f"{v.value}: {comparison.count(v)}" for v in Verdict if comparison.count(v))
    summary = [
        ("BASE", f"{b.directory} ({b.experiment['id']}, started {b.started_at:%Y-%m-%d %H:%M} UTC)"),
        ("CAND", f"{c.directory} ({c.experiment['id']}, started {c.started_at:%Y-%m-%d %H:%M} UTC)"),
        *(
            (f"changed: {v['parameter']}", f"{', '.join(v['base'])} → {', '.join(v['cand'])}")
            for v in comparison.varied
        ),
        *(
            (
                (
                    "the path was made differently",
                    f"{differences_text(comparison.path_differs)}: a change may be the testbed's, not CAND's",
                ),
            )
            if comparison.path_differs
            else ()
        ),
        *(
            (
                (
                    "the scenarios differ outside their cells",
                    f"{differences_text(comparison.scenario_differs)}: a change may be the setting's, not CAND's",
                ),
            )
            if comparison.scenario_differs
            else ()
        ),
        ("verdicts", counts or "nothing compared"),
        ("gate", "FAILED: a regression" if comparison.regressed else "passed"),
    ]
    lead = f"{b.experiment['scenario_name']}: BASE vs CAND, {b.experiment['kind']} experiments"
    return render_page(f"compare {b.experiment['scenario_name']}", lead, summary, [comparison_section(comparison)])


def write_page(html: str, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(html)
    tmp.replace(path)
    return path


def history_page(h) -> str:
    """The history's page: the figure and one row per change point."""
    from .history_figure import history_svg

    rows = [
        f'<tr><td class="mono">{escape(s.cell_id)}</td><td>{escape(s.arm)}</td>'
        f"<td>{escape(h.sides[cp.index].directory.name)} ({h.sides[cp.index].started_at:%Y-%m-%d %H:%M})</td>"
        f'<td class="num nowrap">{_n(cp.before)} &rarr; {_n(cp.after)}</td>'
        f'<td class="num">{_n(cp.change_pct, "+.1f")}%</td><td class="num">{_n(cp.p, ".2g")}</td></tr>'
        for s in h.series
        for cp in s.change_points
    ]
    table = (
        (
            '<table class="data" id="change-points"><thead><tr><th>cell</th><th>arm</th>'
            "<th>first experiment after the change</th><th>mean before &rarr; after</th><th>change</th>"
            "<th>p</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
        )
        if rows
        else "<p>No change points.</p>"
    )
    note = (
        f'<p class="note">Mean {escape(h.metric.title or h.metric.name)} ({escape(h.metric.unit)}) of the '
        f"counted runs per experiment, in start-time order; dashed lines: change points found by "
        f"{escape(h.method())}, labelled with the change of the segment means.</p>"
        + "".join(
            f'<p class="warning">{escape(w)}</p>' for w in (h.warning(), h.path_warning(), h.scenario_warning()) if w
        )
    )
    sections = [
        Section("history", "Over the experiments", note + history_svg(h)),
        Section("change-points", "Change points", table),
    ]
    first = h.sides[0]
    summary = [
        ("experiments", f"{len(h.sides)}, {h.sides[0].started_at:%Y-%m-%d} to {h.sides[-1].started_at:%Y-%m-%d}"),
        ("change points", str(len(rows))),
    ]
    return render_page(
        f"history {first.experiment['scenario_name']}",
        f"{first.experiment['scenario_name']}: {len(h.sides)} experiments in time order",
        summary,
        sections,
    )
