"""A client that moves between two paths on a real testbed: a download over Wi-Fi whose path
goes down 1 s in, the client moving to its LTE address at once. QUIC moves its connection
(quinn's rebind) and finishes over the second path; TCP's connection is its 4-tuple and dies
with its path, unless the client reconnects from the new address and resumes (a range
request). What linkem records: both paths' flows, the drops of the path that went
down, and when it went down."""

from __future__ import annotations

import json
import time
from pathlib import Path

from testbed_helpers import bulk_fetch, needs_testbed

from longlook.linkprofile import HANDOVER_CLIENT_ADDR, LinkProfile
from longlook.stacks.endpoint import EndpointServer, ServerOptions
from longlook.testbed import CLIENT_ADDR, Testbed

PORT = 4433


def _stats(tb) -> dict:
    time.sleep(0.3)  # the stats file is rewritten every 100 ms
    return tb.linkem_stats()


def _down_bytes(stats: dict, proto: str, addr: str) -> int:
    return sum(
        f["bytes"]
        for f in stats["flows"]
        if f["direction"] == "down" and f["proto"] == proto and f["dst"].startswith(addr + ":")
    )


@needs_testbed("linkem", "endpoint")
def test_a_quic_download_moves_to_the_second_path_and_a_tcp_one_dies_with_the_first(tmp_path: Path):
    """4 MB: ~1.8 s at Wi-Fi's 20 Mbit/s; the Wi-Fi path goes down 1 s after the first
    packet and the rest comes over LTE's 10 Mbit/s, 60 ms RTT."""
    certs = tmp_path / "cert"
    lte = {"rate_mbit": 10.0, "delay_ms": 30.0, "buffer_bytes": 75_000}
    link = LinkProfile(rate_mbit=20, delay_ms=10, buffer_bytes=100_000, handover={"at_s": 1.0, "path": lte})
    retrying = link.model_copy(update={"handover": link.handover.model_copy(update={"tcp_reconnect": True})})
    with Testbed(link, workdir=tmp_path / "tb", seed=1) as tb:
        server = EndpointServer.start(tb, ServerOptions(), port=PORT, cert_dir=certs, log_dir=tmp_path / "logs")
        h3 = bulk_fetch(tb, certs, tmp_path / "h3.json", "h3", "4m")
        after_h3 = _stats(tb)
        tb.rephase_trace(0.0)  # the next run meets its own handover (core/execute.py does this per run)
        h2 = bulk_fetch(tb, certs, tmp_path / "h2.json", "h2", "4m", timeout_s=6)
        after_h2 = _stats(tb)
        # an application that retries: it reconnects from the LTE address and resumes
        tb.reconfigure(retrying)
        h2_retry = bulk_fetch(tb, certs, tmp_path / "h2-retry.json", "h2", "4m")
        after_retry = _stats(tb)
        server.stop()

    # QUIC: the client moved at its time, and the transfer finished over the second path
    assert h3.status == "ok", json.dumps([h3.error, after_h3.get("handover"), after_h3["flows"]])
    moved = h3.document["migration"]
    assert moved["at_ms"] is not None and 1000 <= moved["at_ms"] < 1100, moved
    assert moved["to"].startswith(HANDOVER_CLIENT_ADDR + ":"), moved
    first, second = (_down_bytes(after_h3, "udp", a) for a in (CLIENT_ADDR, HANDOVER_CLIENT_ADDR))
    assert first > 1_000_000, "the transfer had begun over Wi-Fi"
    assert second > 500_000, "and went on over LTE"
    assert first + second > 4_000_000
    down = after_h3["directions"]["down"]
    # what Wi-Fi held or had in flight when it went down was lost with it
    assert down["dropped_path_down"] > 0, down
    handover = after_h3["handover"]
    assert handover["first_path_down_mono_ms"] - handover["first_packet_mono_ms"] == 1000.0, handover

    # TCP: its connection cannot move; left on it, the load stalls with its path to the timeout
    assert h2.status != "ok", h2.document
    assert "migration" not in h2.document
    assert _down_bytes(after_h2, "tcp", HANDOVER_CLIENT_ADDR) == 0
    assert after_h2["directions"]["up"]["dropped_path_down"] > 0, "its retransmissions met the dead path"
    # reconnecting from the new address, it asks for the rest and gets it over LTE
    assert h2_retry.status == "ok", json.dumps([h2_retry.error, h2_retry.document.get("migration")])
    m = h2_retry.document["migration"]
    assert m["to"].startswith(HANDOVER_CLIENT_ADDR + ":") and m["range_requests"] == 1, m
    assert m["reconnected_ms"] > m["at_ms"] >= 1000, m
    assert _down_bytes(after_retry, "tcp", HANDOVER_CLIENT_ADDR) > 500_000, "the rest came over LTE"
