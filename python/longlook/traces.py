"""mahimahi bandwidth traces: the five patterns of the fallback paper's Table 3, and reading
and summarising trace files.

A mahimahi trace has one integer per line, a time in ms; each line is one opportunity to
deliver a 1500-byte packet at that time, and the trace wraps at its end. N Mbit/s for one ms
is N*1e6/8/1500/1000 opportunities; fractions are carried over in an accumulator, so the
long-run rate is exact and opportunities are spread evenly.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import TRACE_LIMIT, LonglookError, check_range, read_user_text

MAX_TRACE_S = 86_400  # the longest trace `trace generate` writes

PACKET_BYTES = 1500


@dataclass(frozen=True)
class Pattern:
    """Start at `start_kbps`, step by `jump_kbps` every `hold_s` until `last_kbps`, then back
    (the paper: "the patterns repeat with the last bandwidth as the starting bandwidth, the
    starting bandwidth as the last bandwidth, and a negative value of the jump")."""

    name: str
    start_kbps: int
    last_kbps: int
    jump_kbps: int
    hold_s: float

    def levels(self) -> list[int]:
        """One full cycle of rates, kbit/s: the sweep there and the sweep back."""
        there = list(range(self.start_kbps, self.last_kbps + np.sign(self.jump_kbps), self.jump_kbps))
        back = there[::-1][1:-1]  # the ends are held once per cycle, not twice
        return there + back


# Chaudhary et al., Table 3 ("Bandwidth Patterns"). Kbps = 1000 bit/s.
PATTERNS = {
    "incr": Pattern("Incr", 128, 2048, +64, 60),
    "decr": Pattern("Decr", 2048, 128, -64, 60),
    "dh": Pattern("DH", 1152, 896, -256, 240),
    "dl": Pattern("DL", 640, 128, -256, 240),
    "dvl": Pattern("DVL", 64, 256, +64, 60),
}


def pattern(name: str) -> Pattern:
    try:
        return PATTERNS[name.lower()]
    except KeyError:
        raise LonglookError(
            f"unknown bandwidth pattern '{name}'", hint=f"choose one of {', '.join(PATTERNS)}"
        ) from None


def rate_steps(p: Pattern, duration_s: float | None = None, hold_s: float | None = None) -> list[tuple[float, float]]:
    """(seconds, Mbit/s) steps of the pattern, cycled until `duration_s` (one cycle if None).
    `hold_s` overrides the pattern's hold time (to make short test traces)."""
    # a trace has 1 ms resolution and is written whole: a hold under 1 ms would make
    # endless steps, a duration over a day an endless file
    if hold_s is not None:
        check_range("--hold", hold_s, 0.001, 86_400, hint="seconds per rate level, e.g. 60")
    if duration_s is not None:
        check_range("--duration", duration_s, 0.001, MAX_TRACE_S, hint="seconds, at most a day")
    hold = hold_s if hold_s is not None else p.hold_s
    levels = p.levels()
    total = duration_s if duration_s is not None else len(levels) * hold
    steps, t, i = [], 0.0, 0
    while t < total - 1e-9:
        length = min(hold, total - t)
        steps.append((length, levels[i % len(levels)] / 1000))
        t += length
        i += 1
    return steps


def opportunities(steps: Iterable[tuple[float, float]]) -> Iterator[int]:
    """Delivery-opportunity timestamps (ms) for (seconds, Mbit/s) steps."""
    acc = 0.0
    ms = 0
    for seconds, mbit in steps:
        per_ms = mbit * 1e6 / 8 / PACKET_BYTES / 1000
        for _ in range(round(seconds * 1000)):
            ms += 1
            acc += per_ms
            while acc >= 1.0 - 1e-9:  # tolerance: 0.1 * 10 must give 1 opportunity, not 0
                yield ms
                acc -= 1.0


def write_mahimahi(steps: Iterable[tuple[float, float]], out: Path) -> int:
    """Write a trace; returns the number of lines. Fails when a trace would be empty."""
    lines = [str(t) for t in opportunities(steps)]
    if not lines:
        raise LonglookError("the trace would have no delivery opportunity (rate or duration too small)")
    Path(out).write_text("\n".join(lines) + "\n")
    return len(lines)


def generate(name: str, out: Path, duration_s: float | None = None, hold_s: float | None = None) -> int:
    return write_mahimahi(rate_steps(pattern(name), duration_s, hold_s), out)


def load_mahimahi(path: Path) -> np.ndarray:
    """Timestamps (ms) of a mahimahi trace; errors name the file and line."""
    text = read_user_text(path, "trace file", "traces/incr.trace (`longlook trace generate`)", TRACE_LIMIT)
    values = []
    prev = 0
    for n, line in enumerate(text.splitlines(), start=1):
        s = line.strip()
        if not s:
            continue
        if not (s.isascii() and s.isdigit()):
            raise LonglookError(f"{path}:{n}: '{s}' is not a non-negative integer (ms)")
        v = int(s)
        if v < prev:
            raise LonglookError(
                f"{path}:{n}: {v} is earlier than the line before ({prev}); timestamps must not decrease"
            )
        values.append(v)
        prev = v
    if not values:
        raise LonglookError(f"{path}: the trace is empty")
    if values[-1] == 0:
        raise LonglookError(f"{path}: the trace lasts 0 ms (its last timestamp must be > 0)")
    return np.asarray(values, dtype=np.int64)


def rate_profile(trace: np.ndarray, interval_ms: int = 1000, duration_ms: int | None = None) -> np.ndarray:
    """Expected rate (Mbit/s of 1500-byte packets) per interval [k*interval, (k+1)*interval)
    of the trace time, wrapping as mahimahi does for `duration_ms` (default: one period).

    Timestamp t means "an opportunity during ms t" (mahimahi delivers at t), so it counts in
    the interval containing t - 1 ms .. t; we bin by (t - 1) // interval for t >= 1."""
    period = int(trace[-1])
    duration = duration_ms if duration_ms is not None else period
    n = -(-duration // interval_ms)
    counts = np.zeros(n, dtype=np.int64)
    for k in range(-(-duration // period)):
        t = trace + k * period
        t = t[(t >= 1) & (t <= duration)]
        np.add.at(counts, (t - 1) // interval_ms, 1)
    return counts * PACKET_BYTES * 8 / (interval_ms / 1000) / 1e6
