"""The page-load options initial_window_packets and n_conn reach our endpoint's congestion
controller: each arm's server qlog states the window and connection count it was built
with (the `longlook:congestion_control` event). A few seconds of traffic."""

from __future__ import annotations

import json
from pathlib import Path

from testbed_helpers import needs_testbed

from longlook.core.execute import Runner
from longlook.core.store import Store
from longlook.kinds.pageload import Scenario

SCENARIO = """
name = "server-knobs"
rounds = 2
workloads = ["1x100k"]
[[links]]
rate_mbit = 50
rtt_ms = 20
[fidelity]
exclude_flagged = false
[[arms]]
label = "iw4-n2"
protocol = "h3"
initial_window_packets = 4
n_conn = 2
[[arms]]
label = "iw40"
protocol = "h3"
initial_window_packets = 40
"""


def _controller(qlog: Path) -> dict:
    for line in qlog.read_text().splitlines():
        line = line.lstrip("\x1e").strip()
        if '"longlook:congestion_control"' in line:
            event = json.loads(line)
            return event["data"]
    raise AssertionError(f"{qlog}: no longlook:congestion_control event")


@needs_testbed("linkem", "endpoint")
def test_initial_window_and_n_conn_arms_reach_the_server(tmp_path: Path):
    summary = Runner(Scenario.from_toml(SCENARIO), tmp_path / "x", link_check=False).run()
    assert summary.ok >= 2 and not summary.interrupted
    seen = {}
    with Store.open(tmp_path / "x", read_only=True) as store:
        runs = store.runs_frame()
        for _, r in runs[runs["status"] == "ok"].iterrows():
            arts = r["artifacts"] if isinstance(r["artifacts"], dict) else json.loads(r["artifacts"])
            cc = _controller(store.directory / arts["qlog"])  # artifacts are relative to the experiment
            seen[r["arm"]] = (cc["initial_window_packets"], cc["n_connections"], cc["initial_window_bytes"])
    assert set(seen) == {"iw4-n2", "iw40"}, seen
    assert seen["iw4-n2"][:2] == (4, 2) and seen["iw40"][:2] == (40, 1)
    assert seen["iw40"][2] == 10 * seen["iw4-n2"][2]  # the window in bytes follows the packets
