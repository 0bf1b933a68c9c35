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


def disk_full(directory: Path, below_bytes: int = 1 << 20) -> bool:
    """Less than `below_bytes` free where `directory` lives (1 MiB: a stats file or a run's
    JSON no longer fits)."""
    try:
        return shutil.disk_usage(directory).free < below_bytes
    except OSError:
        return False


class Linkem:
    """One linkem process: started, waited for (`ready`), checked, stopped."""

    def __init__(self, router_ns: str, config: Path, workdir: Path, *, seed: int | None = None,
                 rt_priority: int | None = None, stats_interval_ms: int = 25,
                 flow_log: bool = False, ready_timeout_s: float = 10.0, profile_name: str = "link",
                 queues: tuple[str, str] = ("0", "1"), pcap: Path | None = None,
                 pcap_copy_bytes: int = 128, pcap_max_bytes: int | None = None,
                 launcher: Callable[[list[str]], list[str]] = lambda argv: argv):
        self.router_ns = router_ns
        self.launcher = launcher  # wraps the whole command line (the router's CPU cgroup)
        self.profile_name = profile_name
        self.config = config
        self.stats_path = workdir / "linkem-stats.json"
        self.stdout_path = workdir / "linkem.stdout"
        self.stderr_path = workdir / "linkem.stderr"
        self.flow_log_path = workdir / "linkem-flows.jsonl" if flow_log else None
        argv = [str(find_binary("linkem")), "run", "--config", str(config),
                "--up-queue", queues[0], "--down-queue", queues[1],
                "--stats", str(self.stats_path), "--stats-interval-ms", str(stats_interval_ms),
                "--cpu-latency-us", str(cpu_wakeup_latency_us())]  # the testbed's own request
        if seed is not None:
            argv += ["--seed", str(seed)]
        if rt_priority is not None:
            argv += ["--rt-priority", str(rt_priority)]
        if self.flow_log_path is not None:
            argv += ["--flow-log", str(self.flow_log_path)]
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
            self.proc = subprocess.Popen(self.launcher([tool("ip"), "netns", "exec", self.router_ns, *self.argv]),
                                         stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + self.ready_timeout_s
        while time.monotonic() < deadline:
            if "ready" in self.stdout_path.read_text().split():
                return
            if self.proc.poll() is not None:
                if self.proc.returncode == 2:  # a config error: say whose, not the generated file's
                    field = self._stderr_tail().split(": ", 1)[-1]
                    raise TestbedError(f"link profile {self.profile_name!r}: linkem refused it: {field}",
                                       hint="fix that field in the scenario's [[links]] or the link profile file")
                raise TestbedError(f"linkem exited (code {self.proc.returncode}) before it was ready: "
                                   f"{self._stderr_tail()}")
            time.sleep(0.02)
        self.stop()
        raise TestbedError(f"linkem did not print `ready` within {self.ready_timeout_s} s: "
                           f"{self._stderr_tail()}")

    def check(self) -> None:
        """Fail closed: with linkem gone the path is dead, and a measurement made now is not
        a measurement of the configured link."""
        if self.proc is not None and self.proc.poll() is not None:
            if disk_full(self.stderr_path.parent):
                raise TestbedError(f"no space left on the device of {self.stderr_path.parent}: linkem "
                                   f"could not write its stats and stopped (exit code {self.proc.returncode})",
                                   hint="free space, then rerun with --resume: finished runs are kept")
            raise TestbedError(f"linkem died (exit code {self.proc.returncode}); the emulated link "
                               f"is down: {self._stderr_tail()}",
                               hint=f"see {self.stderr_path}")

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
