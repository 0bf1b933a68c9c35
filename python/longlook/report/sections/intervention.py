"""Report section: an interventional fallback experiment (a video scenario with
[intervention]): the average treatment effect of the randomised QUIC break on QoE, bitrate
and stall time, beside the Granger verdicts of the same sessions
(analyses/fallback/intervention.py computes both)."""

from __future__ import annotations

import math
from html import escape

from ...errors import LonglookError
from ...render.html import Section


def _f(v, digits: int = 3) -> str:
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}g}"


def _pct(v) -> str:
    return "–" if v is None or v != v else f"{v:.0%}"


def section(store, analysis) -> Section | None:
    if getattr(analysis.scenario, "intervention", None) is None:
        return None
    from ...analyses.fallback.intervention import analyze_intervention

    try:
        result = analyze_intervention(store.directory, include_flagged=not analysis.exclude_flagged)
    except LonglookError as e:
        return Section(
            id="intervention", title="Fallback by experiment (ATE)", html=f"<p>Not computed: {escape(e.message)}</p>"
        )
    s = result.summary
    head = (
        "<tr><th>scope</th><th>outcome</th><th>n treated / control</th><th>mean treated</th>"
        "<th>mean control</th><th>ATE</th><th>interval</th><th>p</th><th>verdict</th></tr>"
    )
    body = "".join(
        f"<tr><td>{escape(str(r.scope))}</td><td>{escape(r.metric)}</td><td>{r.n_treated} / {r.n_control}</td>"
        f"<td>{_f(r.mean_treated)}</td><td>{_f(r.mean_control)}</td><td>{_f(r.ate)}</td>"
        f"<td>[{_f(r.ci_low)}, {_f(r.ci_high)}]</td><td>{_f(r.p, 2)}</td><td>{escape(r.verdict)}</td></tr>"
        for r in result.effects.itertuples()
    )
    g = s["granger"]["treated"]
    html = (
        f"<p>In each cell a seeded random half of the QUIC-enabled sessions had QUIC broken from a "
        f"random onset (treated), the others not (control); {escape(s['estimator'])}. Treated "
        f"{s['treated']} ({s['compliance']['treated_fell_back']} fell back), control {s['control']} "
        f"({s['compliance']['control_fell_back']} fell back).</p><table>{head}{body}</table>"
        f"<p>Granger on the treated sessions (α = {s['alpha']:g}): F → B or S in "
        f"{_pct(g['granger_either_share'])} of {g['tested_either']} tested ({g['suitable']} suitable). "
        f"<b>Observational vs interventional:</b> {escape(s['agreement'])}.</p>"
    )
    return Section(id="intervention", title="Fallback by experiment (ATE)", html=html)
