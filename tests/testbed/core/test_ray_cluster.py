"""`longlook run --executor ray` on a real Ray cluster on this machine (`ray start --head
--resources '{"testbed": 1}'`), against a local run of the same scenario; and a worker
killed mid-cell (SIGKILL): finished runs kept, the cell finished by a resubmitted task.
The cluster is stopped at the end by ending the `ray start --block` process it came from."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from testbed_helpers import LONGLOOK, dead_endpoints_trace_instances, namespaces, needs_testbed

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install -e '.[cluster]')")

RAY = str(Path(sys.executable).parent / "ray")


def scenario(rounds: int, workload: str, rtt_ms: int, rate_mbit: int = 20, options: str = "") -> str:
    # Run counts here are about the executor, not the path audit: flagged runs are kept.
    return textwrap.dedent(f"""
        name = "ray-test"
        seed = 11
        rounds = {rounds}
        protocols = ["h3", "h2"]
        timeout_s = 15
        retries = 1
        workloads = ["{workload}"]
        [[links]]
        rate_mbit = {rate_mbit}
        rtt_ms = {rtt_ms}
        buffer_bytes = 300000
        [options]
        zero_rtt = false
        {options}
        [fidelity]
        exclude_flagged = false
    """)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _processes_mentioning(text: str) -> list[int]:
    pids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and int(d.name) != os.getpid():
            try:
                if text in (d / "cmdline").read_bytes().decode(errors="replace"):
                    pids.append(int(d.name))
            except OSError:
                pass
    return pids


@pytest.fixture(scope="module")
def cluster():
    """A one-node Ray cluster declaring one testbed; its address. Stopped afterwards, and
    no process of it is left (checked)."""
    temp = tempfile.mkdtemp(prefix="llray-", dir="/tmp")  # short: Ray's socket paths
    port = _free_port()
    log = open(Path(temp) / "ray-start.log", "w")
    head = subprocess.Popen(
        [
            RAY,
            "start",
            "--head",
            "--block",
            "--port",
            str(port),
            "--node-ip-address",
            "127.0.0.1",
            "--resources",
            '{"testbed": 1}',
            "--num-cpus",
            "2",
            "--include-dashboard",
            "false",
            "--temp-dir",
            temp,
            "--disable-usage-stats",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 90
        while "block forever" not in (Path(temp) / "ray-start.log").read_text():
            assert head.poll() is None, (Path(temp) / "ray-start.log").read_text()
            assert time.monotonic() < deadline, "ray start did not come up in 90 s"
            time.sleep(0.5)
        yield f"127.0.0.1:{port}"
    finally:
        head.send_signal(signal.SIGTERM)
        try:
            head.wait(60)
        except subprocess.TimeoutExpired:
            head.kill()
        deadline = time.monotonic() + 30
        while (left := _processes_mentioning(temp)) and time.monotonic() < deadline:
            time.sleep(0.5)
        for pid in left:  # ours (they name our temp dir): never leave them running
            os.kill(pid, signal.SIGKILL)
        log.close()
        shutil.rmtree(temp, ignore_errors=True)
        assert not left, f"Ray processes still running after the cluster stopped: {left}"


def _run(path: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*LONGLOOK, "run", str(path), "--out", str(out), *extra], capture_output=True, text=True, timeout=240
    )


def _store_summary(out: Path):
    from longlook.core.store import Store
    from longlook.core.experiment_stats import analyse

    with Store.open(out, read_only=True) as store:
        runs = store.runs_frame()
        cells = sorted(store.cells_frame()["cell_id"])
        checks = store.link_checks_frame()
        an = analyse(store)
    verdicts = {c.cell_id: c.verdict.value for c in an.comparisons}
    return runs, cells, checks, verdicts


@needs_testbed("linkem", "endpoint")
def test_ray_run_matches_a_local_run(cluster, tmp_path: Path):
    # QUIC's window capped at 10 packets over 100 ms: TCP (h2) clearly faster, a firm verdict
    path = tmp_path / "s.toml"
    path.write_text(scenario(rounds=3, workload="1x200k", rtt_ms=100, options="max_cwnd_packets = 10"))
    local = _run(path, tmp_path / "local", "--no-link-check")
    assert local.returncode == 0, local.stderr
    on_ray = _run(path, tmp_path / "ray", "--executor", "ray", "--address", cluster)
    if on_ray.returncode != 0:
        # the node's link self-check can fail on a machine shared with other tests: it is
        # stored all the same, and a resume without it finishes the grid
        assert "node " in on_ray.stderr and "outside tolerance" in on_ray.stderr, on_ray.stderr
        on_ray = _run(path, tmp_path / "ray", "--executor", "ray", "--address", cluster, "--resume", "--no-link-check")
    assert on_ray.returncode == 0, on_ray.stderr

    l_runs, l_cells, _, l_verdicts = _store_summary(tmp_path / "local")
    r_runs, r_cells, r_checks, r_verdicts = _store_summary(tmp_path / "ray")
    assert r_cells == l_cells
    count = lambda runs: runs.groupby(["cell_id", "arm"]).size().to_dict()  # noqa: E731
    assert count(r_runs) == count(l_runs) == {(l_cells[0], "h3"): 3, (l_cells[0], "h2"): 3}
    assert (r_runs["status"] == "ok").all() and (r_runs.protocol_negotiated == r_runs.protocol_requested).all()
    assert r_verdicts == l_verdicts and set(r_verdicts.values()) == {"b_faster"}, (l_verdicts, r_verdicts)
    # the node self-checked the link before its cell, and the driver stored the check
    assert len(r_checks) == 1 and r_checks.iloc[0]["measured"]
    # every run names its node; its artifacts came back beside the store
    assert set(r_runs["node"]) == {socket.gethostname()} and r_runs["ray_node_id"].notna().all()
    for arts in r_runs["artifacts"]:
        assert (tmp_path / "ray" / arts["fetch"]).is_file() and (tmp_path / "ray" / arts["linkem"]).is_file()
    assert not [n for n in namespaces() if n.startswith("ll-") and _ours(n)]


def _ours(ns: str) -> bool:
    """A namespace of a testbed owned by a process that is gone (ours would be; other
    tests running at the same time own theirs)."""
    from longlook.testbed import ownership

    return any(ns in r.namespaces and not r.owner_alive() for r in ownership.all_records())


@needs_testbed("linkem", "endpoint")
def test_killed_worker_loses_no_finished_run_and_the_cell_finishes(cluster, tmp_path: Path):
    path = tmp_path / "s.toml"
    path.write_text(scenario(rounds=4, workload="1x1m", rtt_ms=36, rate_mbit=10))  # ~1 s a run
    out = tmp_path / "ray"
    driver = subprocess.Popen(
        [*LONGLOOK, "run", str(path), "--out", str(out), "--executor", "ray", "--address", cluster, "--no-link-check"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while len(before := _run_dirs(out)) < 2:  # two runs reached the driver
            assert driver.poll() is None, driver.communicate()[1]
            assert time.monotonic() < deadline, "no run reached the driver in 120 s"
            time.sleep(0.2)
        workers = _processes_mentioning("ray::run_cell")
        assert len(workers) == 1, workers
        os.kill(workers[0], signal.SIGKILL)
        _, err = driver.communicate(timeout=180)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert driver.returncode == 0, err
    assert "requeued" in err

    runs, cells, _, _ = _store_summary(out)
    stored = set(runs["run_id"])
    assert before <= stored, f"finished runs lost: {before - stored}"
    # the cell is complete: every (round, arm) settled exactly once by an ok run
    ok = runs[runs["status"] == "ok"]
    assert sorted(zip(ok["round"], ok["arm"])) == sorted((r, a) for r in range(4) for a in ("h3", "h2"))
    assert not [n for n in namespaces() if _ours(n)]
    # the killed worker's servers died without removing their trace instances; the next
    # testbed's teardown did
    assert dead_endpoints_trace_instances() == []


def _run_dirs(out: Path) -> set[str]:
    d = out / "runs"
    return {p.name for p in d.iterdir()} if d.is_dir() else set()


@needs_testbed("linkem", "endpoint")
def test_ctrl_c_on_the_driver_then_a_local_resume_completes(cluster, tmp_path: Path):
    path = tmp_path / "s.toml"
    # 40 runs of about 1 s: cancelling the node's task took up to ~12 s on a fresh machine
    # (12 runs once all reached the driver first), so 40 leave a wide margin
    path.write_text(scenario(rounds=20, workload="1x1m", rtt_ms=36, rate_mbit=10))
    out = tmp_path / "exp"
    driver = subprocess.Popen(
        [*LONGLOOK, "run", str(path), "--out", str(out), "--executor", "ray", "--address", cluster, "--no-link-check"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while len(_run_dirs(out)) < 1:
            assert driver.poll() is None, driver.communicate()[1]
            assert time.monotonic() < deadline, "no run reached the driver in 120 s"
            time.sleep(0.2)
        driver.send_signal(signal.SIGINT)
        _, err = driver.communicate(timeout=60)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert driver.returncode == 130 and "interrupted" in err, err
    runs, _, _, _ = _store_summary(out)  # the store opens: consistent
    first = set(runs["run_id"])
    assert 1 <= len(first) < 40 and _run_dirs(out) >= first

    resumed = _run(path, out, "--resume", "--no-link-check")  # the local executor continues it
    assert resumed.returncode == 0, resumed.stderr
    runs, _, _, _ = _store_summary(out)
    assert first <= set(runs["run_id"])
    ok = runs[runs["status"] == "ok"]
    assert sorted(zip(ok["round"], ok["arm"])) == sorted((r, a) for r in range(20) for a in ("h3", "h2"))
    assert set(runs["node"]) == {socket.gethostname()}
    assert not [n for n in namespaces() if _ours(n)]


@needs_testbed("linkem", "endpoint")
def test_reproduce_on_ray_runs_a_claim_s_scenario_on_the_cluster_s_testbed(cluster, tmp_path: Path):
    # the short budget's Fig. 2 (one cell, 4 rounds x 2 arms): its runs go to the node and
    # come back into the results folder, and the claim is judged from them
    out = tmp_path / "repro"
    argv = [*LONGLOOK, "reproduce", "--budget", "short", "--only", "kakhki-fig2", "--out", str(out)]
    done = subprocess.run(
        [*argv, "--executor", "ray", "--address", cluster], capture_output=True, text=True, timeout=400
    )
    assert done.returncode == 0, done.stderr[-3000:]
    from longlook.core.store import Store

    with Store.open(out / "kakhki-fig2-macw", read_only=True) as store:
        runs = store.runs_frame()
    assert len(runs[runs["status"] == "ok"]) >= 8 and runs["ray_node_id"].notna().all()
    assert set(runs["node"]) == {socket.gethostname()}
    import json

    row = next(c for c in json.loads((out / "reproduction.json").read_text())["claims"] if c["id"] == "kakhki-fig2")
    assert row["verdict"] in ("holds", "does not hold", "inconclusive"), row
    assert not [n for n in namespaces() if _ours(n)]
