"""s2n-quic and kwik, the stacks whose qlog longlook writes itself (from s2n-quic's event
Subscriber, from kwik's QLog interface), through the testbed: the run's key log decrypts
the router's pcap, and every packet the router saw is in the server's qlog with its frames
(the STREAM bytes it sent cover the objects); s2n-quic's BBR writes its states, read as
Table 3. (The page load against itself and against ours, with strict qlogs and h3
verified, is test_stacks_testbed.py, which runs every registered stack.)"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from longlook.analyses.states import analyse_runs, load_runs
from longlook.core.execute import Runner
from longlook.core.store import Store
from longlook.kinds.pageload import Scenario
from longlook.qlog.dialects import load_any
from longlook.stacks.registry import resolve
from testbed.core.test_capture_testbed import H3_HEADERS, quic_packets, tshark
from testbed_helpers import needs_testbed

OBJECTS, SIZE = 4, 20_000
# packets around the close that the server's qlog cannot hold, each way: s2n-quic's log ends
# at its ConnectionClosed event (seen: 1 received, 1 sent after it), kwik's when it
# terminates the connection (seen: 3 and 4 of the client's last packets, all later than the
# last one logged; every packet it sent is logged)
LATE_PACKETS = {"s2n-quic": {"received": 2, "sent": 2}, "kwik": {"received": 5, "sent": 0}}


def _needs(spec: str):
    if resolve(spec).installed() or os.environ.get("CI"):
        return []
    return [pytest.mark.skip(reason=f"{spec} is not installed (longlook stacks install {spec})")]


# a comparison needs two arms: our HTTP/2 beside the stack's, not looked at here
H2_ARM = """
[[arms]]
label = "h2"
protocol = "h2"
"""


def _run(tmp_path: Path, toml: str, arm: str) -> tuple[Path, list[dict]]:
    """The runs of `arm`."""
    out = tmp_path / "x"
    Runner(Scenario.from_toml(toml + H2_ARM), out, link_check=False).run()
    with Store.open(out, read_only=True) as store:
        runs = [r for _, r in store.runs_frame().iterrows() if r["arm"] == arm]
    return out, runs


def _stream_bytes_sent(qlog: Path) -> int:
    _, events = load_any(qlog)
    return sum(
        int(f.get("length") or 0)
        for e in events
        if e["name"] == "transport:packet_sent"
        for f in (e.get("data") or {}).get("frames") or []
        if f.get("frame_type") == "stream"
    )


@pytest.mark.skipif(shutil.which("tshark") is None, reason="needs tshark (scripts/setup.sh installs it)")
@needs_testbed("linkem", "endpoint")
@pytest.mark.parametrize("name", [pytest.param(n, marks=_needs(n)) for n in ("s2n-quic", "kwik")])
def test_key_log_decrypts_and_the_qlog_has_every_packet(tmp_path: Path, name: str):
    out, runs = _run(
        tmp_path,
        f"""name = "keylog-{name}"
rounds = 1
retries = 1
workloads = ["{OBJECTS}x20k"]
[[links]]
rate_mbit = 20
rtt_ms = 20
[fidelity]
exclude_flagged = false
[capture]
pcap = "full"
keylog = true
[[arms]]
label = "{name}"
protocol = "h3"
server = "{name}"
client = "{name}"
""",
        name,
    )
    assert [r["status"] for r in runs] == ["ok"], [(r["status"], r["error"]) for r in runs]
    r = runs[0]
    arts, details = r["artifacts"], r["details"]
    assert r["protocol_negotiated"] == "h3"
    pcap, keylog = out / arts["pcap"], out / arts["keylog"]
    assert keylog.stat().st_size > 0, "the client wrote no key log"
    port = urlsplit(details["url"]).port
    frames = tshark(pcap, keylog, port, "http3", ["http3.frame_type"])
    types = [int(t, 0) for row in frames for t in row[0].split(",") if t]
    assert H3_HEADERS in types, f"no HTTP/3 HEADERS frame decrypted in {pcap}"
    up, down, _ = quic_packets(pcap, keylog, port)  # every packet decrypted, or it fails
    _, events = load_any(out / arts["qlog_raw"])
    sent = sum(e["name"] == "transport:packet_sent" for e in events)
    received = sum(e["name"] == "transport:packet_received" for e in events)
    # no loss on the link: the server logged each packet the router saw, each way, but for
    # the few after its log ended with the connection's close (LATE_PACKETS)
    late = LATE_PACKETS[name]
    seen = {"pcap": (up, down), "server qlog": (received, sent)}
    assert up - late["received"] <= received <= up and down - late["sent"] <= sent <= down, seen
    assert _stream_bytes_sent(out / arts["qlog_raw"]) >= OBJECTS * SIZE


@needs_testbed("linkem", "endpoint")
@pytest.mark.parametrize("spec", [pytest.param("s2n-quic", marks=_needs("s2n-quic"))])
def test_s2n_quic_bbr_writes_its_states(tmp_path: Path, spec: str):
    out, runs = _run(
        tmp_path,
        f"""name = "s2n-bbr"
rounds = 1
retries = 1
workloads = ["bulk:3m"]
[[links]]
rate_mbit = 50
rtt_ms = 36
buffer_bytes = 225000
[fidelity]
exclude_flagged = false
[[arms]]
label = "bbr"
protocol = "h3"
server = "{spec}"
client = "{spec}"
server_cc = "bbr"
""",
        "bbr",
    )
    assert [r["status"] for r in runs] == ["ok"], [(r["status"], r["error"]) for r in runs]
    arts = runs[0]["artifacts"]
    _, raw = load_any(out / arts["qlog_raw"])
    states = [e["data"]["new"] for e in raw if e["name"] == "recovery:congestion_state_updated"]
    assert states[:2] == ["drain", "probe_bw"], states  # it leaves Startup after filling the pipe
    _, ours = load_any(out / arts["qlog"])
    table3 = [e["data"]["new"] for e in ours if e["name"] == "recovery:congestion_state_updated"]
    assert table3[:2] == ["Recovery", "CongestionAvoidance"], table3  # drain, probe_bw
    machine = analyse_runs(load_runs(out)).machines[0]
    assert machine.states_source == "emitted", machine.states_source
    json.loads((out / arts["fetch"]).read_text())  # the fetch JSON is whole
