"""Removing what crashed runs left behind: namespaces, linkem and probe processes, records.

Only what is ours: `ll-` namespaces, and processes of our binaries inside them or inside a
namespace that no longer has a name. Testbeds whose owning process is alive are left alone.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from . import cpu, ownership, processes, topology

OUR_BINARIES = ("linkem", "linkem-probe", "endpoint")

from .tracefs import remove_stale_instances, unmount_if_unused  # noqa: E402


@dataclass
class Cleaned:
    namespaces: list[str] = field(default_factory=list)
    pids: list[int] = field(default_factory=list)
    records: list[str] = field(default_factory=list)
    skipped_live: list[str] = field(default_factory=list)
    trace_instances: list[str] = field(default_factory=list)
    cgroups: list[str] = field(default_factory=list)  # client CPU groups (testbed/cpu.py)

    def is_empty(self) -> bool:
        return not (self.namespaces or self.pids or self.records or self.trace_instances or self.cgroups)


def teardown_namespaces(names: list[str]) -> tuple[list[str], list[int]]:
    """End every process in the namespaces, then delete them. Returns (deleted, pids)."""
    pids = []
    for name in names:
        pids += processes.terminate(processes.pids_in_namespace(name))
    return topology.delete(names), pids


def clean(
    include_live: bool = False,
    orphans: bool = True,
    ids: set[str] | None = None,
    open_here: frozenset[str] = frozenset(),
) -> Cleaned:
    """Remove leftovers of testbeds whose owner is gone (or all, with `include_live`).
    `orphans`: also `ll-` namespaces with no record (and stray processes of our binaries);
    the automatic clean at testbed start leaves those to an explicit `longlook clean`.
    `ids`: only these testbeds (their records and `ll-<id>-*` namespaces).
    `open_here`: testbeds this process has open; a record of ours not among them is a
    leftover of an earlier testbed of this process, one among them is live."""
    result = Cleaned()
    live: set[str] = set()
    for rec in ownership.all_records():
        if ids is not None and rec.id not in ids:
            continue
        if rec.owner_alive() and (rec.owner_pid != os.getpid() or rec.id in open_here) and not include_live:
            live.update(rec.namespaces)
            result.skipped_live.append(rec.id)
            continue
        if rec.linkem_pid and processes.is_alive(rec.linkem_pid, rec.linkem_started):
            result.pids += processes.terminate([rec.linkem_pid])
        rec.remove()
        result.records.append(rec.id)

    recorded_dead = {n for rec_id in result.records for n in topology.namespace_names(rec_id, proxy=True).values()}
    ours = [
        n
        for n in topology.existing_namespaces()
        if n.startswith(topology.NS_PREFIX)
        and n not in live
        and (orphans or n in recorded_dead)
        and (ids is None or n.rsplit("-", 1)[0].removeprefix(topology.NS_PREFIX) in ids)
    ]
    deleted, pids = teardown_namespaces(ours)
    result.namespaces += deleted
    result.pids += pids
    live_ids = set(result.skipped_live)
    dead = set(result.records)
    result.cgroups += cpu.remove_leftovers(
        lambda i: i in dead or (orphans and i not in live_ids and (ids is None or i in ids) and not _recorded(i))
    )
    if orphans and ids is None:
        result.pids += _orphans()
        result.trace_instances += remove_stale_instances()
        if not live:
            unmount_if_unused()  # the namespace-visible tracefs (testbed/tracefs.py)
    return result


def _recorded(tb_id: str) -> bool:
    """A testbed with a record (its owner alive: another run on this host)."""
    return (ownership.RUNTIME_DIR / f"{tb_id}.json").exists()


def _orphans() -> list[int]:
    """Our binaries still running in a namespace that has no name any more (deleted while
    they ran). Processes in the host's namespace or a named one are not touched."""
    host = processes.netns_inode(1)
    named = {processes.netns_inode(f"/run/netns/{n}") for n in topology.existing_namespaces()}
    stray = [
        pid
        for pid in processes.processes_named(OUR_BINARIES)
        if (ino := processes.netns_inode(pid)) is not None and ino != host and ino not in named
    ]
    return processes.terminate(stray)
