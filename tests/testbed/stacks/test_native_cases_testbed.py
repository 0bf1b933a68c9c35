"""Our client asked for the interop runner's key update and ChaCha20 cases (the matrix's
`client_case` arms for ours) against our server, judged from the run's decrypted capture as
the matrix judges every pair: key phase 1 from both sides; ChaCha20-Poly1305 negotiated. And
an unasked page load of the same run shows neither, so the checks cannot pass by default.
A few seconds of traffic."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from testbed_helpers import needs_testbed

from longlook.analyses.wire_runs import judge_cases
from longlook.core.execute import Runner
from longlook.core.store import Store
from longlook.kinds.pageload import Scenario

SCENARIO = """
name = "native-cases"
rounds = 1
workloads = ["10x20k"]
retries = 1
[[links]]
rate_mbit = 20
rtt_ms = 20
[options]
zero_rtt = false
[fidelity]
exclude_flagged = false
[capture]
pcap = "full"
keylog = true
[[arms]]
label = "plain"
protocol = "h3"
[[arms]]
label = "keyupdate"
protocol = "h3"
client = "native"
client_case = "keyupdate"
[[arms]]
label = "chacha20"
protocol = "h3"
client = "native"
client_case = "chacha20"
"""


@pytest.mark.skipif(shutil.which("tshark") is None, reason="needs tshark (scripts/setup.sh installs it)")
@needs_testbed("linkem", "endpoint")
def test_our_client_asked_for_key_update_and_chacha20_shows_them_on_the_wire(tmp_path: Path):
    out = tmp_path / "x"
    summary = Runner(Scenario.from_toml(SCENARIO), out, link_check=False).run()
    assert summary.ok == 3 and not summary.interrupted, summary
    with Store.open(out, read_only=True) as store:
        runs = {r["arm"]: r.to_dict() for _, r in store.runs_frame().iterrows()}
    verdicts = {arm: judge_cases(out, run, ("keyupdate", "chacha20")) for arm, run in runs.items()}
    assert verdicts["keyupdate"]["keyupdate"]["verdict"] == "passed", verdicts["keyupdate"]
    assert verdicts["chacha20"]["chacha20"]["verdict"] == "passed", verdicts["chacha20"]
    assert verdicts["plain"]["keyupdate"]["verdict"] == "failed", verdicts["plain"]
    assert verdicts["plain"]["chacha20"]["verdict"] == "failed", verdicts["plain"]
