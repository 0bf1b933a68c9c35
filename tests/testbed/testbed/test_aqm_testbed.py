"""linkem's AQM disciplines on real traffic: a kernel TCP download (Cubic) behind a CoDel or
PIE queue keeps the standing delay near the discipline's target where drop-tail lets it grow
towards the buffer; with ECN negotiated (TCP) or sent (our QUIC endpoint) the queue marks
instead of dropping."""

from __future__ import annotations

import time
from pathlib import Path

from testbed_helpers import bulk_fetch, needs_testbed

from longlook.linkprofile import LinkProfile
from longlook.stacks.endpoint import EndpointServer, ServerOptions
from longlook.testbed import Testbed

PORT = 4433
# 20 Mbit/s, 20 ms RTT, 500 KB of buffer: 200 ms of queue when full
LINK = dict(rate_mbit=20, delay_ms=10, buffer_bytes=500_000)


def _download(tmp_path: Path, link: LinkProfile, *, ecn: bool = False, protocol: str = "h2") -> tuple[dict, dict]:
    """One 8 MB download: its fetch document and linkem's counters of the flow down."""
    certs = tmp_path / "cert"
    with Testbed(link, workdir=tmp_path / "tb", seed=1) as tb:
        if ecn:  # the client asks for ECN; the server's default (2) accepts when asked
            tb.run("client", ["sysctl", "-q", "-w", "net.ipv4.tcp_ecn=1"])
        server = EndpointServer.start(tb, ServerOptions(), port=PORT, cert_dir=certs, log_dir=tmp_path / "logs")
        fetch = bulk_fetch(tb, certs, tmp_path / f"{protocol}.json", protocol, "8m", timeout_s=30)
        time.sleep(0.3)  # the stats file is rewritten every 100 ms
        proto = "udp" if protocol == "h3" else "tcp"
        flows = [f for f in tb.linkem_stats()["flows"] if f["proto"] == proto and f["direction"] == "down"]
        server.stop()
    assert fetch.status == "ok", fetch.error
    assert len(flows) == 1, flows
    return fetch.document, flows[0]


@needs_testbed("linkem", "endpoint")
def test_codel_holds_the_standing_delay_near_its_target(tmp_path: Path):
    _, tail = _download(tmp_path / "tail", LinkProfile(**LINK))
    _, codel = _download(tmp_path / "codel", LinkProfile(**LINK, down={"aqm": {"discipline": "codel"}}))
    # drop-tail: Cubic fills the buffer (up to 200 ms); CoDel: near its 5 ms target
    assert tail["sojourn_ms_mean"] > 40, tail
    assert codel["sojourn_ms_mean"] < 15, codel
    assert codel["sojourn_ms_mean"] < tail["sojourn_ms_mean"] / 4, (codel, tail)
    assert codel["dropped_aqm"] > 0 and codel["dropped_buffer"] == 0, codel
    assert tail["dropped_aqm"] == 0


@needs_testbed("linkem", "endpoint")
def test_pie_holds_the_delay_near_its_target(tmp_path: Path):
    _, pie = _download(tmp_path / "pie", LinkProfile(**LINK, down={"aqm": {"discipline": "pie"}}))
    assert 3 < pie["sojourn_ms_mean"] < 40, pie  # target 15 ms
    assert pie["dropped_aqm"] > 0, pie


@needs_testbed("linkem", "endpoint")
def test_ecn_capable_tcp_is_marked_not_dropped(tmp_path: Path):
    _, codel = _download(
        tmp_path / "ecn", LinkProfile(**LINK, down={"aqm": {"discipline": "codel", "ecn": True}}), ecn=True
    )
    assert codel["ce_marked"] > 0, codel
    assert codel["dropped_aqm"] == 0, codel
    assert codel["sojourn_ms_mean"] < 15, codel


@needs_testbed("linkem", "endpoint")
def test_our_quic_endpoint_sends_ect_and_is_marked_not_dropped(tmp_path: Path):
    """quinn sends ECT(0) and validates ECN on the path: behind CoDel with ECN its packets
    are marked, none dropped, and the marks hold its queue as drops do."""
    link = LinkProfile(**LINK, down={"aqm": {"discipline": "codel", "ecn": True}})
    _, quic = _download(tmp_path / "h3", link, protocol="h3")
    assert quic["ce_marked"] > 0 and quic["dropped_aqm"] == 0, quic
    assert quic["sojourn_ms_mean"] < 30, quic
