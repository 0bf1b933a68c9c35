"""Report section and verdicts: what the split-connection proxies did (Kakhki §5).

Each proxied cell is paired with its `proxy = "none"` twin (same link, workload, options;
the same two segments, the proxy namespace only forwarding). Per pair, the arm the proxy
carries (h2 through the TCP proxy, h3 through the QUIC proxy) is compared proxied vs direct
with the scenario's test; beside it, QUIC's gap to TCP in both cells.

The paper's findings become claims checked on those pairs:
- tcp_proxy: a TCP proxy shrinks TCP's gap to QUIC at low latency and under loss: in pairs
  at the scenario's lowest RTT or with loss, h2 through the proxy is faster than direct;
- quic_proxy_large_loss: an unoptimised QUIC proxy helps large objects under loss: at the
  largest object size with loss, h3 through the proxy is faster;
- quic_proxy_small: it hurts small objects (no 0-RTT through it): at the smallest size,
  h3 through the proxy is slower.
A claim is `reproduced` when at least half of its pairs support it significantly and none
contradicts it, `partly reproduced` when fewer do, `contradicted` when only contradicting
pairs are significant, `mixed` when both occur, `inconclusive` when none is significant.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape
from typing import Any

import pandas as pd

from ...core.stats import Verdict, compare_samples, percent_difference
from ...core.status import counted_runs
from ...render.html import Section
from .proxied import APPLIES

PAPER = {
    "tcp_proxy": "A TCP proxy shrinks TCP's gap to QUIC at low latency and under loss.",
    "quic_proxy_large_loss": "An unoptimised QUIC proxy helps large objects under loss.",
    "quic_proxy_small": "An unoptimised QUIC proxy hurts small objects (no 0-RTT through it).",
}


@dataclass
class ProxyEffect:
    """One proxied cell against its direct twin, for the arm the proxy carries."""

    cell_id: str
    direct_cell_id: str
    mode: str
    arm: str
    dims: dict[str, Any]
    n_proxied: int
    n_direct: int
    median_proxied_ms: float
    median_direct_ms: float
    change_pct: float  # (direct - proxied) / direct of the means: > 0 = the proxy helped
    p_value: float
    verdict: str  # "proxy faster" | "proxy slower" | "inconclusive" | "insufficient data"
    gap_direct_pct: float  # QUIC's % advantage over TCP (means) in the direct cell
    gap_proxied_pct: float  # ... in the proxied cell


def _key(dims: dict) -> tuple:
    return tuple(sorted((k, repr(v)) for k, v in dims.items() if k != "proxy"))


def _arm_of(scenario, protocol: str) -> str | None:
    return next((a.label for a in scenario.arms if a.protocol == protocol), None)


def proxy_effects(runs: pd.DataFrame, cells: pd.DataFrame, scenario, *, alpha: float = 0.01,
                  test: str = "welch", exclude_flagged: bool = True) -> list[ProxyEffect]:
    good = counted_runs(runs, "plt_ms", exclude_flagged=exclude_flagged)
    dims = dict(zip(cells["cell_id"], cells["dims"]))
    direct = {_key(d): cid for cid, d in dims.items() if d.get("proxy") == "none"}
    h3, h2 = _arm_of(scenario, "h3"), _arm_of(scenario, "h2")

    def plt(cid: str, arm: str | None) -> list[float]:
        if arm is None or good.empty:
            return []
        return list(good[(good["cell_id"] == cid) & (good["arm"] == arm)]["plt_ms"])

    def gap(cid: str) -> float:
        a, b = plt(cid, h3), plt(cid, h2)
        return percent_difference(a, b) if a and b else math.nan

    out = []
    for cid, d in dims.items():
        mode = d.get("proxy")
        twin = direct.get(_key(d))
        arm = _arm_of(scenario, APPLIES.get(mode, ""))
        if mode in (None, "none") or twin is None or arm is None:
            continue
        a, b = plt(cid, arm), plt(twin, arm)
        c = compare_samples(a, b, a_label="proxied", b_label="direct", cell_id=cid, alpha=alpha, test=test)
        verdict = {Verdict.A_FASTER: "proxy faster", Verdict.B_FASTER: "proxy slower"}.get(c.verdict, c.verdict_text)
        out.append(ProxyEffect(cid, twin, mode, arm, d, c.a.n, c.b.n, c.a.median, c.b.median,
                               c.percent_difference, c.p_value, verdict, gap(twin), gap(cid)))
    return out


@dataclass
class Claim:
    name: str
    paper: str
    pairs: int
    supporting: int
    contradicting: int
    verdict: str


def _claim(name: str, effects: list[ProxyEffect], support: str) -> Claim:
    against = "proxy slower" if support == "proxy faster" else "proxy faster"
    s = sum(e.verdict == support for e in effects)
    c = sum(e.verdict == against for e in effects)
    if s and not c:
        verdict = "reproduced" if 2 * s >= len(effects) else "partly reproduced"
    elif c and not s:
        verdict = "contradicted"
    elif s and c:
        verdict = "mixed"
    else:
        verdict = "inconclusive" if effects else "not measured"
    return Claim(name, PAPER[name], len(effects), s, c, verdict)


def proxy_claims(effects: list[ProxyEffect]) -> list[Claim]:
    """The paper's three proxy findings, each judged on the pairs it speaks of."""
    if not effects:
        return []
    low_rtt = min(e.dims.get("rtt_ms", 0) for e in effects)
    sizes = [e.dims.get("object_size") for e in effects if e.mode == "quic"]
    tcp = [e for e in effects if e.mode == "tcp" and (e.dims.get("rtt_ms") == low_rtt or (e.dims.get("loss") or 0) > 0)]
    large = [e for e in effects if e.mode == "quic" and (e.dims.get("loss") or 0) > 0
             and sizes and e.dims.get("object_size") == max(sizes)]
    small = [e for e in effects if e.mode == "quic" and sizes and e.dims.get("object_size") == min(sizes)]
    return [_claim("tcp_proxy", tcp, "proxy faster"),
            _claim("quic_proxy_large_loss", large, "proxy faster"),
            _claim("quic_proxy_small", small, "proxy slower")]


def proxy_section(store, analysis) -> Section | None:
    sc = analysis.scenario
    if sc is None or analysis.runs.empty or not any(m != "none" for m in getattr(sc, "proxy", ["none"])):
        return None
    st = analysis.statistics
    effects = proxy_effects(analysis.runs, analysis.cells, sc, alpha=st.alpha, test=st.test,
                            exclude_flagged=analysis.exclude_flagged)
    claims = proxy_claims(effects)
    parts = [f"<p>Each proxied cell against its direct twin (same link and workload; the direct "
             f"runs cross the proxy namespace unproxied). Change = (direct − proxied) / direct of "
             f"the mean PLT, {escape(st.test)} test, α = {st.alpha:g}. QUIC's gap = (TCP − QUIC) / TCP "
             f"of the mean PLT in the direct and the proxied cell.</p>",
             "<table><tr><th>finding (Kakhki §5)</th><th>pairs</th><th>supporting</th>"
             "<th>contradicting</th><th>verdict</th></tr>"]
    for c in claims:
        parts.append(f"<tr><td>{escape(c.paper)}</td><td>{c.pairs}</td><td>{c.supporting}</td>"
                     f"<td>{c.contradicting}</td><td><b>{escape(c.verdict)}</b></td></tr>")
    parts.append("</table><table><tr><th>link</th><th>workload</th><th>proxy</th><th>arm</th>"
                 "<th>median direct</th><th>median proxied</th><th>change</th><th>p</th><th>verdict</th>"
                 "<th>QUIC gap direct</th><th>QUIC gap proxied</th></tr>")
    for e in effects:
        parts.append(
            f"<tr><td>{escape(str(e.dims.get('link')))}</td><td>{escape(str(e.dims.get('workload')))}</td>"
            f"<td>{escape(e.mode)}</td><td>{escape(e.arm)}</td><td>{_ms(e.median_direct_ms)} (n={e.n_direct})</td>"
            f"<td>{_ms(e.median_proxied_ms)} (n={e.n_proxied})</td><td>{_pct(e.change_pct)}</td>"
            f"<td>{'n/a' if math.isnan(e.p_value) else f'{e.p_value:.2g}'}</td><td>{escape(e.verdict)}</td>"
            f"<td>{_pct(e.gap_direct_pct)}</td><td>{_pct(e.gap_proxied_pct)}</td></tr>")
    parts.append("</table>")
    return Section(id="proxies", title="Proxies (Kakhki §5)", html="\n".join(parts))


def _ms(v: float) -> str:
    return "n/a" if math.isnan(v) else f"{v:.0f} ms"


def _pct(v: float) -> str:
    return "n/a" if math.isnan(v) else f"{v:+.1f}%"
