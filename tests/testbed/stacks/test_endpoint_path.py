"""The endpoint through the emulated path: the knobs the papers calibrate change what they
should, and loss shows up as Recovery in both protocols' congestion logs."""

from __future__ import annotations

import json
from pathlib import Path

from testbed_helpers import bulk_fetch, needs_testbed

from longlook.stacks.endpoint import EndpointServer, ServerOptions
from longlook.linkprofile import LinkProfile
from longlook.testbed import Testbed


def _bulk(tb, port, certs, out: Path, size: str, protocol: str = "h3"):
    r = bulk_fetch(tb, certs, out, protocol, size, port=port, timeout_s=60)
    assert r.status == "ok", r.error
    return r


def _states(log: Path) -> list[str]:
    events = [json.loads(rec) for rec in log.read_text().split("\x1e") if rec.strip()]
    return [e["data"]["new"] for e in events if e.get("name") == "recovery:congestion_state_updated"]


@needs_testbed("linkem", "endpoint")
def test_macw_107_slows_a_10mb_download_against_430(tmp_path: Path):
    # 100 Mbit/s, 36 ms: BDP = 450 KB, about 310 full packets. 107 packets cap QUIC near a
    # third of the link; 430 do not cap it. A BDP-sized buffer keeps loss out of the picture.
    link = LinkProfile(rate_mbit=100, delay_ms=18, buffer_bytes=450_000)
    certs = tmp_path / "cert"
    with Testbed(link, workdir=tmp_path / "tb") as tb:
        small = EndpointServer.start(
            tb, ServerOptions(max_cwnd_packets=107), port=4433, cert_dir=certs, log_dir=tmp_path / "logs107"
        )
        large = EndpointServer.start(
            tb, ServerOptions(max_cwnd_packets=430), port=4434, cert_dir=certs, log_dir=tmp_path / "logs430"
        )
        capped, free = [], []
        for i in range(2):
            capped.append(_bulk(tb, 4433, certs, tmp_path / f"c{i}.json", "10m").document["plt_ms"])
            free.append(_bulk(tb, 4434, certs, tmp_path / f"f{i}.json", "10m").document["plt_ms"])
        small.stop(), large.stop()
        maxed = [s for log in (tmp_path / "logs107").glob("*.sqlog") for s in _states(log)]
    # the cap binds: the 107-packet server reached CongestionAvoidanceMaxed
    assert "CongestionAvoidanceMaxed" in maxed
    # at 107 x ~1250 B per 36 ms the transfer needs >= 2.1 s; at 430 packets about 1 s
    assert min(capped) > 1.5 * max(free), (capped, free)


@needs_testbed("linkem", "endpoint")
def test_loss_drives_quic_and_tcp_into_recovery(tmp_path: Path):
    link = LinkProfile(rate_mbit=20, delay_ms=18, buffer_bytes=100_000, loss=0.02)
    certs = tmp_path / "cert"
    with Testbed(link, workdir=tmp_path / "tb", seed=3) as tb:
        server = EndpointServer.start(tb, ServerOptions(), port=4433, cert_dir=certs, log_dir=tmp_path / "logs")
        _bulk(tb, 4433, certs, tmp_path / "quic.json", "2m", "h3")
        _bulk(tb, 4433, certs, tmp_path / "tcp.json", "2m", "h2")
        dropped = tb.linkem_stats()["directions"]["down"]["dropped_loss"]
        server.stop()
    quic = [s for f in (tmp_path / "logs").glob("*.sqlog") if not f.name.endswith(".tcp.sqlog") for s in _states(f)]
    tcp = [s for f in (tmp_path / "logs").glob("*.tcp.sqlog") for s in _states(f)]
    assert dropped > 10  # linkem really dropped on the way to the client
    assert "Recovery" in quic, quic
    assert {"Recovery", "Loss"} & set(tcp), tcp


@needs_testbed("linkem", "endpoint")
def test_tcp_caches_nothing_between_runs(tmp_path: Path):
    """Linux would keep each destination's RTT, ssthresh and cwnd after a connection and start
    the next one from them; the testbed's namespaces turn that off, so runs are independent."""
    link = LinkProfile(rate_mbit=20, delay_ms=10, buffer_bytes=100_000)
    certs = tmp_path / "cert"
    with Testbed(link, workdir=tmp_path / "tb") as tb:
        server = EndpointServer.start(tb, ServerOptions(), port=4433, cert_dir=certs, log_dir=tmp_path / "logs")
        _bulk(tb, 4433, certs, tmp_path / "tcp.json", "1m", "h2")
        cached = {role: tb.run(role, ["ip", "tcp_metrics", "show"]).stdout.strip() for role in ("server", "client")}
        setting = tb.run("server", ["sysctl", "-n", "net.ipv4.tcp_no_metrics_save"]).stdout.strip()
        server.stop()
    assert setting == "1"
    assert cached == {"server": "", "client": ""}, cached
