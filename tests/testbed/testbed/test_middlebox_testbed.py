"""linkem's QUIC- and TCP-aware middlebox policies on a real testbed: what our endpoint's
fetches do behind them, and what linkem counts per flow."""

from __future__ import annotations

import time
from pathlib import Path

from testbed_helpers import bulk_fetch, estab_resets, needs_testbed

from longlook.linkprofile import LinkProfile
from longlook.stacks.endpoint import EndpointServer, ServerOptions
from longlook.testbed import Testbed

PORT = 4433


def _link(**middlebox) -> LinkProfile:
    return LinkProfile(rate_mbit=20, delay_ms=10, buffer_bytes=100_000, **middlebox)


def _flows(tb, proto: str, direction: str) -> list[dict]:
    time.sleep(0.3)  # the stats file is rewritten every 100 ms
    return [f for f in tb.linkem_stats()["flows"] if f["proto"] == proto and f["direction"] == direction]


@needs_testbed("linkem", "endpoint")
def test_quic_initials_dropped_h3_fails_h2_works(tmp_path: Path):
    certs = tmp_path / "cert"
    link = _link(up={"middlebox": {"drop_quic_initial": True}})
    with Testbed(link, workdir=tmp_path / "tb", seed=1) as tb:
        server = EndpointServer.start(tb, ServerOptions(), port=PORT, cert_dir=certs, log_dir=tmp_path / "logs")
        h3 = bulk_fetch(tb, certs, tmp_path / "h3.json", "h3", "100k", timeout_s=4)
        h2 = bulk_fetch(tb, certs, tmp_path / "h2.json", "h2", "100k")
        udp_up = _flows(tb, "udp", "up")
        tcp_up = _flows(tb, "tcp", "up")
        udp_down = _flows(tb, "udp", "down")
        server.stop()
    assert h3.status != "ok", h3.document
    assert h2.status == "ok", h2.error
    # every client datagram was an Initial (retransmitted until the client gave up)
    assert udp_up and all(f["packets"] == 0 and f["dropped_middlebox"] >= 2 for f in udp_up), udp_up
    assert not udp_down  # the server never heard of the client
    assert tcp_up and all(f["dropped_middlebox"] == 0 for f in tcp_up)


@needs_testbed("linkem", "endpoint")
def test_rst_after_n_bytes_kills_h2_download_not_h3(tmp_path: Path):
    certs = tmp_path / "cert"
    n = 300_000
    link = _link(down={"middlebox": {"tcp_rst_after_bytes": n}})
    with Testbed(link, workdir=tmp_path / "tb", seed=1) as tb:
        server = EndpointServer.start(tb, ServerOptions(), port=PORT, cert_dir=certs, log_dir=tmp_path / "logs")
        resets_before = estab_resets(tb, "client")
        h2 = bulk_fetch(tb, certs, tmp_path / "h2.json", "h2", "2m")
        tcp_down = _flows(tb, "tcp", "down")
        client_resets = estab_resets(tb, "client") - resets_before
        h3 = bulk_fetch(tb, certs, tmp_path / "h3.json", "h3", "2m")
        stats = tb.linkem_stats()
        server.stop()
    assert h2.status == "failed", h2.document
    assert client_resets == 1  # the client's kernel took the rewritten packet as a RST
    # the client received at most the first N bytes of the TCP stream (TLS records included)
    assert h2.document.get("bytes", 0) < n, h2.document.get("bytes")
    rewritten = [f for f in tcp_down if f["rst_rewritten"] > 0]
    assert len(rewritten) == 1, tcp_down
    assert stats["directions"]["down"]["rst_rewritten"] >= 1
    assert h3.status == "ok", h3.error  # UDP is untouched


@needs_testbed("linkem", "endpoint")
def test_quic_blackholed_after_handshake(tmp_path: Path):
    certs = tmp_path / "cert"
    link = _link(down={"middlebox": {"quic_blackhole_after_handshake": True}})
    with Testbed(link, workdir=tmp_path / "tb", seed=1) as tb:
        server = EndpointServer.start(tb, ServerOptions(), port=PORT, cert_dir=certs, log_dir=tmp_path / "logs")
        h3 = bulk_fetch(tb, certs, tmp_path / "h3.json", "h3", "100k", timeout_s=4)
        udp_down = _flows(tb, "udp", "down")
        server.stop()
    assert h3.status != "ok", h3.document
    # the server's handshake datagrams passed, its 1-RTT ones were dropped
    assert udp_down and udp_down[0]["packets"] >= 1 and udp_down[0]["dropped_middlebox"] >= 1, udp_down


@needs_testbed("linkem", "endpoint")
def test_udp_block_window_and_fallback_bytes_from_flow_log(tmp_path: Path):
    """UDP blocked for linkem's first 6 s: h3 fails inside the window and works after it;
    the router's flow log gives the bytes per second over TCP and UDP (F(t))."""
    from longlook.analyses.fallback import bytes_per_second

    certs = tmp_path / "cert"
    until = 6.0
    link = _link(up={"middlebox": {"block_udp": True, "active_until_s": until}})
    with Testbed(link, workdir=tmp_path / "tb", seed=1, flow_log=True) as tb:
        server = EndpointServer.start(tb, ServerOptions(), port=PORT, cert_dir=certs, log_dir=tmp_path / "logs")
        before = tb.linkem_stats()["elapsed_s"]
        blocked = bulk_fetch(tb, certs, tmp_path / "blocked.json", "h3", "100k", timeout_s=2)
        h2 = bulk_fetch(tb, certs, tmp_path / "h2.json", "h2", "1m")
        while tb.linkem_stats()["elapsed_s"] < until + 0.2:
            time.sleep(0.2)
        h3 = bulk_fetch(tb, certs, tmp_path / "h3.json", "h3", "1m")
        time.sleep(0.3)
        log = tb.linkem.flow_log_path
        server.stop()
        f = bytes_per_second(log, "198.18.2.2", {PORT})
    assert before < until - 3, before  # the blocked fetch really ran inside the window
    assert blocked.status != "ok" and h2.status == "ok" and h3.status == "ok", (blocked, h2.error, h3.error)
    # each 1 MB download crossed the router once (IP bytes: payload + headers, both ways)
    assert 1.0e6 < f["tcp"].sum() < 1.2e6, f["tcp"].sum()
    assert 1.0e6 < f["udp"].sum() < 1.2e6, f["udp"].sum()
    # UDP bytes flowed only after the window closed (blocked Initials are not forwarded)
    assert f.loc[f.index < until - 1, "udp"].sum() == 0, f
