"""Machine stalls, measured beside a measurement: `linkem-probe stalls` keeps a pinned
SCHED_FIFO thread on each CPU waking every millisecond and records the wake-ups that came
late. Such a thread is late only when its CPU could run nothing at all (interrupts, or the
hypervisor not running the vCPU), so a probe in flight during a stall was delayed by the
machine, not by the emulated link. The bench reports its figures with and without those
probes; the raw figures stay the headline."""

from __future__ import annotations

import bisect
import json
import signal
import subprocess
from dataclasses import dataclass

from ..binaries import find_binary
from .host import TestbedError


@dataclass(frozen=True)
class Stall:
    cpu: int
    start_ms: float  # CLOCK_MONOTONIC: the thread's previous wake-up, the earliest the stall began
    end_ms: float  # when the thread ran again, the stall's end
    late_ms: float  # how long after its due time it ran


class StallMonitor:
    """Context manager: the monitor runs for the `with` block; `.stalls` afterwards."""

    def __init__(self, period_us: int = 1000, threshold_us: int = 300):
        self.argv = [
            str(find_binary("linkem-probe")),
            "stalls",
            "--period-us",
            str(period_us),
            "--threshold-us",
            str(threshold_us),
        ]
        self.proc: subprocess.Popen | None = None
        self.record: dict | None = None
        self.stalls: list[Stall] = []

    def __enter__(self) -> "StallMonitor":
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().strip()
        if line != "ready":
            self.proc.kill()
            raise TestbedError(f"linkem-probe stalls did not start: {self.proc.stderr.read()[:300]}")
        return self

    def __exit__(self, *exc) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        out, err = self.proc.communicate(timeout=10)
        if self.proc.returncode != 0:
            raise TestbedError(f"linkem-probe stalls failed: {err.strip()[:300]}")
        self.record = json.loads(out.strip().splitlines()[-1])
        period = float(self.record["period_ms"])
        self.stalls = [
            Stall(int(c), float(due) - period, float(due) + float(late), float(late))
            for c, due, late in self.record["stalls"]
        ]


def probes_hit(sent_ms: list[float], rtt_ms: list[float], stalls: list[Stall], margin_ms: float = 0.3) -> list[bool]:
    """For each probe (sent at sent_ms, back rtt_ms later), whether a stall came while some
    process had to act on it: its send, the echo (taken at the half-way point, so for paths
    with equal delays both ways, as the bench's are) and its return. Each moment is widened
    by `margin_ms` for the release and wake-ups around it. A probe only waiting in linkem's
    queue during a stall is not delayed by it (its release is scheduled, not late)."""
    spans = _merged(sorted((s.start_ms - margin_ms, s.end_ms + margin_ms) for s in stalls))
    starts = [a for a, _ in spans]
    hit = []
    for t, r in zip(sent_ms, rtt_ms):
        moments = (t, t + r / 2, t + r)
        hit.append(any(_covered(m, spans, starts) for m in moments))
    return hit


def _merged(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for a, b in spans:
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _covered(moment: float, spans: list[tuple[float, float]], starts: list[float]) -> bool:
    """Whether a disjoint, sorted span covers the moment."""
    i = bisect.bisect_right(starts, moment)  # the last span starting at or before it
    return i > 0 and spans[i - 1][1] >= moment


def stalls_within(stalls: list[Stall], start_ms: float, end_ms: float) -> list[Stall]:
    return [s for s in stalls if s.end_ms >= start_ms and s.start_ms <= end_ms]
