"""`longlook bench soak`: a long grid of short runs under injected faults, then the books.

While the grid runs, a fault injector (one thread, seeded) now and then
- SIGKILLs an endpoint server or client of this experiment (found by the soak's disk in its
  command line: the experiment directory, or a Ray worker's spool under its TMPDIR there),
- stops linkem (SIGSTOP) for 20-200 ms, then continues it,
- fills the experiment's disk (a tmpfs mounted for the soak, so nothing else fills) and
  frees it a few seconds later,
and the soak SIGKILLs the driver itself twice, resuming it (`--resume`) after each, and after
a disk-full stop. With `--executor ray` it starts a one-node cluster and kills the node's cell
worker once instead of one driver kill.

At the end it checks what a user must be able to trust, and prints it:
- every planned (cell, round, arm) stored and settled exactly once (an ok run, or every
  attempt used), no run id twice;
- no run counted (ok, unflagged) whose fetch held a kill of its client or of the server that
  answered it (it must have failed), or whose page load (first packet to page loaded) held a
  linkem stop (its audit must see it);
- no `ll-` namespace, cgroup or process of the experiment left.

Faults and fetches are timed on one clock, this host's CLOCK_MONOTONIC (`time.monotonic()`
here, in the driver and in a Ray worker on this node alike): each run records its fetch's
start and end and its server's pid (kinds/pageload/measure.py), so a fault is judged against
the fetch it could have harmed, not against an estimate of the run's window (a server killed
while an earlier run's logs were taken, or the idle server of another link, harms no fetch).
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import timezone
from pathlib import Path
from typing import Any, Iterable

from ..core.store import Store
from ..errors import LonglookError
from ..testbed import ownership
from ..testbed.topology import NS_PREFIX, existing_namespaces

DRIVER_KILLS = 2
KILLS = ("kill_server", "kill_client")


@dataclass
class Fault:
    kind: str  # kill_server | kill_client | pause_linkem | disk_full | kill_driver | kill_worker
    t0: float  # time.monotonic() seconds
    t1: float
    detail: str = ""
    pid: int | None = None  # the process it hit


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
    failed_reasons: dict[str, int] = field(default_factory=dict)  # status: error, numbers as N
    flagged_reasons: dict[str, int] = field(default_factory=dict)
    counted_through_fault: list[str] = field(default_factory=list)  # a kill of its server or client
    counted_through_linkem_stop: list[str] = field(default_factory=list)
    unjudged: list[str] = field(default_factory=list)  # counted runs that recorded no fetch window
    leftover_namespaces: list[str] = field(default_factory=list)
    leftover_processes: list[int] = field(default_factory=list)
    faults: dict[str, int] = field(default_factory=dict)
    driver_exits: list[int] = field(default_factory=list)
    wall_s: float = 0.0
    executor: str = "local"
    logs: str = ""  # the drivers' stderr, kept when the books fail

    @property
    def passed(self) -> bool:
        return (
            not self.unsettled
            and self.duplicates == 0
            and not self.counted_through_fault
            and not self.counted_through_linkem_stop
            and not self.unjudged
            and not self.leftover_namespaces
            and not self.leftover_processes
        )


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


def _ours(disk: Path) -> list[tuple[int, str]]:
    """(pid, cmdline) of processes that name the soak's disk: the local driver's testbed
    processes name the experiment directory on it, a Ray worker's their spool (its TMPDIR)."""
    return [(pid, cmd) for pid, cmd in _pids_named(str(disk)) if pid != os.getpid()]


class FaultInjector(threading.Thread):
    def __init__(self, where: Path, seed: int, every_s: tuple[float, float] = (3.0, 8.0), disk: Path | None = None):
        super().__init__(daemon=True)
        self.where, self.rng, self.every_s, self.disk = where, random.Random(seed), every_s, disk
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
        pids = [pid for pid, cmd in _ours(self.where) if all(w in cmd for w in words) and "/bin/sh" not in cmd]
        return self.rng.choice(pids) if pids else None

    def kill_server(self) -> None:
        if (pid := self._pick("endpoint", " serve ")) is not None:
            t = time.monotonic()
            _signal(pid, signal.SIGKILL)
            self.faults.append(Fault("kill_server", t, t, f"pid {pid}", pid))

    def kill_client(self) -> None:
        if (pid := self._pick("endpoint", " fetch ")) is not None:
            t = time.monotonic()
            _signal(pid, signal.SIGKILL)
            self.faults.append(Fault("kill_client", t, t, f"pid {pid}", pid))

    def pause_linkem(self) -> None:
        if (pid := self._pick("linkem", " run ")) is None:
            return
        hold = self.rng.uniform(0.02, 0.2)
        t0 = time.monotonic()
        _signal(pid, signal.SIGSTOP)
        time.sleep(hold)
        _signal(pid, signal.SIGCONT)
        self.faults.append(Fault("pause_linkem", t0, time.monotonic(), f"pid {pid}, {hold * 1000:.0f} ms", pid))

    def disk_full(self) -> None:
        filler = self.disk / ".soak-filler"
        t0 = time.monotonic()
        try:
            with open(filler, "wb") as f:
                while True:
                    f.write(b"\0" * (1 << 20))
        except OSError:
            pass  # full
        time.sleep(3.0)
        filler.unlink(missing_ok=True)
        self.disk_full_done = True
        self.faults.append(Fault("disk_full", t0, time.monotonic()))

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
    p = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "longlook-soak", str(d)], capture_output=True, text=True
    )
    if p.returncode != 0:
        shutil.rmtree(d, ignore_errors=True)
        raise LonglookError(
            f"bench soak: cannot mount a tmpfs for the experiment ({p.stderr.strip()})", hint="run it as root"
        )
    return d


def _unmount(d: Path) -> None:
    subprocess.run(["umount", str(d)], capture_output=True)
    shutil.rmtree(d, ignore_errors=True)


def _driver(scenario: Path, out: Path, log: Path, *extra: str) -> subprocess.Popen:
    """`longlook run`, its stderr to `log`: not a pipe nobody reads while it runs (a long
    grid's progress lines would fill it and block the driver), not the soak's disk (full)."""
    with open(log, "w") as err:
        return subprocess.Popen(
            [
                str(Path(sys.executable).parent / "longlook"),
                "run",
                str(scenario),
                "--out",
                str(out),
                "--no-link-check",
                *extra,
            ],
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
        )


def _last_error(log: Path) -> str:
    """The driver's error (and hint) at the end of its stderr."""
    lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    at = max((i for i, ln in enumerate(lines) if ln.startswith("longlook: error")), default=len(lines) - 1)
    return " ".join(lines[at : at + 2])[:400]


def run_soak(runs: int = 1000, *, executor: str = "local", seed: int = 1, size_mb: int = 1500, say=print) -> SoakResult:
    res = SoakResult(executor=executor)
    disk = _mount_tmpfs(size_mb)
    res.logs = tempfile.mkdtemp(prefix="longlook-soak-logs-")  # kept when the books fail
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
        injector = FaultInjector(disk, seed, disk=disk)
        injector.start()
        rng = random.Random(seed + 1)
        kills_left = DRIVER_KILLS if executor == "local" else DRIVER_KILLS - 1
        worker_kill_left = executor == "ray"
        resume: list[str] = []
        while True:
            log = Path(res.logs) / f"driver-{len(res.driver_exits) + 1}.stderr"
            drv = _driver(scenario, out, log, *extra, *resume)
            kill_at = time.monotonic() + rng.uniform(20, 90) if kills_left else None
            while drv.poll() is None:
                time.sleep(0.5)
                if kill_at and time.monotonic() > kill_at:
                    t = time.monotonic()
                    os.kill(drv.pid, signal.SIGKILL)  # the driver alone: what it started is orphaned
                    injector.faults.append(Fault("kill_driver", t, t))
                    kills_left -= 1
                    kill_at = None
                if worker_kill_left and time.monotonic() - t_start > 90:
                    pids = [pid for pid, cmd in _pids_named("ray::run_cell") if cluster.started(pid)]
                    if pids:
                        t = time.monotonic()
                        _signal(pids[0], signal.SIGKILL)
                        injector.faults.append(Fault("kill_worker", t, t, f"pid {pids[0]}", pids[0]))
                        worker_kill_left = False
            drv.wait()
            res.driver_exits.append(drv.returncode)
            say(
                f"soak: driver exited {drv.returncode} after {time.monotonic() - t_start:.0f} s"
                + (f": {_last_error(log)}" if drv.returncode else "")
            )
            if drv.returncode == 0 and _complete(out):
                break
            if len(res.driver_exits) > 20:
                raise LonglookError("bench soak: the driver stopped 20 times without finishing the grid")
            resume = ["--resume"]
            time.sleep(1.0)
        injector.stop()
        res.wall_s = time.monotonic() - t_start
        _books(res, out, injector.faults)
        res.leftover_namespaces = [
            n
            for n in existing_namespaces()
            if n.startswith(NS_PREFIX)
            and any(n in r.namespaces and not r.owner_alive() for r in ownership.all_records())
        ]
        res.leftover_processes = [pid for pid, _ in _ours(disk)]
    finally:
        if cluster is not None:
            cluster.stop()
        _unmount(disk)
        if res.planned and res.passed:
            shutil.rmtree(res.logs, ignore_errors=True)
            res.logs = ""
    return res


def _complete(out: Path) -> bool:
    try:
        with Store.open(out, read_only=True) as store:
            sc = store.scenario()
            planned = len(sc.cells()) * sc.rounds * len(sc.arm_list())
            settled = sum(
                len(store.settled(c.id, sc.retries, retry_flagged=sc.fidelity.retries_flagged)) for c in sc.cells()
            )
        return settled >= planned
    except Exception:  # noqa: BLE001  a store the last kill left unopenable is not complete
        return False


def _books(res: SoakResult, out: Path, faults: list[Fault]) -> None:
    with Store.open(out, read_only=True) as store:
        sc = store.scenario()
        runs = store.runs_frame()
        settled = {c.id: store.settled(c.id, sc.retries, retry_flagged=sc.fidelity.retries_flagged) for c in sc.cells()}
    arms = [a.label for a in sc.arm_list()]
    res.planned = len(sc.cells()) * sc.rounds * len(arms)
    res.stored = len(runs)
    res.duplicates = int(runs["run_id"].duplicated().sum())
    res.settled = sum(len(s) for s in settled.values())
    res.unsettled = [
        f"{c}|r{r}|{a}" for c in settled for r in range(sc.rounds) for a in arms if (r, a) not in settled[c]
    ]
    res.ok = int((runs["status"] == "ok").sum())
    res.failed = int((runs["status"] != "ok").sum())
    flagged = runs["audit_flagged"].fillna(False).astype(bool)
    res.flagged = int(flagged.sum())
    failed = runs[runs["status"] != "ok"]
    res.failed_reasons = tally(f"{s}: {e}" for s, e in zip(failed["status"], failed["error"]))
    res.flagged_reasons = tally(r for rs in runs.loc[flagged, "audit_reasons"] for r in _reasons(rs))
    for f in faults:
        res.faults[f.kind] = res.faults.get(f.kind, 0) + 1
    counted = runs[(runs["status"] == "ok") & ~flagged]
    res.counted_through_fault, res.counted_through_linkem_stop, res.unjudged = faults_in_counted_fetches(
        counted.to_dict("records"), faults
    )


def faults_in_counted_fetches(
    counted: Iterable[dict[str, Any]], faults: list[Fault]
) -> tuple[list[str], list[str], list[str]]:
    """Counted runs (ok, unflagged) whose fetch a fault reached: (a kill of its client or of
    the server that answered it, a linkem stop overlapping it, runs with no fetch window)."""
    kills, stops, unjudged = [], [], []
    for r in counted:
        t0, t1 = r.get("fetch_start_mono_s"), r.get("fetch_end_mono_s")
        if not _number(t0) or not _number(t1):
            unjudged.append(f"{r['run_id']}: no fetch window recorded")
            continue
        m0, m1 = _measured(r, t0, t1)
        for f in faults:
            if f.kind == "pause_linkem" and f.t0 < m1 and f.t1 > m0:
                stops.append(
                    f"{r['run_id']}: linkem stopped {f.detail}, {max(f.t0, t0) - t0:.3f} s "
                    f"into a {t1 - t0:.3f} s fetch (its page load: {m0 - t0:.3f}-{m1 - t0:.3f} s)"
                )
            elif (
                f.kind in KILLS
                and t0 <= f.t0 <= t1
                and (f.kind == "kill_client" or not _number(r.get("server_pid")) or f.pid == int(r["server_pid"]))
            ):
                kills.append(f"{r['run_id']}: {f.kind} {f.detail}, {f.t0 - t0:.3f} s into a {t1 - t0:.3f} s fetch")
    return kills, stops, unjudged


CLOCK_MARGIN_S = 0.002  # the document's times are whole ms on the wall clock


def _measured(r: dict[str, Any], t0: float, t1: float) -> tuple[float, float]:
    """What a run measured, from its first packet to its page loaded, on the monotonic clock:
    the fetch document's own times (started_unix_ms as `started_at`, plt_ms) placed by the
    fetch's start on both clocks; the whole fetch when they are missing. A linkem stop outside
    it (the client starting or exiting) delays no packet the run measured, and linkem sees a
    stop that does (it holds the run's packets for the path's delay throughout)."""
    started, plt, unix0 = r.get("started_at"), r.get("plt_ms"), r.get("fetch_start_unix_s")
    try:
        first = started.replace(tzinfo=timezone.utc).timestamp() - unix0 + t0
    except (AttributeError, TypeError, ValueError):
        return t0, t1
    if not _number(plt) or not _number(first):
        return t0, t1
    return max(t0, first - CLOCK_MARGIN_S), min(t1, first + plt / 1000 + CLOCK_MARGIN_S)


def _reasons(joined: Any) -> list[str]:
    """A run's audit reasons as stored ("; "-joined), split where no parenthesis is open (a
    reason may hold "; " itself)."""
    out, depth, cur = [], 0, ""
    for part in str(joined).split("; "):
        cur = f"{cur}; {part}" if cur else part
        depth += part.count("(") - part.count(")")
        if depth <= 0:
            out.append(cur)
            cur, depth = "", 0
    return out + ([cur] if cur else [])


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and x == x  # not None, not NaN


def tally(texts: Iterable[Any]) -> dict[str, int]:
    """Reasons counted, most frequent first, paths and numbers folded so that alike reasons meet."""
    out: dict[str, int] = {}
    for t in texts:
        key = re.sub(r"\d+(\.\d+)?", "N", re.sub(r"/[^\s)]+", "PATH", str(t)))[:160]
        out[key] = out.get(key, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


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

        # the workers' temporary files (their spools, so their testbed processes' command
        # lines) on the soak's disk: the injector finds them, and the disk fills for them too
        tmp = where / "ray-tmp"
        tmp.mkdir()
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.temp = Path(tempfile.mkdtemp(prefix="llsoak-ray-", dir="/tmp"))
        self.log = open(self.temp / "ray.log", "w")
        ray_bin = str(Path(sys.executable).parent / "ray")
        self.proc = subprocess.Popen(
            [
                ray_bin,
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
                str(self.temp),
                "--disable-usage-stats",
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, "TMPDIR": str(tmp)},
        )
        deadline = time.monotonic() + 90
        while "block forever" not in (self.temp / "ray.log").read_text():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise LonglookError("bench soak: ray start did not come up", hint=str(self.temp / "ray.log"))
            time.sleep(0.5)
        self.address = f"127.0.0.1:{port}"

    def started(self, pid: int) -> bool:
        """Whether `pid` descends from this cluster's `ray start` (never another's worker)."""
        for _ in range(64):
            if pid == self.proc.pid:
                return True
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                return False
            pid = int(stat.rsplit(")", 1)[1].split()[1])
            if pid <= 1:
                return False
        return False

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
