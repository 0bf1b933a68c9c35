"""The regression gate on the real testbed: QUIC with the old MACW (107 packets) against the
current one (430) at 100 Mbit/s, 36 ms (BDP about 310 packets) is a page-load regression,
and `longlook compare` fails the gate. About 45 s of traffic."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from testbed_helpers import needs_testbed
from typer.testing import CliRunner

from longlook.cli import app
from longlook.core.execute import Runner
from longlook.kinds.pageload import Scenario

SCENARIO = """
name = "macw-gate"
rounds = 8                  # at 5, one round lost anywhere leaves no test that can reach 0.01
retries = 4
workloads = ["bulk:5m"]
# A MACW-107 load lasts ~1.4 s: at the default 5 ms limits this VM's 5-16 ms hypervisor
# stalls flagged three attempts of a round in a row on a fresh CI machine, and the gate
# rightly said "inconclusive: survivorship" on 2 of 5 rounds. A 20 ms stall is 1.5% of such
# a load against a +115% change; a starved machine (stalls over 20 ms) is still flagged.
# At 100 Mbit/s this VM releases 1-6% of packets over 1 ms late (9 of 24 runs over the
# default 1% in one run here): a few tenths of a ms on some packets of a 0.6-1.4 s load,
# against a +115% change.
[fidelity]
max_stall_ms = 20.0
max_release_late_ms = 20.0
max_late_release_share = 0.1
[[links]]
rate_mbit = 100
rtt_ms = 36
buffer_bytes = 450000   # a BDP: loss stays out of the picture, the cap is what binds
[options]
max_cwnd_packets = {macw}
"""


@needs_testbed("linkem", "endpoint")
def test_macw_107_against_430_is_a_regression_and_fails_the_gate(tmp_path: Path):
    for macw in (430, 107):
        summary = Runner(
            Scenario.from_toml(SCENARIO.format(macw=macw)), tmp_path / f"macw{macw}", link_check=False
        ).run()
        assert summary.ok >= 14 and not summary.interrupted  # flagged runs are measured again
    res = CliRunner().invoke(
        app,
        [
            "compare",
            str(tmp_path / "macw430"),
            str(tmp_path / "macw107"),
            "--vary",
            "max_cwnd_packets",
            "--metric",
            "plt_ms",
            "--junit",
            str(tmp_path / "gate.xml"),
        ],
    )
    print(res.output)
    assert res.exit_code == 1, res.output
    cases = {c.get("name"): c for c in ET.parse(tmp_path / "gate.xml").getroot().iter("testcase")}
    assert cases["h3 plt_ms"].find("failure") is not None
    assert "changed: max_cwnd_packets 430 -> 107" in res.output
