"""The stall a client meets across a NAT rebinding, read from the router (linkem's flow log
every 5 ms, kinds/pageload/measure.delivery_gap), for a client that writes no log of it:
quic-go's when installed, else our client, whose own qlog then says the same within the flow
log's interval."""

from __future__ import annotations

from pathlib import Path

from testbed_helpers import needs_testbed

from longlook.core.execute import Runner
from longlook.core.store import Store
from longlook.kinds.pageload import Scenario

TOML = """
name = "delivery-gap"
seed = 1
rounds = 3
retries = 1
timeout_s = 15
workloads = ["bulk:4m"]
[options]
zero_rtt = false
[fidelity]  # not about fidelity: a run flagged on a busy machine still counts
exclude_flagged = false
[[links]]
rate_mbit = 20
rtt_ms = 20
buffer_bytes = 100000
nat = { rebind_at_s = [1.0] }
[[arms]]
label = "h3"
protocol = "h3"
[[arms]]
label = "h2"
protocol = "h2"
"""


@needs_testbed("linkem", "endpoint")
def test_the_router_sees_the_stall_of_a_rebinding(tmp_path: Path):
    Runner(Scenario.from_toml(TOML), tmp_path, link_check=False).run()
    with Store.open(tmp_path, read_only=True) as store:
        runs = store.runs_frame()
    h3 = runs[(runs.arm == "h3") & (runs.status == "ok")]
    assert len(h3) >= 1, runs[["arm", "status", "error"]].to_string()
    agree = []
    for r in h3.itertuples():
        details = r.details
        gap, began = details["delivery_gap_ms"], details["delivery_gap_from_ms"]
        # the packets in flight to the old port are lost, the server learns of the new one:
        # about two 20 ms round trips, beginning at the move ~1 s in
        assert 20 <= gap <= 250 and 900 <= began <= 1300, details
        # the client cannot hear what the router did not release: its own log of the silence
        # is at least as long, less the flow log's 5 ms interval (and a packet)
        stall = details["receive_stall_ms"]
        assert stall >= gap - 12, details
        agree.append(abs(stall - gap) <= 12)
    # and no longer, when the client was let run: its log also holds the time it waited for
    # a CPU (two vCPUs shared with the router, the server and the test runner), which the
    # router's does not, so one run that agrees shows the two measure the same silence
    assert any(agree), h3[["receive_stall_ms", "delivery_gap_ms", "audit_max_stall_ms"]].to_string()
    h2 = runs[runs.arm == "h2"]
    assert len(h2) and (h2.status != "ok").all()
