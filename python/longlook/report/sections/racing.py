"""Report section: a page-load experiment with a racing arm (QUIC-enabled, racing QUIC
against TCP as Chromium does) against its TCP-only arm, per cell: PLTs, verdict, how often
and how fast the racing client fell back, bytes over QUIC, time lost to a blocked handshake
(analyses/fallback/pageload.py computes the table)."""

from __future__ import annotations

import math
from html import escape

from ...render.html import Section


def _fmt(v, digits: int = 0) -> str:
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


def section(store, analysis) -> Section | None:
    # imported here: the fallback package pulls in its statistics for every report otherwise
    from ...analyses.fallback.pageload import compare_pageloads, race_arm_of, tcp_arm_of

    scenario = analysis.scenario
    quic_arm, tcp_arm = race_arm_of(scenario), tcp_arm_of(scenario)
    if scenario is None or quic_arm is None or tcp_arm is None or analysis.runs.empty:
        return None
    df = compare_pageloads(
        analysis.runs,
        analysis.cells,
        quic_arm=quic_arm,
        tcp_arm=tcp_arm,
        alpha=analysis.statistics.alpha,
        test=analysis.statistics.test,
        exclude_flagged=analysis.exclude_flagged,
    )
    head = (
        "<tr><th>cell</th><th>n</th><th>PLT QUIC-enabled (ms)</th><th>PLT TCP-only (ms)</th>"
        "<th>p</th><th>verdict</th><th>fell back</th><th>time to fallback, median (ms)</th>"
        "<th>TCP wait planned (ms)</th><th>bytes over QUIC</th><th>served h3 / h2 / mixed</th>"
        "<th>lost to blocked handshake (ms)</th></tr>"
    )
    body = "".join(
        f"<tr><td>{escape(str(r.pattern))}</td><td>{r.n_quic} / {r.n_tcp}</td><td>{_fmt(r.plt_quic_ms)}</td>"
        f"<td>{_fmt(r.plt_tcp_ms)}</td><td>{_fmt(r.p, 3)}</td><td>{escape(r.verdict)}</td>"
        f"<td>{_fmt(100 * r.fell_back_share)}%</td><td>{_fmt(r.time_to_fallback_ms_median)}</td>"
        f"<td>{_fmt(r.tcp_delay_ms_mean)}</td><td>{_fmt(100 * r.quic_share_mean)}%</td>"
        f"<td>{r.served_h3} / {r.served_h2} / {r.served_mixed}</td>"
        f"<td>{_fmt(r.lost_to_blocked_handshake_ms)}</td></tr>"
        for r in df.itertuples()
    )
    html = (
        f"<p>Arm <b>{escape(quic_arm)}</b> races QUIC against TCP as Chromium does; it is "
        f"counted as what served it (h3, h2 or mixed), never as h3. Compared with the TCP-only "
        f"arm <b>{escape(tcp_arm)}</b> (α = {analysis.statistics.alpha:g}). Time to fallback: start "
        f"to the first request given to TCP. Lost to a blocked handshake: mean PLT of the racing "
        f"runs that fell back − mean TCP-only PLT.</p><table>{head}{body}</table>"
    )
    return Section(id="racing", title="QUIC-enabled (racing) vs TCP-only", html=html)
