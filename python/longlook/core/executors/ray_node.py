"""One cell on a Ray cluster node: the same per-cell loop as a local run (Runner.run_cells),
on the node's own testbed, with every write forwarded to the driver as it happens.

The node keeps a scratch store in a spool directory, seeded with the cell's runs the driver
already holds, so what is settled, how many attempts a (round, arm) had and the adaptive
rule read exactly what they read locally. Every run, round order and link check goes to the
driver's queue (an actor on the driver's machine) and is acknowledged before the next run
starts, with the run's directory packed alongside (core.run_bundle): a worker killed
mid-cell loses only the run it was measuring.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ...errors import LonglookError
from ..record import RunRecord
from ..run_bundle import pack_run
from ..store import RUNS_DIR, Store

SPOOL_ROOT = Path(tempfile.gettempdir()) / "longlook-ray-spool"


@dataclass
class CellJob:
    """What the driver sends with one cell: the scenario as stored, and the cell's runs so far."""

    scenario_toml: str
    base_dir: str
    cell_id: str
    prior: list[RunRecord] = field(default_factory=list)
    link_check: bool = True
    link_check_duration_s: float = 2.0
    session: str = ""  # one `longlook run`: a node checks each link once per session


class ForwardingLedger:
    """The cell loop's ledger on a node: reads from the scratch store, writes to it and to
    the driver. `push` returns once the driver's queue holds the item."""

    def __init__(self, scratch: Store, spool: Path, push: Callable[[tuple], None], ray_node_id: str):
        self.scratch = scratch
        self.spool = spool
        self.push = push
        self.ray_node_id = ray_node_id

    def settled(self, *args: Any, **kwargs: Any):
        return self.scratch.settled(*args, **kwargs)

    def attempt_counts(self, *args: Any):
        return self.scratch.attempt_counts(*args)

    def runs_frame(self):
        return self.scratch.runs_frame()

    def record_run(self, r: RunRecord) -> None:
        r.details["ray_node_id"] = self.ray_node_id
        self.push(("run", r, pack_run(self.spool, r.run_id)))
        self.scratch.record_run(r)
        shutil.rmtree(self.spool / RUNS_DIR / r.run_id, ignore_errors=True)  # the driver has it

    def record_round_order(self, *args: Any) -> None:
        self.push(("call", "record_round_order", args))
        self.scratch.record_round_order(*args)

    def record_link_check(self, *args: Any) -> None:
        self.push(("call", "record_link_check", args))
        self.scratch.record_link_check(*args)


def run_cell(job: CellJob, queue: Any) -> dict[str, Any]:
    """The Ray task (needs the `testbed` resource): every unsettled run of one cell, back to
    back, on a fresh testbed after the link self-check. Returns the node's timings."""
    import ray

    from ..execute import Runner
    from ..spec import parse_scenario

    host = socket.gethostname()
    node_id = ray.get_runtime_context().get_node_id()
    push = queue.put  # blocks until the driver's queue actor has the item
    spool = _new_spool()
    try:
        sc = parse_scenario(job.scenario_toml, source="the driver's scenario", base_dir=Path(job.base_dir))
        cell = next((c for c in sc.cells() if c.id == job.cell_id), None)
        if cell is None:
            raise LonglookError(
                f"cell {job.cell_id} is not in the scenario as this node parses it",
                hint="every node needs the same longlook version as the driver",
            )

        def progress(event: str, **info: Any) -> None:
            push(("progress", event, {**info, "node": host}))

        checked = _CheckedLinks(job.session)
        runner = Runner(
            sc,
            spool,
            link_check=job.link_check and not checked.has(cell.link),
            link_check_duration_s=job.link_check_duration_s,
            progress=progress,
        )
        push(
            (
                "hello",
                {
                    "node": host,
                    "ray_node_id": node_id,
                    "pid": os.getpid(),
                    "cell": cell.id,
                    "versions": runner._versions(),
                },
            )
        )
        with Store.open(spool) as scratch:
            scratch.start_experiment(sc)
            for r in job.prior:
                scratch.record_run(r)
            runner.run_cells(ForwardingLedger(scratch, spool, push, node_id), [cell])
        if runner.link_check:  # passed (a failed check raises LinkCheckFailed)
            checked.add(cell.link)
        return {"node": host, "setup_s": runner.summary.setup_s, "in_runs_s": runner.summary.in_runs_s}
    except LonglookError as e:
        raise LonglookError(f"node {host}: {e.message}", hint=e.hint) from None
    finally:
        shutil.rmtree(spool, ignore_errors=True)


class _CheckedLinks:
    """The links this node has self-checked in this session, as the local executor checks
    each link once per grid rather than once per cell (a check takes ~10-30 s)."""

    def __init__(self, session: str):
        self.path = SPOOL_ROOT / f"checked-{session}.txt" if session else None

    @staticmethod
    def _key(link: Any) -> str:
        return link.model_dump_json(exclude_none=True)

    def has(self, link: Any) -> bool:
        return self.path is not None and self.path.exists() and self._key(link) in self.path.read_text().splitlines()

    def add(self, link: Any) -> None:
        if self.path is not None:
            SPOOL_ROOT.mkdir(parents=True, exist_ok=True)
            with self.path.open("a") as f:
                f.write(self._key(link) + "\n")


def _new_spool() -> Path:
    """A scratch directory for this task; those of killed workers (pid gone) are removed."""
    SPOOL_ROOT.mkdir(parents=True, exist_ok=True)
    for d in SPOOL_ROOT.iterdir():
        pid = d.name.split("-", 1)[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(d, ignore_errors=True)
        elif d.name.startswith("checked-") and time.time() - d.stat().st_mtime > 7 * 86400:
            d.unlink(missing_ok=True)  # sessions long over
    return Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=SPOOL_ROOT))
