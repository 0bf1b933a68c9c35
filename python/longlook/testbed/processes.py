"""Finding and ending the processes that live in a testbed's namespaces."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from .host import sh


def start_time(pid: int) -> int | None:
    """Kernel start time of a process (clock ticks since boot): with the pid it identifies a
    process even after the pid is reused. None when the process is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    return int(stat.rsplit(")", 1)[1].split()[19])


def is_alive(pid: int, started: int | None = None) -> bool:
    st = start_time(pid)
    return st is not None and (started is None or st == started)


def pids_in_namespace(ns: str) -> list[int]:
    p = sh(["ip", "netns", "pids", ns], check=False)
    return [int(x) for x in p.stdout.split() if x.isdigit()]


def netns_inode(pid_or_path: int | str) -> int | None:
    path = f"/proc/{pid_or_path}/ns/net" if isinstance(pid_or_path, int) else pid_or_path
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


def terminate(pids: list[int], grace_s: float = 2.0) -> list[int]:
    """SIGTERM, wait up to `grace_s`, then SIGKILL what is left. Returns the pids signalled."""
    signalled = []
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
            signalled.append(pid)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(_running(p) for p in signalled):
        time.sleep(0.02)
    for pid in signalled:
        if _running(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    return signalled


def _running(pid: int) -> bool:
    """Alive and not a zombie (a zombie child of ours counts as ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def processes_named(names: tuple[str, ...]) -> list[int]:
    """Pids whose executable's file name is one of `names` (e.g. linkem, linkem-probe)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            exe = os.readlink(entry / "exe")
        except OSError:
            continue
        if Path(exe.removesuffix(" (deleted)")).name in names:
            found.append(int(entry.name))
    return found


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process so far, from /proc/<pid>/stat."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def stop_child(process: subprocess.Popen, grace_s: float = 5.0) -> None:
    """SIGTERM a child we started, SIGKILL it after `grace_s`, and reap it."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
