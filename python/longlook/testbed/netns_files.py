"""A /proc/net file of a testbed namespace, read from this process in a few microseconds.

`ip netns exec NS cat /proc/net/snmp` costs a process (10-20 ms here), too much to read twice
per run for the run's audit. A thread can join another network namespace by itself (setns
with CLONE_NEWNET changes only the calling thread) and read /proc/thread-self/net/..., which
shows its own namespace's counters; the thread then ends, and no other thread of longlook
ever leaves the host's namespace. Python 3.11 has no os.setns, hence libc's through ctypes.
"""

from __future__ import annotations

import ctypes
import os
import threading

CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def read_in_namespace(ns: str, name: str) -> str | None:
    """/proc/net/`name` (e.g. "snmp") as namespace `ns` (a name under /run/netns) sees it;
    None when the namespace or the file cannot be read."""
    out: list[str] = []

    def read() -> None:
        try:
            fd = os.open(f"/run/netns/{ns}", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return
        try:
            if _libc.setns(fd, CLONE_NEWNET) != 0:
                return
        finally:
            os.close(fd)
        try:
            with open(f"/proc/thread-self/net/{name}") as f:
                out.append(f.read())
        except OSError:
            return

    t = threading.Thread(target=read, name=f"netns-read-{ns}", daemon=True)
    t.start()
    t.join(5)
    return out[0] if out else None
