"""The split-connection proxies of the proxy topology (`endpoint proxy`, docs/interfaces.md),
started in the proxy namespace on first use and kept for the experiment (the testbed's
teardown ends them).

- TCP: one transparent relay. While a run goes through it, a nat REDIRECT in the proxy
  namespace sends the client's connections to the origin's port to the relay, which
  connects onward to their original destination: the client still talks TLS with the origin.
- QUIC: an HTTP/3 reverse proxy per origin port, at the proxy's address on segment A and the
  same port; the client trusts the proxy's own certificate (`trust_dir`: the origin's and the
  proxy's certificates, one bundle).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from ..binaries import find_binary
from ..testbed.host import TestbedError, tool
from ..testbed.topology import PROXY_ADDR, SERVER_ADDR
from .endpoint import wait_for_ready

TCP_PROXY_PORT = 9443
LOG_FILE = "proxy.jsonl"


@dataclass
class ProxyPool:
    testbed: object
    root: Path  # logs, the proxy's certificate, the client's trust bundle
    origin_cert: Path  # the origin server's cert.pem
    tcp: subprocess.Popen | None = None
    quic: dict[int, subprocess.Popen] = field(default_factory=dict)
    _liberal: bool = False

    @property
    def trust_dir(self) -> Path:
        """A cert dir whose cert.pem the client trusts for the QUIC proxy (and the origin)."""
        return self.root / "client-trust"

    def _start(self, name: str, argv: list[str]) -> subprocess.Popen:
        log_dir = self.root / name
        log_dir.mkdir(parents=True, exist_ok=True)
        stderr = log_dir / "proxy.stderr"
        proc = self.testbed.popen(
            "proxy",
            [str(find_binary("endpoint")), "proxy", *argv, "--log-dir", str(log_dir)],
            stdout=subprocess.PIPE,
            stderr=open(stderr, "ab"),
            text=True,
        )
        wait_for_ready(proc, 15.0, stderr)
        return proc

    @contextlib.contextmanager
    def tcp_route(self, origin_port: int) -> Iterator[None]:
        """While inside, TCP connections from the client to the origin's port go through the
        relay (nat REDIRECT on the proxy's segment-A side)."""
        if self.tcp is None or self.tcp.poll() is not None:
            self.tcp = self._start("tcp", ["--mode", "tcp", "--listen", f"0.0.0.0:{TCP_PROXY_PORT}"])
        rule = [
            "PREROUTING",
            "-i",
            "p0",
            "-p",
            "tcp",
            "-d",
            SERVER_ADDR,
            "--dport",
            str(origin_port),
            "-j",
            "REDIRECT",
            "--to-ports",
            str(TCP_PROXY_PORT),
        ]
        self._iptables("-A", rule)
        if not self._liberal:
            # conntrack must not mark out-of-window segments of a lossy path INVALID: those
            # would skip the REDIRECT and reach the origin directly
            self.testbed.run(
                "proxy", [tool("sysctl"), "-qw", "net.netfilter.nf_conntrack_tcp_be_liberal=1"], check=False
            )
            self._liberal = True
        try:
            yield
        finally:
            self._iptables("-D", rule)

    def _iptables(self, op: str, rule: list[str]) -> None:
        self.testbed.run("proxy", [tool("iptables"), "-t", "nat", op, *rule])

    def quic_route(self, origin_port: int) -> tuple[str, int]:
        """(host, port) of the HTTP/3 proxy in front of the origin's port."""
        proc = self.quic.get(origin_port)
        if proc is None or proc.poll() is not None:
            cert_dir = self.root / "quic-cert"
            self.quic[origin_port] = self._start(
                f"quic-{origin_port}",
                [
                    "--mode",
                    "quic",
                    "--listen",
                    f"{PROXY_ADDR}:{origin_port}",
                    "--origin",
                    f"{SERVER_ADDR}:{origin_port}",
                    "--origin-ca",
                    str(self.origin_cert),
                    "--cert-dir",
                    str(cert_dir),
                ],
            )
            self.trust_dir.mkdir(parents=True, exist_ok=True)
            (self.trust_dir / "cert.pem").write_text(self.origin_cert.read_text() + (cert_dir / "cert.pem").read_text())
        return PROXY_ADDR, origin_port

    def alive(self) -> bool:
        return all(p.poll() is None for p in [*([self.tcp] if self.tcp else []), *self.quic.values()])

    def take_log(self, client_addr: str | None, dest: Path, wait_s: float = 15.0) -> list[dict]:
        """The proxy's log lines of the connections from `client_addr` (ip:port, as the fetch
        reports its local address), written to `dest`. A connection's line is written when
        both its directions have ended; on a lossy, long path the closing FINs can need
        several retransmission timeouts after the client is done (a fixed 2 s wait missed
        them), so wait up to `wait_s`; a line already there costs no wait."""
        if not client_addr:
            return []
        deadline = time.monotonic() + wait_s
        while True:
            lines = [
                d
                for f in sorted(self.root.glob(f"*/{LOG_FILE}"))
                for d in _read_lines(f)
                if d.get("client") == client_addr
            ]
            if lines or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        if lines:
            dest.write_text("".join(json.dumps(d) + "\n" for d in lines))
        return lines


def _read_lines(path: Path) -> list[dict]:
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # being written
    return out


def require_proxy_topology(testbed) -> None:
    if "proxy" not in testbed.ns:
        raise TestbedError(
            "a proxy needs the proxy topology: links with two segments (link_a, link_b)",
            hint="see scenarios/kakhki-proxy.toml",
        )
