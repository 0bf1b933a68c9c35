"""linkem's NAT on a real testbed: a download across a scheduled port rebinding, over QUIC
(which the connection ID carries across) and over TCP (whose connection is its 4-tuple), and
what linkem records of it: the rebinding, the flows before and after, the drops."""

from __future__ import annotations

import json
import time
from pathlib import Path

from testbed_helpers import bulk_fetch, estab_resets, needs_testbed

from longlook.linkprofile import LinkProfile
from longlook.stacks.endpoint import EndpointServer, ServerOptions
from longlook.testbed import Testbed

PORT = 4433
PUBLIC = "198.18.5.1"


def _stats(tb) -> dict:
    time.sleep(0.3)  # the stats file is rewritten every 100 ms
    return tb.linkem_stats()


@needs_testbed("linkem", "endpoint")
def test_a_quic_download_survives_a_port_rebinding_and_a_tcp_one_does_not(tmp_path: Path):
    """4 MB at 20 Mbit/s takes ~1.8 s; every binding moves to a new port 1 s after its
    flow's first packet, in the middle of the transfer."""
    certs = tmp_path / "cert"
    link = LinkProfile(rate_mbit=20, delay_ms=10, buffer_bytes=100_000, nat={"rebind_at_s": [1.0]})
    with Testbed(link, workdir=tmp_path / "tb", seed=1) as tb:
        server = EndpointServer.start(tb, ServerOptions(), port=PORT, cert_dir=certs, log_dir=tmp_path / "logs")
        h3 = bulk_fetch(tb, certs, tmp_path / "h3.json", "h3", "4m")
        after_h3 = _stats(tb)
        resets_before = estab_resets(tb, "client")
        h2 = bulk_fetch(tb, certs, tmp_path / "h2.json", "h2", "4m")
        client_resets = estab_resets(tb, "client") - resets_before
        after_h2 = _stats(tb)
        server.stop()

    # QUIC: the connection went on from the new port and delivered everything
    assert h3.status == "ok", json.dumps(
        [h3.error, after_h3.get("nat"), [f for f in after_h3["flows"] if f["proto"] == "udp"]]
    )
    nat = after_h3["nat"]
    udp_moves = [e for e in nat["rebindings"] if e["proto"] == "udp"]
    assert len(udp_moves) == 1 and udp_moves[0]["cause"] == "scheduled", nat
    old, new = udp_moves[0]["from"], udp_moves[0]["to"]
    assert old.startswith(PUBLIC + ":") and new.startswith(PUBLIC + ":") and old != new
    down = {f["dst"]: f for f in after_h3["flows"] if f["direction"] == "down" and f["proto"] == "udp"}
    assert down[old]["bytes"] > 500_000, "the transfer had begun before the rebinding"
    assert down[new]["bytes"] > 500_000, "and went on to the new port after it"
    assert down[old]["bytes"] + down[new]["bytes"] > 4_000_000
    # what was in flight to the old port when it moved (~17 packets in 10 ms at 20 Mbit/s)
    # met a NAT that no longer knew it
    assert down[old]["dropped_nat"] > 0

    # TCP: the server knows no connection from the new port; its RST reaches the client
    assert h2.status != "ok", h2.document
    assert client_resets >= 1
    tcp_moves = [e for e in after_h2["nat"]["rebindings"] if e["proto"] == "tcp"]
    assert tcp_moves and all(e["cause"] == "scheduled" for e in tcp_moves), after_h2["nat"]


@needs_testbed("linkem", "endpoint")
def test_a_quic_download_survives_an_address_rebinding(tmp_path: Path):
    """The binding moves to the NAT's second public address 1 s in: the server sees the
    connection arrive from a new address (RFC 9000 §9: it validates the path and resets its
    congestion controller) and the transfer goes on there."""
    certs = tmp_path / "cert"
    nat = {"rebind_at_s": [1.0], "rebind_to": "address"}
    link = LinkProfile(rate_mbit=20, delay_ms=10, buffer_bytes=100_000, nat=nat)
    with Testbed(link, workdir=tmp_path / "tb", seed=1) as tb:
        server = EndpointServer.start(tb, ServerOptions(), port=PORT, cert_dir=certs, log_dir=tmp_path / "logs")
        h3 = bulk_fetch(tb, certs, tmp_path / "h3.json", "h3", "4m")
        stats = _stats(tb)
        server.stop()
    assert h3.status == "ok", json.dumps([h3.error, stats.get("nat")])
    (move,) = [e for e in stats["nat"]["rebindings"] if e["proto"] == "udp"]
    assert move["from"].startswith(PUBLIC + ":") and move["to"].startswith("198.18.6.1:"), move
    down = {f["dst"]: f for f in stats["flows"] if f["direction"] == "down" and f["proto"] == "udp"}
    assert down[move["to"]]["bytes"] > 500_000, "the transfer went on to the new address"
