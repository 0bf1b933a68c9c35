"""The Ray executor: a grid's cells spread over a cluster, one testbed per node, one store.

Each cell (all its rounds, so alternation stays back to back on one machine) is a Ray task
that needs the custom resource `testbed: 1`, which each node declares once: a node never
runs two testbeds. The task (core.ray_node) runs the local per-cell loop on its node and
pushes every run, with its packed directory, to a queue actor on the driver's machine as
the run ends; the driver alone writes the store and unpacks artifacts under DIR/runs/.
A task whose worker or node dies is submitted again with the runs the store now holds, so
it continues from the settled runs. Ctrl-C cancels the tasks (their testbeds close) and
stores what they finished; `--resume` continues with either executor.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import threading
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ...errors import LonglookError, Terminated
from ..record import RunRecord
from .ray_node import CellJob, run_cell
from ..run_bundle import unpack_run
from ..spec import CellBase
from ..store import Store

if TYPE_CHECKING:
    from ..execute import Runner

RAY_REQUIREMENT = "ray[default]==2.60.0"  # as pyproject's `cluster` extra
RESOURCE = "testbed"
MAX_RESUBMITS = 3  # a cell whose task died this often more stops the grid
# versions that must be the same on every node, or results would mix software
SAME_EVERYWHERE = ("longlook", "endpoint", "linkem")


def import_ray():
    try:
        import ray
    except ImportError:
        raise LonglookError(
            "--executor ray: Ray is not installed in this environment",
            hint=f"pip install -e '.[cluster]' (installs {RAY_REQUIREMENT}), or run scripts/setup.sh",
        ) from None
    return ray


@contextmanager
def connected(address: str | None):
    """Joined to the running cluster for the block (never starting one: its nodes must
    declare the testbed resource)."""
    ray = import_ray()
    where = address or os.environ.get("RAY_ADDRESS") or "auto"
    if where != "auto":
        _reachable(where)  # ray.init waits minutes for an address where nothing listens
    try:
        ray.init(address=where, log_to_driver=False, logging_level="ERROR", namespace="longlook")
    except (ConnectionError, RuntimeError, ValueError) as e:
        raise LonglookError(
            f"--executor ray: no Ray cluster at {where} ({str(e).splitlines()[0]})",
            hint="start one with `ray start --head --resources '{\"testbed\": 1}'` "
            "(docs/cluster.md), or give its --address HOST:PORT",
        ) from None
    try:
        if ray.cluster_resources().get(RESOURCE, 0) < 1:
            raise LonglookError(
                f"--executor ray: no node of the cluster at {where} declares the '{RESOURCE}' resource",
                hint="start each node with `ray start ... --resources '{\"testbed\": 1}'`",
            )
        yield ray
    finally:
        ray.shutdown()


def _reachable(address: str) -> None:
    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        socket.create_connection((host or "127.0.0.1", int(port)), timeout=5).close()
    except (OSError, ValueError) as e:
        raise LonglookError(
            f"--address {address}: no Ray cluster answers there ({getattr(e, 'strerror', None) or e})",
            hint="give the head node's HOST:PORT as `ray start --head` printed it (docs/cluster.md)",
        ) from None


def cell_records(store: Store, cell_id: str) -> list[RunRecord]:
    """The cell's runs as far as the cell loop reads them (status, protocols, audit flag,
    metrics), to seed a node's scratch store."""
    runs = store.sql(
        "SELECT run_id, round, position, arm, attempt, status, error, protocol_requested, "
        "protocol_negotiated, coalesce(audit_flagged, false) AS flagged "
        "FROM runs WHERE cell_id = ?",
        [cell_id],
    )
    metrics = store.sql(
        "SELECT m.run_id, m.name, m.value FROM metrics m JOIN runs r USING (run_id) WHERE r.cell_id = ?", [cell_id]
    )
    by_run: dict[str, dict[str, float]] = {}
    for run_id, name, value in metrics.itertuples(index=False):
        by_run.setdefault(run_id, {})[name] = float(value)
    text = lambda v: v if isinstance(v, str) else None  # noqa: E731  (NaN/None -> None)
    return [
        RunRecord(
            run_id=r.run_id,
            cell_id=cell_id,
            round=int(r.round),
            position=int(r.position),
            arm=r.arm,
            attempt=int(r.attempt),
            status=r.status,
            error=text(r.error),
            protocol_requested=text(r.protocol_requested),
            protocol_negotiated=text(r.protocol_negotiated),
            metrics=by_run.get(r.run_id, {}),
            audit={"flagged": bool(r.flagged)},
        )
        for r in runs.itertuples(index=False)
    ]


def run_cells_on_ray(runner: "Runner", store: Store, cells: list[CellBase]) -> None:
    """Within `connected` (Runner.run)."""
    _ClusterRun(import_ray(), runner, store).run(cells)


class Ray:
    """The executor a Runner is given for a cluster (`--executor ray`)."""

    def __init__(self, address: str | None = None):
        import_ray()  # one clear error before anything is written when Ray is missing
        self.address = address  # None: RAY_ADDRESS or the cluster on this machine

    def connected(self):
        return connected(self.address)

    def run_cells(self, runner: "Runner", store: Store, cells: list[CellBase]) -> None:
        run_cells_on_ray(runner, store, cells)


class _ClusterRun:
    def __init__(self, ray, runner: "Runner", store: Store):
        from ray.util.queue import Queue
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        self.ray, self.runner, self.store = ray, runner, store
        here = ray.get_runtime_context().get_node_id()
        # on the driver's machine: a node that dies takes none of the pushed runs with it
        self.queue = Queue(
            actor_options={"num_cpus": 0, "scheduling_strategy": NodeAffinitySchedulingStrategy(here, soft=False)}
        )
        self.task = ray.remote(run_cell).options(resources={RESOURCE: 1}, max_retries=0)
        self.pending: dict[Any, CellBase] = {}
        self.resubmits: dict[str, int] = {}
        self.versions = {k: v for k, v in runner._versions().items() if k in SAME_EVERYWHERE}
        self.on_node: dict[str, str] = {}  # cell id -> node running it
        self.session = secrets.token_hex(6)

    def run(self, cells: list[CellBase]) -> None:
        previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
        main = threading.current_thread() is threading.main_thread()
        caught: list[int] = []
        if main:  # Ctrl-C, SIGTERM, SIGHUP: noted here, raised by the loop below, because an
            # exception raised inside Ray's own code (ray.wait's callbacks) can be swallowed there
            for s in previous:
                signal.signal(s, lambda signum, _frame: caught.append(signum))
        self.runner.progress("cells", total=len(cells), nodes=int(self.ray.cluster_resources()[RESOURCE]))
        try:
            for cell in cells:
                self._submit(cell)
            while self.pending:
                ready, _ = self.ray.wait(list(self.pending), num_returns=1, timeout=0.25)
                self._drain()
                for ref in ready:
                    self._finished(ref)
                if caught:
                    _interrupt(caught[0])
            if caught:
                _interrupt(caught[0])
        except BaseException:
            self._cancel_all()
            raise
        finally:
            if main:
                for s, h in previous.items():
                    signal.signal(s, h)

    def _submit(self, cell: CellBase) -> None:
        r = self.runner
        job = CellJob(
            scenario_toml=r.scenario.toml_text or r.scenario.model_dump_json(),
            base_dir=str(r.scenario.base_dir),
            cell_id=cell.id,
            prior=cell_records(self.store, cell.id),
            link_check=r.link_check,
            link_check_duration_s=r.link_check_duration_s,
            session=self.session,
        )
        self.pending[self.task.remote(job, self.queue)] = cell

    def _finished(self, ref) -> None:
        ray = self.ray
        cell = self.pending.pop(ref)
        self._drain()  # all the task pushed was acknowledged before it returned
        try:
            timings = ray.get(ref)
        except ray.exceptions.RayTaskError as e:
            cause = e.cause
            if isinstance(cause, LonglookError):
                raise cause from None
            raise LonglookError(
                f"cell {cell.id} failed on node {self.on_node.get(cell.id, '?')}: {str(e).splitlines()[-1]}",
                hint="finished runs are stored; fix the cause, then --resume",
            ) from None
        except (
            ray.exceptions.WorkerCrashedError,
            ray.exceptions.NodeDiedError,
            ray.exceptions.LocalRayletDiedError,
            ray.exceptions.ObjectLostError,
        ) as e:
            self._resubmit(cell, type(e).__name__)
            return
        self.runner.summary.setup_s += timings["setup_s"]  # testbed and link check on the node
        self.runner.progress("cell_done", cell=cell.id, node=self.on_node.pop(cell.id, "?"))

    def _resubmit(self, cell: CellBase, why: str) -> None:
        n = self.resubmits[cell.id] = self.resubmits.get(cell.id, 0) + 1
        node = self.on_node.pop(cell.id, "?")
        if n > MAX_RESUBMITS:
            raise LonglookError(
                f"cell {cell.id}: its task died {n} times (last on node {node}: {why})",
                hint="finished runs are stored; check the node, then --resume",
            )
        self.runner.progress("cell_requeued", cell=cell.id, node=node, reason=why, attempt=n)
        self._submit(cell)  # with the runs the store holds now: it continues from them

    def _drain(self) -> None:
        while (n := self.queue.size()) > 0:
            for item in self.queue.get_nowait_batch(n):
                self._handle(item)

    def _handle(self, item: tuple) -> None:
        what = item[0]
        if what == "run":
            _, record, bundle = item
            unpack_run(self.store.directory, record.run_id, bundle)
            self.store.record_run(record)
            self.runner.summary.count(record)
            self.runner.summary.in_runs_s += record.duration_s or 0.0
        elif what == "call":
            _, method, args = item
            getattr(self.store, method)(*args)
        elif what == "progress":
            _, event, info = item
            self.runner.progress(event, **info)
        elif what == "hello":
            info = item[1]
            self._check_versions(info)
            self.on_node[info["cell"]] = info["node"]
            self.runner.progress("cell_started", cell=info["cell"], node=info["node"], pid=info["pid"])

    def _check_versions(self, info: dict) -> None:
        theirs = {k: v for k, v in info["versions"].items() if k in SAME_EVERYWHERE}
        if theirs != self.versions:
            what = "; ".join(
                f"{k}: driver {self.versions.get(k)}, node {theirs.get(k)}"
                for k in SAME_EVERYWHERE
                if theirs.get(k) != self.versions.get(k)
            )
            raise LonglookError(
                f"node {info['node']} runs other software than the driver ({what})",
                hint="set every node up from the same checkout (scripts/setup.sh), then --resume",
            )

    def _cancel_all(self) -> None:
        """Interrupted: the tasks get KeyboardInterrupt (their testbeds close); what they
        finished meanwhile is still stored."""
        for ref in self.pending:
            self.ray.cancel(ref)
        deadline = time.monotonic() + 20
        while self.pending and time.monotonic() < deadline:
            try:
                ready, _ = self.ray.wait(list(self.pending), num_returns=len(self.pending), timeout=0.5)
                self._drain()
            except BaseException:  # a second Ctrl-C: stop waiting, keep what arrived
                break
            for ref in ready:
                self.pending.pop(ref, None)
        try:
            self._drain()
        except BaseException:
            pass


def _interrupt(signum: int) -> None:
    """Unwind like the local executor: Ctrl-C as KeyboardInterrupt, SIGTERM/SIGHUP as Terminated
    (testbeds on the nodes close, finished runs are kept)."""
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Terminated(signum)
