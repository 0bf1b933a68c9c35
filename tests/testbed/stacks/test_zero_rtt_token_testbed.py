"""A resumed (0-RTT) h3 connection of our endpoint is not held by anti-amplification: the
warm-up connection's NEW_TOKEN token validates the client's address from its first packet,
so a 5.6 KB HTML arrives within one RTT of t0, as with gQUIC's source-address token and
Chromium's IETF QUIC. Without the token the server may send only 3x what the client sent
(RFC 9000 §8.1) until the handshake completes, and the HTML took two RTTs. Seconds of traffic."""

from __future__ import annotations

from pathlib import Path

from testbed_helpers import needs_testbed

from longlook.linkprofile import LinkProfile
from longlook.stacks.endpoint import SERVER_ADDR, EndpointServer, ServerOptions, fetch
from longlook.testbed import Testbed

RTT_MS = 36.0
PAGE = "/page/200x5k.html"  # HTML of 5.6 KB: over 3x a client's first flight


def resumed_html_ms(tmp_path: Path, runs: int, binary: Path | None = None) -> list[dict]:
    """`runs` page loads with --zero-rtt over a 36 ms path; each one's fetch document."""
    link = LinkProfile(rate_mbit=100, delay_ms=RTT_MS / 2, buffer_bytes=450_000)
    certs = tmp_path / "cert"
    docs = []
    with Testbed(link, workdir=tmp_path / "tb") as tb:
        server = EndpointServer.start(
            tb, ServerOptions(), port=4433, cert_dir=certs, log_dir=tmp_path / "logs", binary=binary
        )
        for i in range(runs):
            r = fetch(
                tb,
                url=f"https://{SERVER_ADDR}:4433{PAGE}",
                protocol="h3",
                run_id=f"z{i}",
                cert_dir=certs,
                out=tmp_path / f"z{i}.json",
                timeout_s=30,
                zero_rtt=True,
                binary=binary,
            )
            assert r.status == "ok", r.error
            docs.append(r.document)
        server.stop()
    return docs


@needs_testbed("linkem", "endpoint")
def test_resumed_connection_gets_a_6kb_html_within_one_rtt(tmp_path: Path):
    docs = resumed_html_ms(tmp_path, runs=3)
    for d in docs:
        z = d["zero_rtt"]
        assert z["accepted"] and z["token_presented"], z
        html = d["objects"][0]
        assert html["path"] == PAGE and html["bytes"] > 5_000, html
        # one RTT plus serialisation and scheduling; two RTTs (72 ms) without the token
        assert html["end_ms"] < 1.5 * RTT_MS, (html, z)
