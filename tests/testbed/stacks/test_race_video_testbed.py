"""The native DASH player over the racing client (`protocols = ["race", "h2"]`) on a real
testbed: with UDP blocked every segment comes over TCP and each request says so; on a clean
path every segment comes over QUIC. The run is counted as what served it, never as h3."""

from __future__ import annotations

from pathlib import Path

from testbed_helpers import needs_ffmpeg, needs_testbed

from longlook.core.execute import Runner
from longlook.core.store import Store
from longlook.kinds.video import VideoScenario


SCENARIO = """
kind = "video"
name = "race-video"
runs = 1
retries = 1
players = ["native"]
protocols = ["race", "h2"]
timeout_s = 40
[video]
duration_s = 4
segment_s = 2
max_height = 240
cache_dir = "{cache}"
[race]
default_delay_ms = 100
quic_handshake_timeout_ms = 1000
[fidelity]
exclude_flagged = false
[[links]]
name = "clean"
rate_mbit = 20
rtt_ms = 20
[[links]]
name = "blocked"
rate_mbit = 20
rtt_ms = 20
middlebox = {{ block_udp = true }}
"""


@needs_ffmpeg
@needs_testbed("linkem", "endpoint")
def test_native_player_races_and_records_each_segments_protocol(tmp_path: Path):
    sc = VideoScenario.from_toml(SCENARIO.format(cache=tmp_path / "cache"))
    Runner(sc, tmp_path / "exp", link_check=False).run()
    with Store.open(tmp_path / "exp", read_only=True) as store:
        runs = store.runs_frame().merge(store.cells_frame()[["cell_id", "link_name"]], on="cell_id")
        requests = store.table("requests")
        series = store.series()
    race = runs[(runs["arm"] == "quic-enabled") & (runs["status"] == "ok")].set_index("link_name")
    assert set(race.index) == {"clean", "blocked"}, runs[["arm", "link_name", "status", "error"]]
    assert race["protocol_requested"].isna().all()
    assert race.loc["clean", "protocol_negotiated"] == "h3" and race.loc["clean", "quic_share"] == 1.0
    assert race.loc["blocked", "protocol_negotiated"] == "h2" and race.loc["blocked", "quic_share"] == 0.0
    # the first request waited the configured 100 ms for QUIC, then went to TCP (+2 RTT)
    assert 100 + 40 - 5 <= race.loc["blocked", "time_to_fallback_ms"] <= 100 + 40 + 80
    for link, proto in (("clean", "h3"), ("blocked", "h2")):
        reqs = requests[requests["run_id"] == race.loc[link, "run_id"]]
        assert len(reqs) >= 4 and (reqs["protocol"] == proto).all(), reqs[["path", "protocol"]]

    # F(t), the bytes over TCP per second, is measured at the router (linkem's flow log) for
    # the fallback analysis; it carries what the client says it received, plus headers
    def total(link: str, name: str) -> float:
        rows = series[(series["run_id"] == race.loc[link, "run_id"]) & (series["name"] == name)]
        return float(rows["value"].sum())

    client_tcp = total("blocked", "F_client")
    assert client_tcp > 20_000, client_tcp  # the manifest, 2 video and 2 audio segments at least
    assert client_tcp <= total("blocked", "F") <= 1.3 * client_tcp, (total("blocked", "F"), client_tcp)
    assert total("blocked", "F_udp") == 0  # every QUIC datagram was dropped, none forwarded
    assert race.loc["blocked", "router_tcp_share"] == 1.0
    # on the clean path QUIC won before TCP's wait ended: no TCP connection at all
    client_udp = total("clean", "F_udp_client")
    assert total("clean", "F") == 0 and race.loc["clean", "router_tcp_share"] == 0.0
    assert client_udp <= total("clean", "F_udp") <= 1.3 * client_udp, (total("clean", "F_udp"), client_udp)
