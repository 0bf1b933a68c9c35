"""The kernel's TCP ECN in the client's and server's namespaces (net.ipv4.tcp_ecn, a
per-namespace sysctl): 1 asks for ECN on the connections a side opens and answers it, 0 does
neither, 2 (the kernel's default, DEFAULT) answers a peer that asks but never asks itself.
A run that switches it puts the default back when it ends, so the next run (another cell or
arm, which may leave ECN at its default) meets the namespaces as created."""

from __future__ import annotations

import contextlib
from typing import Iterator

from . import topology

DEFAULT = 2
ROLES = ("client", "server")


def _set(testbed, value: int) -> None:
    for role in ROLES:
        topology.set_sysctls(testbed.ns[role], [f"net.ipv4.tcp_ecn={value}"])


@contextlib.contextmanager
def tcp_ecn(testbed, on: bool | None) -> Iterator[None]:
    """TCP ECN on (True) or off (False) at both ends for the block; None leaves the default."""
    if on is None:
        yield
        return
    _set(testbed, 1 if on else 0)
    try:
        yield
    finally:
        _set(testbed, DEFAULT)
