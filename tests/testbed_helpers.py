"""Shared by the testbed tests: skip reasons, and the path to the longlook command."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from longlook.errors import LonglookError

REPO = Path(__file__).resolve().parents[1]
LONGLOOK = [sys.executable, "-m", "longlook.cli"]


def _missing(name: str) -> bool:
    from longlook.binaries import find_binary

    try:
        find_binary(name)
        return False
    except LonglookError:
        return True


def needs_testbed(*binaries: str):
    """Mark a test as a real-namespace test, skipped with a reason when it cannot run here."""
    reasons = []
    if os.geteuid() != 0:
        reasons.append("needs root (network namespaces)")
    if not shutil.which("ip") and not Path("/usr/sbin/ip").exists():
        reasons.append("needs iproute2")
    for b in binaries:
        if _missing(b):
            reasons.append(f"{b} is not built (cargo build --release -p linkem)")
    marks = [pytest.mark.testbed, pytest.mark.timeout(180)]
    if reasons and os.environ.get("CI"):
        # In CI everything is installed by scripts/setup.sh: a missing piece is a failure,
        # never a quietly skipped (and so vacuously green) testbed test.
        return _fail_with("; ".join(reasons), marks)
    if reasons:
        marks.append(pytest.mark.skip(reason="; ".join(reasons)))

    def apply(f):
        for m in marks:
            f = m(f)
        return f

    return apply


def _fail_with(reason: str, marks):
    import functools

    def apply(f):
        @functools.wraps(f)
        def failing(*args, **kwargs):
            pytest.fail(f"CI cannot run this testbed test: {reason}")

        for m in marks:
            failing = m(failing)
        return failing

    return apply


def namespaces() -> list[str]:
    import subprocess

    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def dead_endpoints_trace_instances() -> list[str]:
    """Private tracefs instances (ll-endpoint-<pid>) of endpoints that are gone: what a
    killed endpoint could not remove, and a testbed's teardown must."""
    from longlook.testbed.processes import is_alive
    from longlook.testbed.tracefs import INSTANCE_PREFIX, tcp_tracefs

    tracefs = tcp_tracefs()
    if tracefs is None:
        return []
    return [
        i.name
        for i in (tracefs / "instances").glob(f"{INSTANCE_PREFIX}*")
        if not is_alive(int(i.name.removeprefix(INSTANCE_PREFIX)))
    ]


def bulk_fetch(tb, certs: Path, out: Path, protocol: str, size: str, *, port: int = 4433, timeout_s: float = 20):
    """One bulk download of `size` from our endpoint's server with our client."""
    from longlook.stacks.endpoint import SERVER_ADDR, fetch

    return fetch(
        tb,
        url=f"https://{SERVER_ADDR}:{port}/bulk/{size}",
        protocol=protocol,
        run_id=out.stem,
        cert_dir=certs,
        out=out,
        timeout_s=timeout_s,
        mode="bulk",
    )


def estab_resets(tb, role: str) -> int:
    """Connections of the namespace reset from ESTABLISHED (Tcp EstabResets, /proc/net/snmp)."""
    lines = [ln.split() for ln in tb.run(role, ["cat", "/proc/net/snmp"]).stdout.splitlines() if ln.startswith("Tcp:")]
    return int(dict(zip(lines[0], lines[1]))["EstabResets"])


# the video kind's clips are encoded by Debian's ffmpeg
needs_ffmpeg = pytest.mark.skipif(not shutil.which("ffmpeg"), reason="needs ffmpeg (apt-get install -y ffmpeg)")
