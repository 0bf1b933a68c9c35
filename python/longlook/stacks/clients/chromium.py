"""Headless Chromium as a page-load client, with `endpoint.fetch`'s signature.

Each run starts `python -m longlook.stacks.clients.chromium_driver` inside the client namespace
(the browser must live there, and its DevTools pipe with it); the driver launches a fresh
Chromium, loads the page, and writes the fetch JSON and a HAR beside `out`.

    fetch = chromium_fetcher(quic="pinned")        # h3 runs forced, h2 runs with QUIC off
    fetch = chromium_fetcher(quic="discovery")     # Alt-Svc discovery and racing
    result = fetch(testbed, url=..., protocol="h3", run_id=..., cert_dir=..., out=...,
                   timeout_s=60)

The run's protocol is what the browser reported for every object ("mixed" if they differ),
so a page that fell back to TCP, even partly, never counts as h3.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from ..endpoint import server_spki
from ..fetch_result import FetchResult, fetch_result
from ...errors import LonglookError
from ...testbed.processes import stop_child
from .chromium_driver import DEFAULT_CHROMIUM, EXIT_PROTOCOL_MISMATCH, EXIT_TIMEOUT

# seconds the driver may take beyond the page's timeout: browser start-up and shutdown
DRIVER_GRACE_S = 15.0
HAR_NAME = "page.har"
NETLOG_NAME = "chromium-netlog.json"
INSTALL_HINT = "install it with `apt-get install -y chromium` (scripts/setup.sh does, with retries)"


def chromium_path() -> str:
    """The browser to drive: $LONGLOOK_CHROMIUM, else Debian's /usr/bin/chromium."""
    path = os.environ.get("LONGLOOK_CHROMIUM") or DEFAULT_CHROMIUM
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        found = shutil.which("chromium")
        if found is None:
            raise LonglookError(f"Chromium was not found at {path} nor on PATH", hint=INSTALL_HINT)
        path = found
    return path


def quic_mode(protocol: str, quic: str) -> str:
    """The Chromium driver's --quic for a run (page loads and dash.js alike): "discovery"
    lets Chromium learn h3 from Alt-Svc and race (a returning visitor), "first-visit" the same
    for a browser that never saw the origin; "pinned" (or "forced") forces QUIC for h3 and
    disables it otherwise."""
    if quic in ("discovery", "first-visit"):
        return quic
    return "forced" if protocol == "h3" else "off"


def fetch(
    testbed,
    *,
    url: str,
    protocol: str,
    run_id: str,
    cert_dir: Path,
    out: Path,
    timeout_s: float,
    mode: str = "page",
    zero_rtt: bool = False,
    keylog: Path | None = None,
    quic: str = "pinned",
    netlog: bool = False,
) -> FetchResult:
    """One page load (or, `mode` "bulk", one object fetch()ed by a page of its origin) in a
    fresh Chromium in the client namespace. `zero_rtt` is not
    supported: a fresh profile per run holds no session ticket (reported as not attempted).
    With `netlog`, Chromium's net-log (its QUIC congestion events) is kept beside `out`;
    with `keylog`, its TLS secrets are written there (`--ssl-key-log-file`)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    argv = [
        sys.executable,
        "-m",
        "longlook.stacks.clients.chromium_driver",
        "--url",
        url,
        "--quic",
        quic_mode(protocol, quic),
        "--spki",
        server_spki(Path(cert_dir) / "cert.pem"),
        "--run-id",
        run_id,
        "--out",
        str(out),
        "--har",
        str(out.with_name(HAR_NAME)),
        "--timeout-s",
        str(timeout_s),
        "--protocol-requested",
        protocol,
        "--mode",
        mode,
        "--chromium",
        chromium_path(),
    ]
    if netlog:
        argv += ["--netlog", str(out.with_name(NETLOG_NAME))]
    if keylog is not None:
        argv += ["--keylog", str(keylog)]
    started = time.monotonic()
    # Not testbed.run: a timeout or a non-zero exit is this run's outcome, not a testbed fault.
    proc = subprocess.Popen(
        testbed.exec_argv("client", argv),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=driver_env(),
    )
    try:
        _, stderr = proc.communicate(timeout=timeout_s + DRIVER_GRACE_S)
    except subprocess.TimeoutExpired:
        stop_child(proc)  # SIGTERM first: the driver closes its browser on the way out
        testbed.check()
        return FetchResult(
            "timeout", {}, f"no result within {timeout_s + DRIVER_GRACE_S:.0f} s", time.monotonic() - started
        )
    wall = time.monotonic() - started
    testbed.check()  # a result obtained over a dead link is not a result
    return classify(proc.returncode, out, stderr, protocol, wall)


# Chromium's net errors by the phase they name, as `endpoint fetch` reports failure_phase
_NET_ERROR_PHASES = (
    ("handshake", ("SSL", "CERT", "QUIC_HANDSHAKE", "QUIC_PROTOCOL", "HTTP2_PROTOCOL")),
    (
        "connect",
        (
            "CONNECTION_REFUSED",
            "CONNECTION_TIMED_OUT",
            "ADDRESS_UNREACHABLE",
            "CONNECTION_FAILED",
            "NAME_NOT_RESOLVED",
            "NETWORK_CHANGED",
        ),
    ),
    ("transfer", ("CONNECTION_RESET", "CONNECTION_CLOSED", "EMPTY_RESPONSE", "INCOMPLETE_CHUNKED")),
)


def failure_phase(error: str | None) -> str | None:
    """`net::ERR_SSL_...` -> "handshake" etc.; None when the error names no phase."""
    if not error or "ERR_" not in error:
        return None
    name = error.split("ERR_", 1)[1]
    for phase, markers in _NET_ERROR_PHASES:
        if any(name.startswith(m) for m in markers):
            return phase
    return "request" if "TIMED_OUT" in name else None


def classify(returncode: int, out: Path, stderr: str, protocol: str, wall: float) -> FetchResult:
    """The driver's exit and document -> ok / failed / timeout / protocol_mismatch, with the
    same meaning as for the native client."""
    result = fetch_result(
        out,
        returncode,
        stderr,
        protocol,
        wall,
        timed_out=returncode == EXIT_TIMEOUT,
        protocol_unavailable=returncode == EXIT_PROTOCOL_MISMATCH,
    )
    if result.status != "ok" and result.document and "failure_phase" not in result.document:
        result.document["failure_phase"] = failure_phase(result.error)
    return result


def chromium_fetcher(*, quic: str = "pinned", netlog: bool = False) -> Callable[..., FetchResult]:
    if quic not in ("pinned", "discovery"):
        raise LonglookError(f"chromium quic mode {quic!r}: use pinned or discovery")
    chromium_path()  # fail before the grid starts, not on its first run
    return functools.partial(fetch, quic=quic, netlog=netlog)


def driver_env() -> dict[str, str]:
    """The driver imports longlook from wherever this process does."""
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[3])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    return env
