"""Host socket buffers sized to the emulated path, so the host never caps a window the path allows.

A TCP sender can keep at most its send buffer in flight, a receiver advertise at most what its
receive buffer holds; the namespaces' defaults (tcp_wmem max 4 MB here) cap one Cubic flow
over 1 Gbit/s x 50 ms (6.25 MB BDP, plus a BDP of router buffer) near 500 Mbit/s: the testbed,
not the link, would be measured. So each end's `tcp_rmem`/`tcp_wmem` maximum is raised to
twice what the path can hold (its BDP plus the router's buffer; the kernel charges about half
a buffer to overhead), capped at 1 GiB; never lowered below what the namespace had (here
tcp_rmem 32 MiB, tcp_wmem 4 MiB).

UDP's `net.core.rmem_max`/`wmem_max` are read-only in a network namespace on this kernel (the
host's own value shows through), so QUIC stacks size their UDP buffers themselves: our
endpoint asks for `udp_buffer_bytes` with SO_RCVBUFFORCE (root), quic-go does the same on its
own. Both numbers are recorded with every run.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ..errors import LonglookError
from ..linkprofile import LinkProfile
from ..traces import load_mahimahi

MTU = 1500
KERNEL_DEFAULT_MAX = 4 * 1024 * 1024  # tcp_wmem's default maximum here; never set lower
CAP = 1 << 30
MIN_UDP = 4 * 1024 * 1024  # a 16 ms hypervisor stall at 1 Gbit/s is 2 MB of datagrams
UNKNOWN_RATE_MBIT = 1000.0  # a trace not readable here: size for a gigabit


@dataclass(frozen=True)
class HostBuffers:
    """The socket buffer limits the testbed set for a link (bytes)."""

    path_bytes: int  # what the path can hold in flight: BDP + router buffer, the larger direction
    tcp_rmem_max: int  # in the client's and server's namespaces
    tcp_wmem_max: int
    udp_bytes: int  # what our endpoint asks for its UDP socket, each way

    def as_dict(self) -> dict:
        return asdict(self)

    def sysctls(self) -> list[str]:
        """The namespace-local settings (min and default as the kernel's)."""
        return [
            f"net.ipv4.tcp_rmem=4096 131072 {self.tcp_rmem_max}",
            f"net.ipv4.tcp_wmem=4096 16384 {self.tcp_wmem_max}",
        ]


def _peak_rate_mbit(profile: LinkProfile, which: str, base_dir: Path | None) -> float:
    d = profile.resolved(which)
    if d.rate_mbit is not None:
        return d.rate_mbit
    try:  # a trace: its busiest 100 ms, the rate a window must cover
        opportunities = load_mahimahi((base_dir or Path.cwd()) / d.trace)
    except LonglookError:  # an unreadable trace fails where linkem loads it, with its own error
        return UNKNOWN_RATE_MBIT
    busiest = np.bincount(opportunities // 100).max()
    return float(busiest) * MTU * 8 / 0.1 / 1e6


def path_bytes(profile: LinkProfile, base_dir: Path | None = None) -> int:
    """Bytes the path holds when full: each direction's rate x the RTT, plus its buffer."""
    rtt_s = profile.rtt_ms() / 1000
    held = []
    for which in ("up", "down"):
        d = profile.resolved(which)
        bdp = _peak_rate_mbit(profile, which, base_dir) * 1e6 / 8 * max(rtt_s, 0.001)
        buffer = d.buffer_bytes or (d.buffer_packets or 0) * MTU
        held.append(int(bdp + buffer))
    return max(held)


def host_buffers(
    profile: LinkProfile | None,
    base_dir: Path | None = None,
    *,
    floors: tuple[int, int] = (KERNEL_DEFAULT_MAX, KERNEL_DEFAULT_MAX),
) -> HostBuffers:
    """`floors`: the namespace's own tcp_rmem and tcp_wmem maxima, never lowered."""
    if profile is None:
        return HostBuffers(0, *floors, MIN_UDP)
    held = path_bytes(profile, base_dir)
    need = min(CAP, 2 * held)
    return HostBuffers(held, max(floors[0], need), max(floors[1], need), min(CAP, max(MIN_UDP, 2 * held)))
