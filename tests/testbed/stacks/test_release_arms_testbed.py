"""Releases as arms through the real testbed: a fairness matchup run on two
quinn-proto releases of our endpoint, back to back in one round; each run records the build
it ran and its flows carried traffic."""

from __future__ import annotations

import json
from pathlib import Path

from testbed_helpers import needs_testbed

from longlook.core.execute import Runner
from longlook.core.store import Store
from longlook.kinds.fairness import FairnessScenario

RELEASES = ("0.11.14", "0.11.19")
TWO_RELEASES = f"""
kind = "fairness"
name = "fairness-two-releases"
rounds = 1
duration_s = 5
versions = {json.dumps([f"ours@{v}" for v in RELEASES])}
[link]
rate_mbit = 10
rtt_ms = 36
buffer_bytes = 45000
[[matchups]]
quic = 1
tcp = 1
"""


@needs_testbed("linkem", "endpoint")
def test_a_fairness_matchup_runs_on_two_quinn_releases_and_records_each_build(tmp_path: Path):
    out = tmp_path / "exp"
    sc = FairnessScenario.from_toml(TWO_RELEASES)
    # the link self-check has its own tests; a busy machine's RTT must not fail this one
    summary = Runner(sc, out, link_check=False).run()  # builds a release not yet built (once)
    assert summary.ok == summary.runs >= 2 and summary.runs - 2 <= summary.flagged
    with Store.open(out, read_only=True) as store:
        runs = store.runs_frame()
        flows = store.table("flows")
        versions = store.experiment()["versions"]
    last = runs.sort_values("attempt").groupby("arm").tail(1).set_index("arm")
    assert sorted(last.index) == [f"flows-{v}" for v in RELEASES]
    for v in RELEASES:
        run = last.loc[f"flows-{v}"]
        assert run["status"] == "ok", run["error"]
        options = json.loads(run["options"]) if isinstance(run["options"], str) else run["options"]
        assert options == {"server": f"ours@{v}", "client": "native"}  # the build each run ran
        f = flows[flows["run_id"] == run["run_id"]]
        assert sorted(f["protocol"]) == ["h2", "h3"] and (f["router_mbit"] > 0.5).all(), f
        assert 7.0 <= f["router_mbit"].sum() <= 10.2, f  # together they fill the 10 Mbit/s link
    # the exact build of each release, and its binary, recorded with the experiment
    stacks, digests = versions["stacks"], versions["stack_binaries"]
    assert set(stacks) == set(digests) == {f"ours@{v}" for v in RELEASES}
    assert all(f"quinn-proto {v}" in stacks[f"ours@{v}"] for v in RELEASES), stacks
    assert len(set(stacks.values())) == len(set(digests.values())) == 2
