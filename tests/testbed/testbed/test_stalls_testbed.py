"""The machine-stall monitor's real binary (`linkem-probe stalls`): it wakes every period on
every CPU. Its attribution logic: tests/unit/testbed/test_stalls.py."""

import json
import subprocess

import pytest

from longlook.binaries import find_binary
from testbed_helpers import needs_testbed


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
