"""`--executor ray` on more than one node: two Ray nodes on this machine (Ray's own
`ray.cluster_utils.Cluster`), each declaring one testbed. A grid's cells land on both and
every run comes back; with one node removed mid-grid its cell is requeued and finished on
the other, and nothing is lost or stored twice.

Two testbeds on one 2-vCPU host distort each other's timings: this checks the executor's
bookkeeping (placement, shipping, requeueing), never figures; flagged runs are kept."""

from __future__ import annotations

import signal
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from testbed_helpers import LONGLOOK, namespaces, needs_testbed

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install -e '.[cluster]')")

CELLS = 4
ROUNDS = 5


def _scenario() -> str:
    # 4 cells of 5 rounds x 2 arms, about 1 s a run: a cell takes ~10 s, so a node removed
    # after the first runs arrived is mid-cell
    return textwrap.dedent(f"""
        name = "ray-two-nodes"
        seed = 5
        rounds = {ROUNDS}
        protocols = ["h3", "h2"]
        timeout_s = 20
        retries = 1
        workloads = ["1x1m"]
        [[links]]
        rate_mbit = [10, 12, 14, 16]
        rtt_ms = 30
        buffer_bytes = 300000
        [options]
        zero_rtt = false
        [fidelity]
        exclude_flagged = false
        retry_flagged = false
    """)


def _run_dirs(out: Path) -> set[str]:
    d = out / "runs"
    return {p.name for p in d.iterdir()} if d.is_dir() else set()


@pytest.fixture
def two_nodes():
    from ray.cluster_utils import Cluster

    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    cluster = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 1,
            "resources": {"testbed": 1},
            "object_store_memory": 100 * 1024 * 1024,
            "include_dashboard": False,
        },
    )
    worker = cluster.add_node(num_cpus=1, resources={"testbed": 1}, object_store_memory=100 * 1024 * 1024)
    cluster.wait_for_nodes()
    try:
        yield cluster, worker
    finally:
        cluster.shutdown()
        for sig, handler in handlers.items():  # the head node hooks SIGTERM in this process
            signal.signal(sig, handler)


@needs_testbed("linkem", "endpoint")
def test_a_grid_lands_on_both_nodes_and_a_removed_node_s_cell_is_finished_elsewhere(two_nodes, tmp_path: Path):
    cluster, worker = two_nodes
    path = tmp_path / "s.toml"
    path.write_text(_scenario())
    out = tmp_path / "exp"
    driver = subprocess.Popen(
        [
            *LONGLOOK,
            "run",
            str(path),
            "--out",
            str(out),
            "--executor",
            "ray",
            "--address",
            cluster.address,
            "--no-link-check",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 180
        while len(before := _run_dirs(out)) < 4:  # both nodes are into their first cells
            assert driver.poll() is None, driver.communicate()[1]
            assert time.monotonic() < deadline, "four runs did not reach the driver in 180 s"
            time.sleep(0.2)
        cluster.remove_node(worker)  # its raylet and the cell task on it die
        _, err = driver.communicate(timeout=300)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert driver.returncode == 0, err
    assert "requeued" in err, err

    from longlook.core.store import Store

    with Store.open(out, read_only=True) as store:
        runs = store.runs_frame()
        cells = list(store.cells_frame()["cell_id"])
    assert len(cells) == CELLS and before <= set(runs["run_id"])  # nothing shipped was lost
    ok = runs[runs["status"] == "ok"]
    settled = sorted(zip(ok["cell_id"], ok["round"], ok["arm"]))
    # every planned run stored exactly once with an ok run, none twice
    assert settled == sorted((c, r, a) for c in cells for r in range(ROUNDS) for a in ("h3", "h2"))
    assert runs["run_id"].is_unique
    assert runs["ray_node_id"].nunique() == 2, runs["ray_node_id"].value_counts()  # both nodes ran cells
    from longlook.testbed import ownership

    left = [n for n in namespaces() if any(n in r.namespaces and not r.owner_alive() for r in ownership.all_records())]
    assert not left, left
