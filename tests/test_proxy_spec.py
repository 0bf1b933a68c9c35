"""The proxy topology's scenario part: segments, their series, the proxy dimension, bad input."""

from __future__ import annotations

import pytest

from longlook.errors import LonglookError
from longlook.kinds.pageload import Scenario

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
    assert lossy.expected_loss("up") == pytest.approx(1 - 0.99 ** 2)
    cells = sc.cells()
    assert len(cells) == 2 * 3
    assert {c.dims()["proxy"] for c in cells} == {"none", "tcp", "quic"}
    assert all("|proxy=" in c.id for c in cells)
    assert cells[0].run_options(sc.arms[0]).proxy == "none"
    assert "seg=10ms@0.01+30ms@0.01" in cells[-1].link_label


def test_plain_scenarios_keep_their_cell_ids():
    sc = parse('[[links]]\nrate_mbit = 10\nrtt_ms = 20\n')
    assert all("proxy" not in c.id and "proxy" not in c.dims() for c in sc.cells())


@pytest.mark.parametrize("extra, words", [
    ('proxy = "tcp"\n[[links]]\nrate_mbit = 20\nlink_a = { rtt_ms = 10 }\n', "link_b is missing"),
    ('proxy = "quic"\n[[links]]\nrate_mbit = 20\nrtt_ms = 20\n', "links[0] has no segments"),
    ('proxy = "udp"\n' + SEGMENTED, "proxy"),
    (SEGMENTED + '[[links]]\nrate_mbit = 3\nrtt_ms = 20\n', "links[1]: has no segments"),
    ('[[links]]\nrate_mbit = 20\nlink_a = { rtt_ms = 10, jitter_ms = 2 }\nlink_b = { rtt_ms = 10 }\n',
     "links[0].link_a.jitter_ms: not supported"),
    ('proxy = "tcp"\nclient = "chromium"\n' + SEGMENTED, "native client"),
])
def test_bad_proxy_input_is_one_clear_error(extra, words):
    with pytest.raises(LonglookError) as e:
        parse(extra)
    assert words in e.value.message


def test_shipped_proxy_scenario_parses():
    from pathlib import Path

    from longlook.core.spec import load_scenario
    sc = load_scenario(Path(__file__).resolve().parents[1] / "scenarios" / "kakhki-proxy.toml")
    assert {c.dims()["proxy"] for c in sc.cells()} == {"none", "tcp", "quic"}
    assert all(link.segments for link in sc.links)
