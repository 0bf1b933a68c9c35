"""Our client asked for the interop runner's key update and ChaCha20 cases (the matrix's
`client_case` arms for ours) against our server, judged from the run's decrypted capture as
the matrix judges every pair: the client starts a key update and the server follows;
ChaCha20-Poly1305 negotiated. And an unasked page load shows neither, so the checks cannot
pass by default. That page load is one small object: quinn updates its keys on its own after
a random 10 to 1000 packets, so a client sending many might start an update unasked (and the
case would rightly pass): the page load of 10 objects sends about 100, one of 1 KB about 15,
where the chance falls to about 0.6%. A few seconds of traffic."""

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
PLAIN = (
    SCENARIO.split("[[arms]]")[0].replace('name = "native-cases"', 'name = "native-plain"').replace("10x20k", "1x1k")
    + '[[arms]]\nlabel = "plain"\nprotocol = "h3"\nclient = "native"\n[[arms]]\nlabel = "h2"\nprotocol = "h2"\n'
)


@pytest.mark.skipif(shutil.which("tshark") is None, reason="needs tshark (scripts/setup.sh installs it)")
@needs_testbed("linkem", "endpoint")
def test_our_client_asked_for_key_update_and_chacha20_shows_them_on_the_wire(tmp_path: Path):
    verdicts = {}
    for name, scenario in {"asked": SCENARIO, "plain": PLAIN}.items():
        out = tmp_path / name
        summary = Runner(Scenario.from_toml(scenario), out, link_check=False).run()
        assert summary.ok == 2 and not summary.interrupted, summary
        with Store.open(out, read_only=True) as store:
            for _, r in store.runs_frame().iterrows():
                if r["arm"] != "h2":
                    verdicts[r["arm"]] = judge_cases(out, r.to_dict(), ("keyupdate", "chacha20"))
    assert verdicts["keyupdate"]["keyupdate"]["verdict"] == "passed", verdicts["keyupdate"]
    assert verdicts["chacha20"]["chacha20"]["verdict"] == "passed", verdicts["chacha20"]
    assert verdicts["plain"]["keyupdate"]["verdict"] == "failed", verdicts["plain"]
    assert verdicts["plain"]["chacha20"]["verdict"] == "failed", verdicts["plain"]
