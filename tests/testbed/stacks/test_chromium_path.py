"""Headless Chromium through the emulated path: the protocol it reports object by object,
the HAR it leaves beside the run, its net-log, and how failures are labelled."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from testbed_helpers import needs_testbed

from longlook.stacks.clients import fetcher
from longlook.stacks.clients.chromium_driver import DEFAULT_CHROMIUM
from longlook.stacks.clients.har import validate_har
from longlook.stacks.endpoint import SERVER_ADDR, EndpointServer, ServerOptions
from longlook.linkprofile import LinkProfile
from longlook.testbed import Testbed
from longlook.testbed.processes import pids_in_namespace

PAGE = "/page/4x50k.html"  # the HTML and four 50 KB images: short, and more than one object
OBJECT_BYTES = 50_000
RTT_MS = 36


def needs_chromium(f):
    """Skip when Chromium is absent, except under CI, where its absence must fail the run
    (through the client's own "Chromium was not found" error)."""
    if Path(DEFAULT_CHROMIUM).exists() or os.environ.get("CI") == "true":
        return f
    return pytest.mark.skip(reason=f"{DEFAULT_CHROMIUM} is missing (apt-get install -y chromium)")(f)


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    """A 10 Mbit/s, 36 ms testbed with one endpoint server, shared by this module's loads."""
    tmp = tmp_path_factory.mktemp("chromium")
    link = LinkProfile(rate_mbit=10, delay_ms=RTT_MS / 2, buffer_bytes=30_000)
    with Testbed(link, workdir=tmp / "tb") as tb:
        server = EndpointServer.start(tb, ServerOptions(), port=4433, cert_dir=tmp / "cert", log_dir=tmp / "server")
        try:
            yield tb, server, tmp
        finally:
            server.stop()


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""  # exited meanwhile


def _load(path, name: str, protocol: str, client: str = "chromium", url_path: str = PAGE, port: int = 4433, **options):
    tb, server, tmp = path
    out = tmp / name / "fetch.json"
    result = fetcher(client, **options)(
        tb,
        url=f"https://{SERVER_ADDR}:{port}{url_path}",
        protocol=protocol,
        run_id=name,
        cert_dir=tmp / "cert",
        out=out,
        timeout_s=20,
    )
    return result, out


@needs_testbed("linkem", "endpoint")
@needs_chromium
def test_h3_load_reports_h3_for_every_object_and_leaves_a_consistent_har(path):
    result, out = _load(path, "h3run", "h3")
    doc = result.document
    assert result.status == "ok", result.error
    assert doc["protocol"] == "h3"
    assert [o["protocol"] for o in doc["objects"]] == ["h3"] * 5
    # every image arrived whole (a browser cancels an image it cannot decode)
    assert [o["bytes"] for o in doc["objects"][1:]] == [OBJECT_BYTES] * 4
    # physics: a QUIC handshake plus a request take at least two RTTs before the page
    assert doc["ttfb_ms"] >= 2 * RTT_MS * 0.95
    assert doc["last_object_ms"] <= doc["plt_ms"] + 1
    # the server saw the run's id on its QUIC connection (x-longlook-run)
    logs = path[1].take_logs("h3run", out.parent)
    assert any(n.endswith(".sqlog") and not n.endswith(".tcp.sqlog") for n in logs), logs

    har = json.loads((out.parent / "page.har").read_text())
    assert validate_har(har) == []
    entries = har["log"]["entries"]
    assert [e["_protocol"] for e in entries] == ["h3"] * 5
    assert {e["response"]["httpVersion"] for e in entries} == {"HTTP/3"}
    for entry, obj in zip(entries, doc["objects"]):
        phases = sum(v for k, v in entry["timings"].items() if k != "ssl" and v >= 0)
        assert entry["time"] == pytest.approx(phases, abs=0.01)
        # the HAR's duration of an object is the fetch JSON's, on the same clock
        assert entry["time"] == pytest.approx(obj["end_ms"] - obj["start_ms"], abs=0.05)
    assert har["log"]["pages"][0]["pageTimings"]["onLoad"] == pytest.approx(doc["plt_ms"], abs=0.01)


@needs_testbed("linkem", "endpoint")
@needs_chromium
def test_h2_load_reports_h2_for_every_object(path):
    result, out = _load(path, "h2run", "h2")
    assert result.status == "ok", result.error
    assert result.document["protocol"] == "h2"
    assert [o["protocol"] for o in result.document["objects"]] == ["h2"] * 5
    logs = path[1].take_logs("h2run", out.parent)
    # QUIC disabled: one TCP connection and no QUIC one, even though the server offers Alt-Svc
    assert [n for n in logs if n.endswith(".tcp.sqlog")], logs
    assert not [n for n in logs if n.endswith(".sqlog") and not n.endswith(".tcp.sqlog")], logs
    assert validate_har(json.loads((out.parent / "page.har").read_text())) == []
    # a new browser per run: none is left behind in the client namespace
    tb = path[0]
    assert [p for p in pids_in_namespace(tb.ns["client"]) if "chromium" in _cmdline(p)] == []


@needs_testbed("linkem", "endpoint")
@needs_chromium
@pytest.mark.parametrize("protocol", ["h3", "h2"])
def test_a_bulk_object_is_fetched_whole_over_the_protocol_asked(path, protocol):
    """A 2 MB object, fetch()ed by a page of its origin (a navigation would be a download the
    headless browser aborts): all of it, over the protocol asked, no faster than the link."""
    tb, server, tmp = path
    name = f"bulk{protocol}"
    out = tmp / name / "fetch.json"
    result = fetcher("chromium")(
        tb,
        url=f"https://{SERVER_ADDR}:4433/bulk/2m",
        protocol=protocol,
        run_id=name,
        cert_dir=tmp / "cert",
        out=out,
        timeout_s=20,
        mode="bulk",
    )
    doc = result.document
    assert result.status == "ok", result.error
    assert doc["mode"] == "bulk" and doc["protocol"] == protocol
    assert [(o["path"], o["bytes"], o["protocol"]) for o in doc["objects"]] == [("/bulk/2m", 2_000_000, protocol)]
    # physics: 2 MB at 10 Mbit/s is 1.6 s on the wire, plus a handshake and a request
    assert doc["plt_ms"] >= 1600 + RTT_MS, doc["plt_ms"]
    assert doc["goodput_mbit"] <= 10.0, doc["goodput_mbit"]
    suffix = ".tcp.sqlog" if protocol == "h2" else ".sqlog"
    logs = server.take_logs(name, out.parent)
    assert [n for n in logs if n.endswith(suffix)], logs


@needs_testbed("linkem", "endpoint")
@needs_chromium
def test_netlog_is_kept_with_quic_congestion_events(path):
    result, out = _load(path, "netlogrun", "h3", url_path="/page/1x10k.html", chromium_netlog=True)
    assert result.status == "ok", result.error
    assert result.document["artifacts"] == {"har": "page.har", "netlog": "chromium-netlog.json"}
    netlog = json.loads((out.parent / "chromium-netlog.json").read_text())
    names = {v: k for k, v in netlog["constants"]["logEventTypes"].items()}
    configured = [e["params"] for e in netlog["events"] if names[e["type"]] == "QUIC_CONGESTION_CONTROL_CONFIGURED"]
    assert configured and configured[0]["congestion_control_type"] == "CUBIC_BYTES"


@needs_testbed("linkem", "endpoint")
@needs_chromium
def test_discovery_learns_h3_from_alt_svc(path):
    # Nothing forces QUIC. The unmeasured first visit of a fresh profile comes over TCP and
    # learns the server's Alt-Svc; the measured visit, in a new browser, races QUIC against
    # TCP and uses h3.
    result, _ = _load(path, "discoveryrun", "h3", client="chromium-discovery")
    doc = result.document
    assert doc["warmup"] == {"ok": True, "error": None, "protocol": "h2"}
    assert "h3" in [o["protocol"] for o in doc["objects"]]
    # Chromium's reason, per object: an h3 object came from the alternative (QUIC) job
    reasons = {o["protocol"]: o["protocol_reason"] for o in doc["objects"]}
    assert reasons["h3"] in ("alternativeJobWonRace", "alternativeJobWonWithoutRace"), reasons
    # labelled by what every object used: only an all-h3 page counts as h3
    assert (result.status == "ok") == (doc["protocol"] == "h3")
    assert doc["protocol"] in ("h3", "mixed")


@needs_testbed("linkem", "endpoint")
@needs_chromium
def test_discovery_behind_a_udp_block_falls_back_to_tcp_with_its_reason(tmp_path: Path):
    # The same discovery, on a path whose router drops every UDP datagram (Langley §7.2):
    # the first visit learns Alt-Svc over TCP, the measured one races a QUIC job that never
    # hears back against TCP. TCP wins, every object comes over h2, and Chromium says why.
    link = LinkProfile(rate_mbit=10, delay_ms=RTT_MS / 2, buffer_bytes=30_000, middlebox={"block_udp": True})
    with Testbed(link, workdir=tmp_path / "tb") as tb:
        server = EndpointServer.start(
            tb, ServerOptions(), port=4433, cert_dir=tmp_path / "cert", log_dir=tmp_path / "server"
        )
        try:
            result, _ = _load((tb, server, tmp_path), "blocked", "h3", client="chromium-discovery")
            time.sleep(0.3)  # linkem rewrites its stats every 100 ms
            udp_dropped = sum(f["dropped_middlebox"] for f in tb.linkem_stats()["flows"] if f["proto"] == "udp")
        finally:
            server.stop()
    doc = result.document
    assert doc["warmup"]["protocol"] == "h2"
    assert doc["protocol"] == "h2" and result.status == "protocol_mismatch", (result.status, doc["protocol"])
    assert len(doc["objects"]) == 5 and all(o["status"] == 200 for o in doc["objects"])
    reasons = {o["protocol_reason"] for o in doc["objects"]}
    assert reasons <= {"mainJobWonRace", "broken"} and reasons, reasons  # the TCP job won; QUIC is broken
    assert udp_dropped > 0, "the QUIC job's Initials reached the router and were dropped"
    # no waiting on QUIC: the race starts TCP at once for a service not yet known to work
    assert doc["plt_ms"] < 3000, doc["plt_ms"]


@needs_testbed("linkem", "endpoint")
@needs_chromium
def test_no_server_is_a_failed_run_not_a_hang(path):
    result, out = _load(path, "refused", "h2", port=4499)  # nothing listens there
    assert result.status == "failed"
    assert "ERR_CONNECTION_REFUSED" in result.error
    assert result.wall_s < 15
    assert validate_har(json.loads((out.parent / "page.har").read_text())) == []
