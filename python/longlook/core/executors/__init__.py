"""Where a grid's cells run. An executor is passed to core.execute.Runner; none (the default)
means this machine: its testbed runs the per-cell loop (`Runner.run_cells`). `Ray` spreads the
cells over a cluster, one testbed per node, the driver still the store's one writer
(docs/cluster.md). An executor has `connected()` (a context around the whole run: no cluster,
no experiment written) and `run_cells(runner, store, cells)`."""

from __future__ import annotations

from ...errors import LonglookError
from ...lookup import Registry

# name -> a factory of the executor from `--address` (None for this machine)
EXECUTORS: Registry = Registry("executor")
EXECUTORS.register("local", "longlook.core.executors.local:local")
EXECUTORS.register("ray", "longlook.core.executors.ray:Ray")
NEEDS_ADDRESS = {"ray"}  # the executors that take --address


def by_name(name: str, address: str | None = None):
    """The executor `--executor NAME` means (None for local), checked before anything runs."""
    if name not in EXECUTORS:
        raise LonglookError(f"--executor {name}: unknown executor", hint=f"use {' or '.join(EXECUTORS.names())}")
    if address and name not in NEEDS_ADDRESS:
        raise LonglookError(
            f"--address is for --executor {' or '.join(sorted(NEEDS_ADDRESS))}",
            hint="add --executor ray, or drop --address",
        )
    return EXECUTORS.get(name)(address)
