"""The proxy topology's scenario part: segments, their series, the proxy dimension, bad input."""

from __future__ import annotations

import pytest

from longlook.errors import LonglookError
from longlook.kinds.pageload import Scenario
from repo_paths import ROOT

BASE = """
name = "p"
workloads = ["bulk:1m"]
{extra}
"""

SEGMENTED = """
[[links]]
rate_mbit = 20
loss = [0.0, 0.01]
link_a = { rtt_ms = 10 }
link_b = { rtt_ms = 30, rate_mbit = 5 }
"""


def parse(extra: str) -> Scenario:
    return Scenario.from_toml(BASE.format(extra=extra))


def test_segments_become_their_series_and_proxy_is_a_cell_dimension():
    sc = parse('proxy = ["none", "tcp", "quic"]\n' + SEGMENTED)
    assert len(sc.links) == 2
    lossy = sc.links[1]
    a, b = lossy.segments
    assert (a.rtt_ms(), b.rtt_ms()) == (10, 30)
    assert lossy.rtt_ms() == 40  # delays add up
    assert lossy.resolved("down").rate_mbit == 5  # the slower segment
    assert lossy.expected_loss("up") == pytest.approx(1 - 0.99**2)
    cells = sc.cells()
    assert len(cells) == 2 * 3
    assert {c.dims()["proxy"] for c in cells} == {"none", "tcp", "quic"}
    assert all("|proxy=" in c.id for c in cells)
    assert cells[0].run_options(sc.arms[0]).proxy == "none"
    assert "seg=10ms@0.01+30ms@0.01" in cells[-1].link_label


def test_plain_scenarios_keep_their_cell_ids():
    sc = parse("[[links]]\nrate_mbit = 10\nrtt_ms = 20\n")
    assert all("proxy" not in c.id and "proxy" not in c.dims() for c in sc.cells())


@pytest.mark.parametrize(
    "extra, words",
    [
        ('proxy = "tcp"\n[[links]]\nrate_mbit = 20\nlink_a = { rtt_ms = 10 }\n', "link_b is missing"),
        ('proxy = "quic"\n[[links]]\nrate_mbit = 20\nrtt_ms = 20\n', "links[0] has no segments"),
        ('proxy = "udp"\n' + SEGMENTED, "proxy"),
        (SEGMENTED + "[[links]]\nrate_mbit = 3\nrtt_ms = 20\n", "links[1]: has no segments"),
        (
            "[[links]]\nrate_mbit = 20\nlink_a = { rtt_ms = 10, jitter_ms = 2 }\nlink_b = { rtt_ms = 10 }\n",
            "links[0].link_a.jitter_ms: not supported",
        ),
        ('proxy = "tcp"\nclient = "chromium"\n' + SEGMENTED, "native client"),
    ],
)
def test_bad_proxy_input_is_one_clear_error(extra, words):
    with pytest.raises(LonglookError) as e:
        parse(extra)
    assert words in e.value.message


def test_shipped_proxy_scenario_parses():
    from longlook.core.spec import load_scenario

    sc = load_scenario(ROOT / "scenarios" / "kakhki-proxy.toml")
    assert {c.dims()["proxy"] for c in sc.cells()} == {"none", "tcp", "quic"}
    assert all(link.segments for link in sc.links)


# --- the section's verdicts: the scenario's holm, and the runs that did not complete ---

DIRECT = [1000.0, 1040.0, 980.0, 1100.0, 1060.0, 950.0, 1020.0, 990.0, 1080.0, 1010.0]


def _analysis(holm: bool, proxied_h2: dict[int, float | None], link: str = "loss=0,"):
    """The segmented grid's analysis, 10 rounds: every arm of every cell loads in DIRECT's
    times (in reverse in proxied cells) except the h2 arm of the TCP-proxied cell on the
    link whose label has `link`, whose round r takes proxied_h2[r] (None: timed out)."""
    import types

    import pandas as pd

    sc = parse(f'proxy = ["none", "tcp", "quic"]\nrounds = 10\n[statistics]\nholm = {str(holm).lower()}\n' + SEGMENTED)
    rows = []
    for c in sc.cells():
        d = c.dims()
        for arm in ("h3", "h2"):
            for r in range(10):
                v = DIRECT[r] if d["proxy"] == "none" else DIRECT[9 - r]
                if d["proxy"] == "tcp" and arm == "h2" and link in d["link"]:
                    v = proxied_h2.get(r, v)
                rows.append(
                    {
                        "cell_id": c.id,
                        "arm": arm,
                        "round": r,
                        "attempt": 1,
                        "status": "ok" if v is not None else "timeout",
                        "protocol_requested": arm,
                        "protocol_negotiated": arm if v is not None else None,
                        "plt_ms": v,
                    }
                )
    cells = pd.DataFrame({"cell_id": [c.id for c in sc.cells()], "dims": [c.dims() for c in sc.cells()]})
    return types.SimpleNamespace(
        scenario=sc, runs=pd.DataFrame(rows), cells=cells, statistics=sc.statistics, exclude_flagged=True
    )


def _tcp_effect(analysis):
    from longlook.kinds.pageload.proxy_section import proxy_effects

    st = analysis.statistics
    effects = proxy_effects(
        analysis.runs,
        analysis.cells,
        analysis.scenario,
        alpha=st.alpha,
        test=st.test,
        holm=st.holm,
        survivorship_alpha=st.survivorship_alpha,
    )
    assert len(effects) == 4
    return next(e for e in effects if e.mode == "tcp" and "loss=0," in e.dims["link"])


def test_the_scenario_s_holm_is_honoured_by_the_section():
    """One of the 4 pairs is 6.5% faster through the proxy (Welch p = 0.0042 < 0.01); with
    `holm = true` its adjusted p is 4 x 0.0042 = 0.017: inconclusive, in the table and the
    claims (the section ignored the option before and said "proxy faster")."""
    from longlook.kinds.pageload.proxy_section import proxy_section

    faster = {r: 0.935 * DIRECT[9 - r] for r in range(10)}
    e = _tcp_effect(_analysis(False, faster))
    assert e.verdict == "proxy faster" and e.p_value == pytest.approx(0.00424, rel=1e-2)
    held = _analysis(True, faster)
    e = _tcp_effect(held)
    assert e.verdict == "inconclusive" and e.p_adjusted == pytest.approx(4 * e.p_value)
    html = proxy_section(None, held).html
    assert "Holm over the 4 pairs" in html and "proxy faster" not in html


def test_a_proxy_that_only_seems_faster_because_its_slow_loads_failed_is_survivorship():
    """Through the TCP proxy the 3 slowest of 10 loads time out, the 7 that finish are 10%
    faster than direct's fastest 7: over the survivors "proxy faster" (p < 0.01); with the 3
    missing loads at their worst, not: "inconclusive: survivorship", completions 7/10
    against 10/10 in the table."""
    from longlook.kinds.pageload.proxy_section import proxy_section

    survivors = {r: 0.9 * v for r, v in enumerate(sorted(DIRECT)[:7])} | {7: None, 8: None, 9: None}
    analysis = _analysis(False, survivors)
    e = _tcp_effect(analysis)
    assert e.p_value < 0.01 and e.n_proxied == 7
    assert e.verdict == "inconclusive: survivorship"
    assert (e.completion_proxied, e.completion_direct) == ("7/10", "10/10")
    assert "the 3 missing proxied runs were the slowest" in e.reason
    html = proxy_section(None, analysis).html
    assert "n=7/10" in html and "inconclusive: survivorship" in html
