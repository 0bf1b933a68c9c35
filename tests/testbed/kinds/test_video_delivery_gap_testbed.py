"""The stall a video session meets across a NAT rebinding, read from the router over the
player's requests (kinds/video/delivery_gap): a 12 s clip at 2 Mbit/s is still downloading
2 s in, when the NAT moves the client to a new port; the QUIC session goes on and its wait is
about two round trips, the TCP session dies with its binding."""

from __future__ import annotations

from pathlib import Path

from testbed_helpers import needs_ffmpeg, needs_testbed

from longlook.core.execute import Runner
from longlook.core.store import Store
from longlook.kinds.video import VideoScenario


TOML = """
kind = "video"
name = "video-rebinding"
runs = 1
abr = ["bola"]
[video]
duration_s = 12
segment_s = 2
max_height = 480
cache_dir = "{cache}"
[fidelity]  # not about fidelity: a session flagged on a busy machine still counts
retry_flagged = false
[link]
rate_mbit = 2
rtt_ms = 20
buffer_bytes = 30000
nat = {{ rebind_at_s = [2.0] }}
"""


@needs_ffmpeg
@needs_testbed("linkem", "endpoint")
def test_the_router_sees_a_sessions_wait_across_a_rebinding(tmp_path: Path):
    sc = VideoScenario.from_toml(TOML.format(cache=tmp_path / "cache"), base_dir=tmp_path)
    Runner(sc, tmp_path / "exp", link_check=False).run()
    with Store.open(tmp_path / "exp", read_only=True) as store:
        runs = store.runs_frame()
    h3 = runs[(runs.arm == "h3") & (runs.status == "ok")]
    assert len(h3) >= 1, runs[["arm", "status", "error"]].to_string()
    for r in h3.itertuples():
        details = r.details
        assert details.get("nat_rebindings"), details  # the move came while it downloaded
        gap, began = details["delivery_gap_ms"], details["delivery_gap_from_ms"]
        # the packets in flight to the old port are lost and the server learns the new one:
        # a few 20 ms round trips, from about the move (2 s after the run's start; the
        # requests begin after the handshake and the manifest)
        assert 20 <= gap <= 600 and 1000 <= began <= 2600, details
    h2 = runs[runs.arm == "h2"]
    assert len(h2) and (h2.status != "ok").all(), runs[["arm", "status", "error"]].to_string()
