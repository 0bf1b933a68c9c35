"""linkem, the link emulator, run in the router namespace (contract: docs/interfaces.md)."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Callable

from ..binaries import find_binary
from .host import TestbedError, cpu_wakeup_latency_us, tool
from .processes import start_time, terminate

# linkem's periodic stats rewrite (a whole JSON document and a rename) cost 9-17% of its CPU
# at gigabit rates every 25 ms; readers now ask for figures on demand (SIGUSR1,
# `Linkem.stats`), so the file is rewritten rarely. The flow log, a time series, keeps 25 ms.
STATS_INTERVAL_MS = 1000
FLOW_LOG_INTERVAL_MS = 25
# a document whose counters are older than this is refreshed before it is returned (the
# periodic cadence readers had before)
STATS_FRESH_MS = 25.0
STATS_FRESH_WAIT_S = 0.3  # longest wait for linkem to write on demand (it waits <= 20 ms)


def disk_full(directory: Path, below_bytes: int = 1 << 20) -> bool:
    """Less than `below_bytes` free where `directory` lives (1 MiB: a stats file or a run's
    JSON no longer fits)."""
    try:
        return shutil.disk_usage(directory).free < below_bytes
    except OSError:
        return False


class Linkem:
    """One linkem process: started, waited for (`ready`), checked, stopped."""

    def __init__(
        self,
        router_ns: str,
        config: Path,
        workdir: Path,
        *,
        seed: int | None = None,
        rt_priority: int | None = None,
        stats_interval_ms: int = STATS_INTERVAL_MS,
        flow_log: bool = False,
        flow_log_interval_ms: int = FLOW_LOG_INTERVAL_MS,
        ready_timeout_s: float = 10.0,
        profile_name: str = "link",
        queues: tuple[str, str] = ("0", "1"),
        pcap: Path | None = None,
        pcap_copy_bytes: int = 128,
        pcap_max_bytes: int | None = None,
        afpacket: tuple[str, str] | None = None,
        launcher: Callable[[list[str]], list[str]] = lambda argv: argv,
    ):
        self.router_ns = router_ns
        self.launcher = launcher  # wraps the whole command line (the router's CPU cgroup)
        self.profile_name = profile_name
        self.config = config
        self.stats_path = workdir / "linkem-stats.json"
        self.stdout_path = workdir / "linkem.stdout"
        self.stderr_path = workdir / "linkem.stderr"
        self.flow_log_path = workdir / "linkem-flows.jsonl" if flow_log else None
        self.phase_path = workdir / "linkem-phase"  # a trace's phase, read on SIGUSR2
        argv = [
            str(find_binary("linkem")),
            "run",
            "--config",
            str(config),
            "--up-queue",
            queues[0],
            "--down-queue",
            queues[1],
            "--stats",
            str(self.stats_path),
            "--stats-interval-ms",
            str(stats_interval_ms),
            "--cpu-latency-us",
            str(cpu_wakeup_latency_us()),
            "--phase-file",
            str(self.phase_path),
        ]  # the testbed's own request
        if afpacket is not None:  # linkem forwards itself: (up, down) as IN,OUT,NEXT_HOP_MAC
            argv += ["--afpacket-up", afpacket[0], "--afpacket-down", afpacket[1]]
        if seed is not None:
            argv += ["--seed", str(seed)]
        if rt_priority is not None:
            argv += ["--rt-priority", str(rt_priority)]
        if self.flow_log_path is not None:
            argv += ["--flow-log", str(self.flow_log_path), "--flow-log-interval-ms", str(flow_log_interval_ms)]
        if pcap is not None:  # complete once linkem has stopped (it buffers)
            argv += ["--pcap", str(pcap), "--copy-bytes", str(pcap_copy_bytes)]
            if pcap_max_bytes is not None:
                argv += ["--pcap-max-bytes", str(pcap_max_bytes)]
        self.argv = argv
        self.ready_timeout_s = ready_timeout_s
        self.proc: subprocess.Popen | None = None
        self.started_unix: float | None = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    @property
    def started(self) -> int | None:
        return start_time(self.pid) if self.pid else None

    def start(self) -> None:
        self.stats_path.unlink(missing_ok=True)
        # the zero of the flow log's `t`, on the wall clock (good to a few ms: linkem starts
        # its clock right after it is exec'd)
        self.started_unix = time.time()
        with open(self.stdout_path, "w") as out, open(self.stderr_path, "w") as err:
            self.proc = subprocess.Popen(
                self.launcher([tool("ip"), "netns", "exec", self.router_ns, *self.argv]),
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
            )
        deadline = time.monotonic() + self.ready_timeout_s
        while time.monotonic() < deadline:
            if "ready" in self.stdout_path.read_text().split():
                return
            if self.proc.poll() is not None:
                if self.proc.returncode == 2:  # a config error: say whose, not the generated file's
                    field = self._stderr_tail().split(": ", 1)[-1]
                    raise TestbedError(
                        f"link profile {self.profile_name!r}: linkem refused it: {field}",
                        hint="fix that field in the scenario's [[links]] or the link profile file",
                    )
                raise TestbedError(
                    f"linkem exited (code {self.proc.returncode}) before it was ready: {self._stderr_tail()}"
                )
            time.sleep(0.02)
        self.stop()
        raise TestbedError(f"linkem did not print `ready` within {self.ready_timeout_s} s: {self._stderr_tail()}")

    def check(self) -> None:
        """Fail closed: with linkem gone the path is dead, and a measurement made now is not
        a measurement of the configured link."""
        if self.proc is not None and self.proc.poll() is not None:
            if disk_full(self.stderr_path.parent):
                raise TestbedError(
                    f"no space left on the device of {self.stderr_path.parent}: linkem "
                    f"could not write its stats and stopped (exit code {self.proc.returncode})",
                    hint="free space, then rerun with --resume: finished runs are kept",
                )
            raise TestbedError(
                f"linkem died (exit code {self.proc.returncode}); the emulated link is down: {self._stderr_tail()}",
                hint=f"see {self.stderr_path}",
            )

    def stop(self, grace_s: float = 3.0) -> None:
        """SIGTERM so linkem writes its final stats, SIGKILL after `grace_s`."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(grace_s)
            except subprocess.TimeoutExpired:
                terminate([self.proc.pid], grace_s=0)
                self.proc.wait(5)

    def stats(self) -> dict:
        """linkem's stats covering its counters up to at most STATS_FRESH_MS ago: a running
        linkem whose file is older is asked (SIGUSR1) to write them now, which it does after
        its directions hand their counters over (`covers_mono_ms`); a stopped one's file is
        read as it is."""
        doc = self._read_stats()
        now_ms = time.monotonic() * 1000
        if (
            self.proc is None
            or self.proc.poll() is not None
            or "covers_mono_ms" not in doc  # (no SIGUSR1)
            or _covered_ms(doc) >= now_ms - STATS_FRESH_MS
        ):
            return doc
        try:
            self.proc.send_signal(signal.SIGUSR1)
        except ProcessLookupError:
            return doc
        deadline = time.monotonic() + STATS_FRESH_WAIT_S
        while _covered_ms(doc) < now_ms and time.monotonic() < deadline and self.proc.poll() is None:
            time.sleep(0.001)
            doc = self._read_stats()
        return doc

    def rephase(self, phase_ms: float, timeout_s: float = 1.0) -> None:
        """Re-anchor the link's traces: the next packet, in either direction, meets each trace
        at `phase_ms` (a fixed-rate link ignores it). Returns once linkem's stats say it took
        the request."""
        if self.proc is None or self.proc.poll() is not None:
            raise TestbedError("linkem is not running: no trace to re-phase")
        # only SIGUSR2 moves these counts, and linkem rewrites its stats as it takes one
        before = self._phase_counts()
        self.phase_path.write_text(f"{phase_ms:.3f}\n")
        self.proc.send_signal(signal.SIGUSR2)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and self.proc.poll() is None:
            requests, rejected = self._phase_counts()
            if requests > before[0]:
                return
            if rejected > before[1]:
                raise TestbedError(f"linkem refused the trace phase {phase_ms:g} ms: {self._stderr_tail()}")
            time.sleep(0.002)
        self.check()
        raise TestbedError(
            f"linkem did not take the trace phase {phase_ms:g} ms within {timeout_s:g} s: {self._stderr_tail()}"
        )

    def _phase_counts(self) -> tuple[int, int]:
        """Re-phase requests linkem took and refused, from its stats' `trace_phase`."""
        try:
            state = self._read_stats().get("trace_phase") or {}
        except TestbedError:
            state = {}  # the file between its rewrite and rename, or not written yet
        return int(state.get("requests", 0)), int(state.get("rejected", 0))

    def _read_stats(self) -> dict:
        try:
            return json.loads(self.stats_path.read_text())
        except FileNotFoundError:
            raise TestbedError(f"linkem has written no stats yet ({self.stats_path})") from None
        except ValueError as e:
            raise TestbedError(f"linkem's stats file is not valid JSON: {e}") from None

    def _stderr_tail(self, lines: int = 5) -> str:
        try:
            text = self.stderr_path.read_text().strip().splitlines()
        except OSError:
            return "(no stderr)"
        return " | ".join(text[-lines:]) or "(no stderr)"


def _covered_ms(doc: dict) -> float:
    """Up to when (CLOCK_MONOTONIC ms) a stats document holds every release; a linkem
    without `covers_mono_ms` wrote its counters up to its interval before `mono_ms`."""
    try:
        if doc.get("covers_mono_ms") is not None:
            return float(doc["covers_mono_ms"])
        return float(doc["mono_ms"]) - STATS_FRESH_MS
    except (KeyError, TypeError, ValueError):
        return float("inf")  # says nothing about its age: taken as it is
