"""Where a grid's cells run. An executor is passed to core.execute.Runner; none (the default)
means this machine: its testbed runs the per-cell loop (`Runner.run_cells`). `Ray` spreads the
cells over a cluster, one testbed per node, the driver still the store's one writer
(docs/cluster.md). An executor has `connected()` (a context around the whole run: no cluster,
no experiment written) and `run_cells(runner, store, cells)`."""

from __future__ import annotations

from ...errors import LonglookError

NAMES = ("local", "ray")


def by_name(name: str, address: str | None = None):
    """The executor `--executor NAME` means (None for local), checked before anything runs."""
    if name not in NAMES:
        raise LonglookError(f"--executor {name}: unknown executor", hint="use local or ray")
    if address and name != "ray":
        raise LonglookError("--address is for --executor ray", hint="add --executor ray, or drop --address")
    if name == "local":
        return None
    from .ray import Ray

    return Ray(address)
