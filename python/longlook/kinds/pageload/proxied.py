"""A page load through the cell's proxy (stacks/proxies.py): which runs it applies to, the
URL and trust the client gets, and what the run records of it.

`proxy = "tcp"`: the h2 arm's connection is relayed (transparently: same URL, the origin's
certificate); `proxy = "quic"`: the h3 arm fetches from the HTTP/3 proxy (its address, its
certificate). The other protocol's arm, and every arm of a `none` cell, go straight through
the proxy namespace (kernel forwarding), over the same two emulated segments.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from ...core.kind import RunContext
from ...stacks.endpoint import SERVER_ADDR
from ...stacks.proxies import ProxyPool, require_proxy_topology
from .spec import RunOptions

PROXY_LOG = "proxy.jsonl"
APPLIES = {"tcp": "h2", "quic": "h3"}  # proxy mode -> the protocol it carries


@dataclass
class Route:
    mode: str  # the cell's proxy mode
    proxied: bool  # this run goes through a proxy
    host: str
    port: int
    cert_dir: Path  # what the client trusts
    pool: ProxyPool | None = None

    def url(self, path: str) -> str:
        return f"https://{self.host}:{self.port}{path}"

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        if self.proxied and self.mode == "tcp":
            with self.pool.tcp_route(self.port):
                yield
        else:
            yield

    def record(self, document: dict, run_dir: Path) -> tuple[dict[str, str], dict[str, Any]]:
        """(artifacts, details) of the run: the proxy mode always; when proxied, the proxy's
        log of the run's connection and its timings."""
        details: dict[str, Any] = {"proxy": self.mode, "proxied": self.proxied}
        if not self.proxied:
            return {}, details
        lines = self.pool.take_log(document.get("local_addr"), run_dir / PROXY_LOG)
        if not lines:
            details["proxy_log_missing"] = True  # visible, never silently absent
            return {}, details
        line = lines[-1]
        details["proxy_connection"] = {k: v for k, v in line.items() if k != "requests"}
        return {"proxy_log": PROXY_LOG}, details


def proxies(testbed, experiment_dir: Path, origin_cert: Path) -> ProxyPool | None:
    """The proxies of a testbed with the proxy topology (started on first use), for the
    kind's session; None without the topology."""
    return ProxyPool(testbed, experiment_dir / "proxies", origin_cert) if "proxy" in testbed.ns else None


def route_for(ctx: RunContext, opts: RunOptions, port: int) -> Route:
    cert_dir = ctx.session["servers"].cert_dir
    if opts.proxy == "none" or APPLIES.get(opts.proxy) != opts.protocol:
        return Route(opts.proxy, False, SERVER_ADDR, port, cert_dir)
    pool = ctx.session["proxies"]
    if pool is None:
        require_proxy_topology(ctx.testbed)  # one clear error
    if opts.proxy == "quic":
        host, qport = pool.quic_route(port)
        return Route(opts.proxy, True, host, qport, pool.trust_dir, pool)
    return Route(opts.proxy, True, SERVER_ADDR, port, cert_dir, pool)
