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

Every pair goes through core.stats.compare_samples with both cells' completions (rounds of
the arm with a counted run, of those tried): a difference that does not survive the runs
that failed is "inconclusive: survivorship", never "proxy faster". With the scenario's
`holm` the pairs are Holm-corrected together (core.stats.holm_adjust), so with `holm = true`
the chance that any pair of an experiment where the proxy changes nothing says "proxy
faster" or "slower" is at most alpha; without it each pair is at alpha (18 identical pairs
of 3 rounds, lognormal load times, alpha 0.01: some pair significant in 10% of experiments
without Holm, in none of 400 with it; tests/calibration/test_proxy_effects.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape
from typing import Any

import pandas as pd

from ...core.stats import SURVIVORSHIP_ALPHA, Verdict, compare_samples, completions, holm_adjust, percent_difference
from ...core.status import counted_runs
from ...core.verdicts import verdict_producer
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
    # "proxy faster" | "proxy slower" | "inconclusive" | "insufficient data" |
    # "inconclusive: survivorship" | "not testable: ..."
    verdict: str
    gap_direct_pct: float  # QUIC's % advantage over TCP (means) in the direct cell
    gap_proxied_pct: float  # ... in the proxied cell
    p_adjusted: float = math.nan  # Holm's over the experiment's pairs (= p_value without holm)
    completion_proxied: str = ""  # rounds with a counted run of those tried, "k/n"
    completion_direct: str = ""
    reason: str = ""  # why a pair is not judged (survivorship, not testable)


def _key(dims: dict) -> tuple:
    return tuple(sorted((k, repr(v)) for k, v in dims.items() if k != "proxy"))


def _arm_of(scenario, protocol: str) -> str | None:
    return next((a.label for a in scenario.arms if a.protocol == protocol), None)


@verdict_producer("pageload.proxy_effects", "proxy faster / proxy slower per proxied cell and its direct twin")
def proxy_effects(
    runs: pd.DataFrame,
    cells: pd.DataFrame,
    scenario,
    *,
    alpha: float = 0.01,
    test: str = "welch",
    exclude_flagged: bool = True,
    holm: bool = False,
    survivorship_alpha: float = SURVIVORSHIP_ALPHA,
) -> list[ProxyEffect]:
    """Each proxied cell against its direct twin for the arm the proxy carries (the scenario's
    test at alpha, the arms' completions checked; Holm over the pairs with `holm`)."""
    good = counted_runs(runs, "plt_ms", exclude_flagged=exclude_flagged)
    done = completions(runs, good)
    dims = dict(zip(cells["cell_id"], cells["dims"]))
    direct = {_key(d): cid for cid, d in dims.items() if d.get("proxy") == "none"}
    h3, h2 = _arm_of(scenario, "h3"), _arm_of(scenario, "h2")

    values = {k: list(g) for k, g in good.groupby(["cell_id", "arm"])["plt_ms"]} if not good.empty else {}

    def plt(cid: str, arm: str | None) -> list[float]:
        return values.get((cid, arm), [])

    def gap(cid: str) -> float:
        a, b = plt(cid, h3), plt(cid, h2)
        return percent_difference(a, b) if a and b else math.nan

    pairs, comparisons = [], []
    for cid, d in dims.items():
        mode = d.get("proxy")
        twin = direct.get(_key(d))
        arm = _arm_of(scenario, APPLIES.get(mode, ""))
        if mode in (None, "none") or twin is None or arm is None:
            continue
        pairs.append((cid, twin, mode, arm, d))
        comparisons.append(
            compare_samples(
                plt(cid, arm),
                plt(twin, arm),
                a_label="proxied",
                b_label="direct",
                metric="plt_ms",
                cell_id=cid,
                alpha=alpha,
                test=test,
                completion_a=done.get((cid, arm)),
                completion_b=done.get((twin, arm)),
                survivorship_alpha=survivorship_alpha,
            )
        )
    if holm:
        comparisons = holm_adjust(comparisons)
    out = []
    for (cid, twin, mode, arm, d), c in zip(pairs, comparisons):
        verdict = {Verdict.A_FASTER: "proxy faster", Verdict.B_FASTER: "proxy slower"}.get(c.verdict, c.verdict_text)
        out.append(
            ProxyEffect(
                cid,
                twin,
                mode,
                arm,
                d,
                c.a.n,
                c.b.n,
                c.a.median,
                c.b.median,
                c.percent_difference,
                c.p_value,
                verdict,
                gap(twin),
                gap(cid),
                p_adjusted=c.p_adjusted,
                completion_proxied=str(c.completion_a or ""),
                completion_direct=str(c.completion_b or ""),
                reason=c.reason,
            )
        )
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
    large = [
        e
        for e in effects
        if e.mode == "quic" and (e.dims.get("loss") or 0) > 0 and sizes and e.dims.get("object_size") == max(sizes)
    ]
    small = [e for e in effects if e.mode == "quic" and sizes and e.dims.get("object_size") == min(sizes)]
    return [
        _claim("tcp_proxy", tcp, "proxy faster"),
        _claim("quic_proxy_large_loss", large, "proxy faster"),
        _claim("quic_proxy_small", small, "proxy slower"),
    ]


def proxy_section(store, analysis) -> Section | None:
    sc = analysis.scenario
    if sc is None or analysis.runs.empty or not any(m != "none" for m in getattr(sc, "proxy", ["none"])):
        return None
    st = analysis.statistics
    effects = proxy_effects(
        analysis.runs,
        analysis.cells,
        sc,
        alpha=st.alpha,
        test=st.test,
        exclude_flagged=analysis.exclude_flagged,
        holm=st.holm,
        survivorship_alpha=st.survivorship_alpha,
    )
    claims = proxy_claims(effects)
    parts = [
        f"<p>Each proxied cell against its direct twin (same link and workload; the direct "
        f"runs cross the proxy namespace unproxied). Change = (direct − proxied) / direct of "
        f"the mean PLT, {escape(st.test)} test, α = {st.alpha:g}"
        f"{', Holm over the ' + str(len(effects)) + ' pairs (p column: adjusted)' if st.holm else ''}; "
        f"n = rounds with a counted load (of those tried); a difference that does not survive the "
        f"failed loads is inconclusive (survivorship). QUIC's gap = (TCP − QUIC) / TCP "
        f"of the mean PLT in the direct and the proxied cell.</p>",
        "<table><tr><th>finding (Kakhki §5)</th><th>pairs</th><th>supporting</th>"
        "<th>contradicting</th><th>verdict</th></tr>",
    ]
    for c in claims:
        parts.append(
            f"<tr><td>{escape(c.paper)}</td><td>{c.pairs}</td><td>{c.supporting}</td>"
            f"<td>{c.contradicting}</td><td><b>{escape(c.verdict)}</b></td></tr>"
        )
    parts.append(
        "</table><table><tr><th>link</th><th>workload</th><th>proxy</th><th>arm</th>"
        "<th>median direct</th><th>median proxied</th><th>change</th><th>p</th><th>verdict</th>"
        "<th>QUIC gap direct</th><th>QUIC gap proxied</th></tr>"
    )
    for e in effects:
        p = e.p_adjusted if st.holm else e.p_value
        parts.append(
            f"<tr><td>{escape(str(e.dims.get('link')))}</td><td>{escape(str(e.dims.get('workload')))}</td>"
            f"<td>{escape(e.mode)}</td><td>{escape(e.arm)}</td>"
            f"<td>{_ms(e.median_direct_ms)} (n={e.completion_direct or e.n_direct})</td>"
            f"<td>{_ms(e.median_proxied_ms)} (n={e.completion_proxied or e.n_proxied})</td>"
            f"<td>{_pct(e.change_pct)}</td>"
            f"<td>{'n/a' if math.isnan(p) else f'{p:.2g}'}</td>"
            f"<td>{escape(e.verdict)}{'<br><small>' + escape(e.reason) + '</small>' if e.reason else ''}</td>"
            f"<td>{_pct(e.gap_direct_pct)}</td><td>{_pct(e.gap_proxied_pct)}</td></tr>"
        )
    parts.append("</table>")
    return Section(id="proxies", title="Proxies (Kakhki §5)", html="\n".join(parts))


def _ms(v: float) -> str:
    return "n/a" if math.isnan(v) else f"{v:.0f} ms"


def _pct(v: float) -> str:
    return "n/a" if math.isnan(v) else f"{v:+.1f}%"
