"""The machine-stall monitor: attribution logic (pure) and the real monitor binary."""

import json
import subprocess

import pytest

from longlook.binaries import find_binary
from longlook.testbed.stalls import Stall, probes_hit, stalls_within
from testbed_helpers import needs_testbed


def test_probe_hit_only_when_a_stall_meets_send_echo_or_return():
    stalls = [Stall(cpu=0, start_ms=100.0, end_ms=102.0, late_ms=1.5)]
    sent = [100.5, 50.0, 0.0, 60.0, 30.0]
    rtt = [10.0, 50.0, 50.0, 10.0, 200.0]
    # sent into the stall; echoed at 75 (no) but back at 100 (yes); nothing near;
    # all of it before; echoed at 130, waiting in the queue during the stall (no)
    assert probes_hit(sent, rtt, stalls, margin_ms=0.3) == [True, True, False, False, False]


def test_margin_widens_each_stall():
    stalls = [Stall(cpu=1, start_ms=10.0, end_ms=11.0, late_ms=0.5)]
    assert probes_hit([11.2], [40.0], stalls, margin_ms=0.3) == [True]
    assert probes_hit([11.4], [40.0], stalls, margin_ms=0.3) == [False]


def test_overlapping_stalls_merge():
    stalls = [Stall(0, 10.0, 15.0, 4.5), Stall(1, 11.0, 11.5, 0.4), Stall(0, 20.0, 21.0, 0.5)]
    assert probes_hit([14.5, 17.0, 20.5], [1.0, 0.2, 0.0], stalls, margin_ms=0.0) == [True, False, True]


def test_stalls_within_window():
    stalls = [Stall(0, 5.0, 6.0, 0.5), Stall(0, 9.5, 10.5, 0.5), Stall(1, 30.0, 32.0, 1.5)]
    assert stalls_within(stalls, 10.0, 29.0) == [stalls[1]]


@needs_testbed("linkem-probe")
def test_monitor_wakes_every_period_on_every_cpu():
    out = subprocess.run(
        [str(find_binary("linkem-probe")), "stalls", "--duration-s", "0.5", "--period-us", "1000"],
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[0] == "ready"
    rec = json.loads(lines[-1])
    assert rec["cpus"] >= 1
    # each CPU's thread wakes about every period (stalls restart the schedule: fewer, not more)
    assert 0.5 * 500 * rec["cpus"] <= rec["wakeups"] <= 1.05 * 500 * rec["cpus"]
    assert rec["end_mono_ms"] - rec["start_mono_ms"] == pytest.approx(500, abs=100)
    for cpu, due, late in rec["stalls"]:
        assert 0 <= cpu < rec["cpus"] and late > rec["threshold_ms"]
