"""A tracefs mount the namespaces can see, for exact TCP congestion-state transitions.

`ip netns exec` remounts /sys for the namespace, hiding /sys/kernel/tracing from the
server; a tracefs mounted under /run/longlook (in the host's mount namespace, before the
namespaced commands start) stays visible to them.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from .processes import is_alive

MOUNT = Path("/run/longlook/tracefs")
EVENT = "events/tcp/tcp_cong_state_set"
INSTANCE_PREFIX = "ll-endpoint-"  # the endpoint's private instances: ll-endpoint-<pid>


def tcp_tracefs() -> Path | None:
    """The mount, made if needed; None when the kernel lacks the tracepoint (the endpoint
    then falls back to sampling TCP_INFO)."""
    if not (MOUNT / EVENT).exists():
        MOUNT.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mount", "-t", "tracefs", "nodev", str(MOUNT)], capture_output=True)
    return MOUNT if (MOUNT / EVENT).exists() else None


def remove_stale_instances() -> list[str]:
    """Trace instances of endpoints that died without removing theirs (SIGKILL)."""
    removed = []
    for base in (MOUNT, Path("/sys/kernel/tracing")):
        instances = base / "instances"
        if not instances.is_dir():
            continue
        for inst in instances.glob(f"{INSTANCE_PREFIX}*"):
            pid = inst.name.removeprefix(INSTANCE_PREFIX)
            if pid.isdigit() and not is_alive(int(pid)):
                try:
                    inst.rmdir()  # tracefs removes an instance with rmdir, contents and all
                    removed.append(inst.name)
                except OSError:
                    pass
    return removed


def unmount_if_unused() -> bool:
    """Unmount our tracefs (when no live testbed may still use it)."""
    if not MOUNT.is_dir() or subprocess.run(["mountpoint", "-q", str(MOUNT)]).returncode != 0:
        return False
    return subprocess.run(["umount", str(MOUNT)], capture_output=True).returncode == 0
