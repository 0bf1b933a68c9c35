"""The host's tools and privileges the testbed needs, found once, with errors that say how to fix."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import warnings
from functools import cache

from ..errors import LonglookError

# The tools live in /usr/sbin, which is often not on a sudo or cron PATH.
_SBIN = ("/usr/sbin", "/sbin", "/usr/local/sbin")
_PACKAGES = {"ip": "iproute2", "ethtool": "ethtool", "iptables": "iptables", "nft": "nftables"}


class TestbedError(LonglookError):
    """The testbed could not be built, or broke while in use."""

    __test__ = False  # not a pytest test class, despite its name


def require_root() -> None:
    if os.geteuid() != 0:
        raise TestbedError("longlook needs root to create network namespaces: run it with sudo")


@cache
def tool(name: str) -> str:
    """Absolute path of a host tool (ip, ethtool, iptables)."""
    found = shutil.which(name) or shutil.which(name, path=os.pathsep.join(_SBIN))
    if not found:
        pkg = _PACKAGES.get(name, name)
        raise TestbedError(
            f"'{name}' is not installed; the testbed needs it", hint=f"install it: apt-get install {pkg}"
        )
    return found


CPU_LATENCY_ENV = "LONGLOOK_CPU_LATENCY_US"
# 1 µs, not 0: with 0 idle vCPUs poll, the hypervisor sees them always busy and takes
# ~8 ms slices from them (measured: 6 stalls of 8 ms in 40 s on an idle guest, every video
# run flagged); 1 µs still allows the guest's 1 µs haltpoll state, and had none.
DEFAULT_CPU_LATENCY_US = 1


DATAPATH_ENV = "LONGLOOK_DATAPATH"
# afpacket: linkem forwards itself between the router's devices (crates/linkem/src/afpacket.rs);
# nfqueue: the router's kernel forwards and linkem judges each packet through an NFQUEUE.
# AF_PACKET is the default: the whole test suite passes on both, and it is the faster (kernel
# ratio 0.70-0.74 vs 0.60-0.62 at 0 ms) and needs less CPU at 1 Gbit/s (crates/linkem/README.md).
DATAPATHS = ("afpacket", "nfqueue")
DEFAULT_DATAPATH = "afpacket"


def linkem_datapath(asked: str | None = None) -> str:
    """How packets reach linkem: `asked`, else LONGLOOK_DATAPATH, else DEFAULT_DATAPATH."""
    value = asked or os.environ.get(DATAPATH_ENV, DEFAULT_DATAPATH)
    if value not in DATAPATHS:
        where = "datapath" if asked else DATAPATH_ENV
        raise TestbedError(
            f"{where}={value!r} is not a datapath linkem has",
            hint=f"use one of {', '.join(DATAPATHS)} (default {DEFAULT_DATAPATH})",
        )
    return value


def cpu_wakeup_latency_us() -> int:
    """The CPU wake-up latency (µs) the testbed and linkem ask for: DEFAULT_CPU_LATENCY_US
    unless LONGLOOK_CPU_LATENCY_US says otherwise (one value for both, so they agree)."""
    raw = os.environ.get(CPU_LATENCY_ENV, str(DEFAULT_CPU_LATENCY_US))
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise TestbedError(
            f"{CPU_LATENCY_ENV}={raw!r} is not a whole number of µs ≥ 0",
            hint=f"unset it (default {DEFAULT_CPU_LATENCY_US} µs) or give e.g. {CPU_LATENCY_ENV}=0 (idle CPUs poll)",
        )
    return value


def hold_cpu_wakeup_latency(max_us: int = DEFAULT_CPU_LATENCY_US) -> int | None:
    """Ask the kernel's PM QoS for at most `max_us` of CPU wake-up latency until the returned
    fd is closed (the kernel drops the request then, also if we die). With 0, idle CPUs poll
    instead of halting; with 1, this KVM guest's haltpoll idle state (latency 1 µs) is
    allowed and deeper ones are not. Without a request a halted vCPU was woken 0.2-9 ms
    late under load; with 0 the always-busy vCPUs lost ~8 ms slices to the host. linkem
    holds the same request; holding it here too keeps a testbed without linkem (the plain
    baseline of `bench link`) on equal terms. None if the kernel refused (a warning)."""
    try:
        fd = os.open("/dev/cpu_dma_latency", os.O_WRONLY | os.O_CLOEXEC)
    except OSError as e:
        warnings.warn(f"/dev/cpu_dma_latency: {e}; idle CPUs may halt and wake late", stacklevel=2)
        return None
    os.write(fd, struct.pack("i", max_us))
    return fd


def preflight() -> None:
    """Everything a testbed needs from the host, checked before anything is created."""
    require_root()
    for name in _PACKAGES:
        tool(name)


def sh(argv: list[str], *, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess:
    """Run a host command (argv[0] resolved with `tool`); errors carry the command and stderr."""
    argv = [tool(argv[0]), *argv[1:]]
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise TestbedError(f"`{' '.join(argv)}` did not finish in {timeout} s") from None
    if check and p.returncode != 0:
        raise TestbedError(f"`{' '.join(argv)}` failed (exit {p.returncode}): {p.stderr.strip()}")
    return p
