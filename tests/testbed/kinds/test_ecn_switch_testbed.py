"""The page-load `ecn` switch reaches both ends: behind CoDel that marks ECN-capable packets,
a cell with ECN on has its TCP handshake negotiate ECN and both protocols' packets marked CE,
none dropped by the AQM; with ECN off nothing is marked (the same CoDel drops instead), so
what each run met is what its cell says. A few seconds of traffic."""

from __future__ import annotations

import json
from pathlib import Path

from testbed_helpers import needs_testbed

from longlook.core.execute import Runner
from longlook.core.store import Store
from longlook.kinds.pageload import Scenario

# 10 Mbit/s, 36 ms, a 4-BDP buffer: a 1 MB object builds a queue CoDel acts on
SCENARIO = """
name = "ecn-switch"
rounds = 1
workloads = ["1x1m"]
protocols = ["h3", "h2"]
[options]
ecn = ["on", "off"]
[[links]]
rate_mbit = 10
rtt_ms = 36
buffer_bdp = 4
aqm = { discipline = "codel", ecn = true }
[fidelity]
exclude_flagged = false
"""


@needs_testbed("linkem", "endpoint")
def test_ecn_on_is_marked_at_both_ends_and_off_is_not(tmp_path: Path):
    summary = Runner(Scenario.from_toml(SCENARIO), tmp_path / "x", link_check=False).run()
    assert summary.ok == 4 and not summary.interrupted, summary
    with Store.open(tmp_path / "x", read_only=True) as store:
        runs = store.runs_frame()
    seen = {}
    for _, r in runs.iterrows():
        details = r["details"] if isinstance(r["details"], dict) else json.loads(r["details"])
        down = details["queue"]["down"]
        seen[(r["arm"], r["cell_id"].rsplit("ecn=", 1)[1])] = (down, details)
    for arm in ("h3", "h2"):
        on, off = seen[(arm, "on")][0], seen[(arm, "off")][0]
        assert on["ce_marked"] > 0 and on["dropped_aqm"] == 0, (arm, on)
        assert off["ce_marked"] == 0, (arm, off)
    assert seen[("h2", "on")][1]["tcp_ecn"] is True and seen[("h2", "on")][1]["tcp_delivered_ce"] > 0
    assert seen[("h2", "off")][1]["tcp_ecn"] is False
