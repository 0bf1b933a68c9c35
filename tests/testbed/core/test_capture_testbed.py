"""`[capture]` through the real testbed: one h3 and one h2 page load of our endpoint with
pcap = "full" and keylog = true. Debian's tshark decrypts each run's pcap with the run's key
log: HTTP/3 HEADERS frames and HTTP/2 frames are visible, and the QUIC packets the router
saw are the packets the server's and the client's qlogs log (no loss on this link, so every
packet that arrived at the router was also released). A few seconds of traffic."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from testbed_helpers import needs_testbed

from longlook.core.capture import KEYLOG_FILE, PCAP_FILE
from longlook.core.execute import Runner
from longlook.core.store import Store
from longlook.testbed.topology import CLIENT_ADDR
from longlook.kinds.pageload import Scenario

SCENARIO = """
name = "capture"
rounds = 1
protocols = ["h3", "h2"]
workloads = ["4x20k"]
retries = 1
[[links]]
rate_mbit = 20
rtt_ms = 20
[options]
zero_rtt = false
[fidelity]
exclude_flagged = false
[capture]
pcap = "full"
keylog = true
"""

H3_HEADERS = 0x01  # HTTP/3 frame type (RFC 9114, 7.2)


def tshark(pcap: Path, keylog: Path, port: int, display: str, fields: list[str]) -> list[list[str]]:
    """The fields of every packet `display` selects, decrypted with `keylog` (the run's port
    named as QUIC and as TLS: it is not 443)."""
    argv = [
        "tshark",
        "-n",
        "-r",
        str(pcap),
        "-o",
        f"tls.keylog_file:{keylog}",
        "-d",
        f"udp.port=={port},quic",
        "-d",
        f"tcp.port=={port},tls",
        "-Y",
        display,
        "-T",
        "fields",
        "-E",
        "occurrence=a",
        "-E",
        "aggregator=,",
        *[a for f in fields for a in ("-e", f)],
    ]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return [line.split("\t") for line in out.stdout.splitlines()]


def quic_packets(pcap: Path, keylog: Path, port: int) -> tuple[int, int, int]:
    """QUIC packets (coalesced ones each) the router saw arrive: up (client -> server),
    down, and those of the down direction that arrived after the client's first
    CONNECTION_CLOSE. Every packet must have been decrypted."""
    rows = tshark(
        pcap, keylog, port, "quic", ["ip.src", "quic.header_form", "quic.frame_type", "quic.decryption_failed"]
    )
    up = down = late = 0
    client_closed = False
    for src, forms, frame_types, *failed in rows:
        assert not any(failed), "a QUIC packet was not decrypted"
        n = len(forms.split(","))
        if src == CLIENT_ADDR:
            up += n
            client_closed |= bool({0x1C, 0x1D} & {int(t, 0) for t in frame_types.split(",") if t})
        else:
            down += n
            late += n if client_closed else 0
    return up, down, late


def qlog_packets(path: Path) -> dict[str, int]:
    """packet_sent / packet_received events of a JSON-SEQ qlog."""
    n = {"packet_sent": 0, "packet_received": 0}
    for line in path.read_text().splitlines():
        line = line.lstrip("\x1e").strip()
        if not line.startswith("{"):
            continue
        name = str(json.loads(line).get("name", ""))
        for k in n:
            if name.endswith(k):
                n[k] += 1
    return n


@pytest.mark.skipif(shutil.which("tshark") is None, reason="needs tshark (scripts/setup.sh installs it)")
@needs_testbed("linkem", "endpoint")
def test_pcap_and_key_log_decrypt_h3_and_h2(tmp_path: Path):
    out = tmp_path / "x"
    summary = Runner(Scenario.from_toml(SCENARIO), out, link_check=False).run()
    assert summary.ok == 2 and not summary.interrupted, summary
    with Store.open(out, read_only=True) as store:
        runs = {r["arm"]: r for _, r in store.runs_frame().iterrows()}
    assert set(runs) == {"h3", "h2"}
    sizes = {}
    for arm, r in runs.items():
        arts, details = r["artifacts"], r["details"]
        run_dir = out / Path(arts["pcap"]).parent
        pcap, keylog = out / arts["pcap"], out / arts["keylog"]
        assert (pcap.name, keylog.name) == (PCAP_FILE, KEYLOG_FILE)
        cap = details["capture"]
        assert cap["pcap_bytes"] == pcap.stat().st_size and cap["keylog_bytes"] == keylog.stat().st_size
        assert cap["pcap_capped"] is False
        sizes[arm] = cap
        port = urlsplit(details["url"]).port
        if arm == "h3":
            frames = tshark(pcap, keylog, port, "http3", ["http3.frame_type"])
            types = [int(t, 0) for row in frames for t in row[0].split(",") if t]
            assert H3_HEADERS in types, f"no HTTP/3 HEADERS frame decrypted in {pcap}"
            up, down, late = quic_packets(pcap, keylog, port)
            server = qlog_packets(out / arts["qlog"])
            client = qlog_packets(run_dir / "client.sqlog")
            seen = {"pcap": (up, down, late), "server": server, "client": client}
            # no loss on the link: every packet the router saw arrive, it released; the
            # server's qlog logs each of them
            assert (up, down) == (server["packet_received"], server["packet_sent"]), seen
            # the client sent all the up direction; it received all the down direction but
            # the server's last packets (its CONNECTION_CLOSE), which arrive after the client
            # closed its connection and stopped logging
            assert up == client["packet_sent"], seen
            assert down - late == client["packet_received"] and late <= 2, seen
        else:
            frames = tshark(pcap, keylog, port, "http2", ["http2.type"])
            types = {int(t) for row in frames for t in row[0].split(",") if t}
            assert {0, 1} <= types, f"HTTP/2 DATA and HEADERS not both decrypted in {pcap}: {types}"
    print("capture sizes:", json.dumps(sizes))
