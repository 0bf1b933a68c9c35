"""`longlook bench soak`: a long grid of short runs under injected faults, then the books.

While the grid runs, a fault injector (one thread, seeded) now and then
- SIGKILLs an endpoint server or client of this experiment (found by the experiment
  directory in its command line),
- stops linkem (SIGSTOP) for 20-200 ms, then continues it,
- fills the experiment's disk (a tmpfs mounted for the soak, so nothing else fills) and
  frees it a few seconds later,
and the soak SIGKILLs the driver itself twice, resuming it (`--resume`) after each, and after
a disk-full stop. With `--executor ray` it starts a one-node cluster and kills the node's cell
worker once instead of one driver kill.

At the end it checks what a user must be able to trust, and prints it:
- every planned (cell, round, arm) stored and settled exactly once (an ok run, or every
  attempt used), no run id twice;
- no run counted (ok, unflagged) whose measuring window held a linkem stop (its audit must
  see the late releases), or a kill of its server or client (it must have failed);
- no `ll-` namespace, cgroup or process of the experiment left.

Faults are recorded with wall-clock windows; a run's window is its run id's time (when the
harness began it) to that plus its duration and the audit's tail.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from ..core.store import Store
from ..errors import LonglookError
from ..testbed import ownership
from ..testbed.topology import NS_PREFIX, existing_namespaces

AUDIT_TAIL_S = 0.3  # after a run's measurement: its audit and store write
KILL_GRACE_S = 0.3  # a kill this close to a run's end may have come after its result
DRIVER_KILLS = 2


@dataclass
class Fault:
    kind: str  # kill_server | kill_client | pause_linkem | disk_full | kill_driver | kill_worker
    t0: float  # unix seconds
    t1: float
    detail: str = ""


@dataclass
class SoakResult:
    planned: int = 0
    stored: int = 0
    settled: int = 0
    ok: int = 0
    failed: int = 0
    flagged: int = 0
    unsettled: list[str] = field(default_factory=list)
    duplicates: int = 0
    counted_through_fault: list[str] = field(default_factory=list)
    leftover_namespaces: list[str] = field(default_factory=list)
    leftover_processes: list[int] = field(default_factory=list)
    faults: dict[str, int] = field(default_factory=dict)
    driver_exits: list[int] = field(default_factory=list)
    wall_s: float = 0.0
    executor: str = "local"

    @property
    def passed(self) -> bool:
        return (not self.unsettled and self.duplicates == 0 and not self.counted_through_fault
                and not self.leftover_namespaces and not self.leftover_processes)


def soak_scenario(runs: int) -> str:
    """About `runs` short page loads: 4 cells (2 links x 2 workloads), h3 and h2."""
    rounds = max(1, runs // 8)
    return textwrap.dedent(f"""
        name = "soak"
        seed = 7
        rounds = {rounds}
        protocols = ["h3", "h2"]
        timeout_s = 10
        retries = 3
        workloads = ["1x100k", "2x50k"]
        [[links]]
        rate_mbit = [20, 50]
        rtt_ms = 20
        buffer_bytes = 100000
        [options]
        zero_rtt = false
        [fidelity]
        retry_flagged = true
    """)


def _ours(out: Path) -> list[tuple[int, str]]:
    """(pid, cmdline) of processes that name this experiment's directory."""
    return [(pid, cmd) for pid, cmd in _pids_named(str(out)) if pid != os.getpid()]


class FaultInjector(threading.Thread):
    def __init__(self, out: Path, seed: int, every_s: tuple[float, float] = (3.0, 8.0),
                 disk: Path | None = None):
        super().__init__(daemon=True)
        self.out, self.rng, self.every_s, self.disk = out, random.Random(seed), every_s, disk
        self.faults: list[Fault] = []
        self.stop_event = threading.Event()
        self.disk_full_done = disk is None

    def run(self) -> None:
        while not self.stop_event.wait(self.rng.uniform(*self.every_s)):
            choices = ["kill_server", "kill_client", "pause_linkem", "pause_linkem"]
            if not self.disk_full_done and len(self.faults) >= 6:
                choices = ["disk_full"]
            getattr(self, choices[self.rng.randrange(len(choices))])()

    def _pick(self, *words: str) -> int | None:
        pids = [pid for pid, cmd in _ours(self.out) if all(w in cmd for w in words) and "/bin/sh" not in cmd]
        return self.rng.choice(pids) if pids else None

    def kill_server(self) -> None:
        if (pid := self._pick("endpoint", " serve ")) is not None:
            t = time.time()
            _signal(pid, signal.SIGKILL)
            self.faults.append(Fault("kill_server", t, t, f"pid {pid}"))

    def kill_client(self) -> None:
        if (pid := self._pick("endpoint", " fetch ")) is not None:
            t = time.time()
            _signal(pid, signal.SIGKILL)
            self.faults.append(Fault("kill_client", t, t, f"pid {pid}"))

    def pause_linkem(self) -> None:
        if (pid := self._pick("linkem", " run ")) is None:
            return
        hold = self.rng.uniform(0.02, 0.2)
        t0 = time.time()
        _signal(pid, signal.SIGSTOP)
        time.sleep(hold)
        _signal(pid, signal.SIGCONT)
        self.faults.append(Fault("pause_linkem", t0, time.time(), f"pid {pid}, {hold * 1000:.0f} ms"))

    def disk_full(self) -> None:
        filler = self.disk / ".soak-filler"
        t0 = time.time()
        try:
            with open(filler, "wb") as f:
                while True:
                    f.write(b"\0" * (1 << 20))
        except OSError:
            pass  # full
        time.sleep(3.0)
        filler.unlink(missing_ok=True)
        self.disk_full_done = True
        self.faults.append(Fault("disk_full", t0, time.time()))

    def stop(self) -> None:
        self.stop_event.set()
        self.join(10)


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _mount_tmpfs(size_mb: int) -> Path:
    d = Path(tempfile.mkdtemp(prefix="longlook-soak-"))
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "longlook-soak", str(d)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        shutil.rmtree(d, ignore_errors=True)
        raise LonglookError(f"bench soak: cannot mount a tmpfs for the experiment ({p.stderr.strip()})",
                            hint="run it as root")
    return d


def _unmount(d: Path) -> None:
    subprocess.run(["umount", str(d)], capture_output=True)
    shutil.rmtree(d, ignore_errors=True)


def _driver(scenario: Path, out: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([str(Path(sys.executable).parent / "longlook"), "run", str(scenario), "--out", str(out),
                             "--no-link-check", *extra], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def run_soak(runs: int = 1000, *, executor: str = "local", seed: int = 1, size_mb: int = 1500,
             say=print) -> SoakResult:
    res = SoakResult(executor=executor)
    disk = _mount_tmpfs(size_mb)
    cluster = None
    t_start = time.monotonic()
    try:
        scenario = disk / "soak.toml"
        scenario.write_text(soak_scenario(runs))
        out = disk / "exp"
        extra: list[str] = []
        if executor == "ray":
            cluster = _RayHead(disk)
            extra = ["--executor", "ray", "--address", cluster.address]
        injector = FaultInjector(out, seed, disk=disk)
        injector.start()
        rng = random.Random(seed + 1)
        kills_left = DRIVER_KILLS if executor == "local" else DRIVER_KILLS - 1
        worker_kill_left = executor == "ray"
        resume: list[str] = []
        while True:
            drv = _driver(scenario, out, *extra, *resume)
            kill_at = time.monotonic() + rng.uniform(20, 90) if kills_left else None
            while drv.poll() is None:
                time.sleep(0.5)
                if kill_at and time.monotonic() > kill_at:
                    t = time.time()
                    os.kill(drv.pid, signal.SIGKILL)  # the driver alone: what it started is orphaned
                    injector.faults.append(Fault("kill_driver", t, t))
                    kills_left -= 1
                    kill_at = None
                if worker_kill_left and time.monotonic() - t_start > 90:
                    pids = [pid for pid, cmd in _pids_named("ray::run_cell")]
                    if pids:
                        t = time.time()
                        _signal(pids[0], signal.SIGKILL)
                        injector.faults.append(Fault("kill_worker", t, t, f"pid {pids[0]}"))
                        worker_kill_left = False
            drv.wait()
            res.driver_exits.append(drv.returncode)
            say(f"soak: driver exited {drv.returncode} after {time.monotonic() - t_start:.0f} s"
                + (f": {drv.stderr.read().strip().splitlines()[-1:]}" if drv.returncode else ""))
            if drv.returncode == 0 and _complete(out):
                break
            if len(res.driver_exits) > 20:
                raise LonglookError("bench soak: the driver stopped 20 times without finishing the grid")
            resume = ["--resume"]
            time.sleep(1.0)
        injector.stop()
        res.wall_s = time.monotonic() - t_start
        _books(res, out, injector.faults)
        res.leftover_namespaces = [n for n in existing_namespaces() if n.startswith(NS_PREFIX)
                                   and any(n in r.namespaces and not r.owner_alive() for r in ownership.all_records())]
        res.leftover_processes = [pid for pid, _ in _ours(out)]
    finally:
        if cluster is not None:
            cluster.stop()
        _unmount(disk)
    return res


def _complete(out: Path) -> bool:
    try:
        with Store.open(out, read_only=True) as store:
            sc = store.scenario()
            planned = len(sc.cells()) * sc.rounds * len(sc.arm_list())
            settled = sum(len(store.settled(c.id, sc.retries, retry_flagged=sc.fidelity.retries_flagged))
                          for c in sc.cells())
        return settled >= planned
    except Exception:  # noqa: BLE001  a store the last kill left unopenable is not complete
        return False


def _books(res: SoakResult, out: Path, faults: list[Fault]) -> None:
    with Store.open(out, read_only=True) as store:
        sc = store.scenario()
        runs = store.runs_frame()
        settled = {c.id: store.settled(c.id, sc.retries, retry_flagged=sc.fidelity.retries_flagged)
                   for c in sc.cells()}
    arms = [a.label for a in sc.arm_list()]
    res.planned = len(sc.cells()) * sc.rounds * len(arms)
    res.stored = len(runs)
    res.duplicates = int(runs["run_id"].duplicated().sum())
    res.settled = sum(len(s) for s in settled.values())
    res.unsettled = [f"{c}|r{r}|{a}" for c in settled for r in range(sc.rounds) for a in arms
                     if (r, a) not in settled[c]]
    res.ok = int((runs["status"] == "ok").sum())
    res.failed = int((runs["status"] != "ok").sum())
    res.flagged = int(runs["audit_flagged"].fillna(False).astype(bool).sum())
    for f in faults:
        res.faults[f.kind] = res.faults.get(f.kind, 0) + 1
    counted = runs[(runs["status"] == "ok") & ~runs["audit_flagged"].fillna(False).astype(bool)]
    for r in counted.itertuples():
        t0 = datetime.strptime(r.run_id.split("-")[0], "%Y%m%dT%H%M%S%f").replace(tzinfo=timezone.utc).timestamp()
        t1 = t0 + (r.duration_s or 0.0)
        for f in faults:
            if f.kind == "pause_linkem" and f.t0 < t1 and f.t1 > t0:
                res.counted_through_fault.append(f"{r.run_id}: linkem stopped {f.detail}")
            elif f.kind in ("kill_server", "kill_client") and t0 < f.t0 < t1 - KILL_GRACE_S:
                res.counted_through_fault.append(f"{r.run_id}: {f.kind} {f.detail}")


def _pids_named(text: str) -> list[tuple[int, str]]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if text in cmd:
                out.append((int(d.name), cmd))
    return out


class _RayHead:
    """A one-node Ray cluster declaring one testbed, for the soak's Ray executor."""

    def __init__(self, where: Path):
        import socket
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.temp = Path(tempfile.mkdtemp(prefix="llsoak-ray-", dir="/tmp"))
        self.log = open(self.temp / "ray.log", "w")
        ray_bin = str(Path(sys.executable).parent / "ray")
        self.proc = subprocess.Popen([ray_bin, "start", "--head", "--block", "--port", str(port),
                                      "--node-ip-address", "127.0.0.1", "--resources", '{"testbed": 1}',
                                      "--num-cpus", "2", "--include-dashboard", "false", "--temp-dir",
                                      str(self.temp), "--disable-usage-stats"],
                                     stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 90
        while "block forever" not in (self.temp / "ray.log").read_text():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise LonglookError("bench soak: ray start did not come up", hint=str(self.temp / "ray.log"))
            time.sleep(0.5)
        self.address = f"127.0.0.1:{port}"

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        for pid, _ in _pids_named(str(self.temp)):
            _signal(pid, signal.SIGKILL)
        self.log.close()
        shutil.rmtree(self.temp, ignore_errors=True)


def result_json(res: SoakResult) -> str:
    return json.dumps({**asdict(res), "passed": res.passed}, indent=1)
