"""The link self-check on real links: profiles measured within tolerance, loss, traces,
buffers, the `longlook link check` command, and a link that is not its profile caught.
Its arithmetic: tests/unit/testbed/test_linkcheck.py."""

import time

import numpy as np
import pytest

from longlook.testbed.linkcheck import check_link
from longlook.linkprofile import LinkProfile
from longlook.traces import write_mahimahi
from testbed_helpers import needs_testbed


@needs_testbed("linkem", "linkem-probe")
def test_10mbit_20ms_within_tolerance():
    from longlook.testbed import Testbed

    p = LinkProfile(name="10mbit-20ms", rate_mbit=10, delay_ms=10, buffer_bytes=60_000)
    with Testbed(p) as tb:
        r = check_link(tb, duration_s=3, rtt_count=1000)
    assert r.ok, r.summary()
    rates = {(x.direction, x.quantity): x for x in r.rows}
    assert rates[("up", "UDP delivered (IP)")].ok
    assert rates[("both", "RTT median")].measured == pytest.approx(20.15, abs=0.5)


@needs_testbed("linkem", "linkem-probe")
def test_2pct_loss_measured_inside_interval():
    from longlook.testbed import Testbed

    p = LinkProfile(name="loss", rate_mbit=20, delay_ms=5, loss=0.02, buffer_bytes=100_000)
    with Testbed(p, seed=7) as tb:
        r = check_link(tb, duration_s=3, include=("loss",))
    loss_rows = [x for x in r.rows if x.quantity == "loss"]
    assert len(loss_rows) == 2
    for row in loss_rows:
        assert row.ok, f"{row.direction}: {row.measured} not consistent with 2% ({row.note})"
        assert row.low < 0.02 < row.high


@needs_testbed("linkem", "linkem-probe")
def test_trace_steps_rate(tmp_path):
    """10 Mbit/s for 2 s, then 40 Mbit/s for 2 s (wrapping): per-interval delivered rate
    follows the steps."""
    from longlook.testbed import Testbed
    from longlook.testbed.probe import PathProbe

    write_mahimahi([(2.0, 10.0), (2.0, 40.0)], tmp_path / "step.mahi")
    p = LinkProfile(name="step", delay_ms=5, buffer_bytes=60_000, down={"trace": "step.mahi"}, up={"rate_mbit": 50})
    with Testbed(p, base_dir=tmp_path) as tb, PathProbe(tb) as probe:
        u = probe.udp("down", 50, 4.2, size=1472, interval_ms=250, drain_ms=500)
    rates = np.array([row[1] * 8 / 0.25 / 1e6 for row in u["intervals"][:16]])
    near10 = np.mean(np.abs(rates - 10) < 1.5)
    near40 = np.mean(np.abs(rates - 40) < 4)
    assert near10 >= 0.3 and near40 >= 0.3, rates.round(1)
    assert near10 + near40 >= 0.75, rates.round(1)  # the rest are intervals holding a step


@needs_testbed("linkem", "linkem-probe")
def test_small_buffer_drops_under_overload_only():
    from longlook.testbed import Testbed
    from longlook.testbed.probe import PathProbe

    p = LinkProfile(name="30kb", rate_mbit=10, delay_ms=10, buffer_bytes=30_000)

    def dropped(tb) -> int:
        time.sleep(0.35)  # stats are rewritten every 100 ms
        return tb.linkem_stats()["directions"]["up"]["dropped_buffer"]

    with Testbed(p) as tb, PathProbe(tb) as probe:
        probe.udp("up", 5, 2, size=1472, drain_ms=300)  # half the rate: no queue
        assert dropped(tb) == 0
        u = probe.udp("up", 15, 2, size=1472, drain_ms=300)  # 1.5x the rate
        assert dropped(tb) > 0
        assert u["lost"] > 0
        assert u["rate_mbit"] == pytest.approx(10, rel=0.03)


@needs_testbed("linkem", "linkem-probe")
def test_link_check_command(tmp_path):
    """`longlook link check` exits 0 within tolerance, 1 outside, and its JSON says why."""
    import json
    import subprocess
    from testbed_helpers import LONGLOOK, REPO

    good = subprocess.run(
        [*LONGLOOK, "link", "check", "link-profiles/10mbit-20ms.toml", "--quick", "--json", "--no-iperf"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert good.returncode == 0, good.stdout[-2000:] + good.stderr
    assert json.loads(good.stdout)["ok"] is True


@needs_testbed("linkem", "linkem-probe")
def test_check_fails_when_the_link_is_not_the_profile():
    """The check must catch a wrong link: a 10 Mbit/s link checked against 20 Mbit/s and
    20 ms against 30 ms."""
    from longlook.testbed import Testbed

    running = LinkProfile(name="10", rate_mbit=10, delay_ms=10, buffer_bytes=60_000)
    claimed = LinkProfile(name="20", rate_mbit=20, delay_ms=15, buffer_bytes=200_000)
    with Testbed(running) as tb:
        r = check_link(
            tb, claimed, duration_s=1.5, rtt_count=300, iperf=False, directions=("down",), include=("rtt", "rate")
        )
    assert not r.ok
    failed = {x.quantity for x in r.failures()}
    assert {"RTT median", "UDP delivered (IP)", "TCP goodput, probe"} <= failed


@needs_testbed("linkem", "linkem-probe")
def test_an_up_link_whose_acks_ride_a_collapsing_down_trace_passes_and_a_broken_one_fails(tmp_path):
    """Issue 33: up 10 Mbit/s with a down trace falling to 0.1 Mbit/s was blamed on the
    emulator ("up TCP goodput 5.769, expected 9.653"): the ACKs are throttled by the down
    trace. Not judged (ACK-limited), everything else judged; a link that is really slower
    than it claims still fails."""
    from longlook.testbed import Testbed

    write_mahimahi([(1.0, 0.1), (1.0, 4.0)], tmp_path / "collapse.mahi")
    p = LinkProfile(
        name="asym", delay_ms=10, buffer_bytes=60_000, up={"rate_mbit": 10}, down={"trace": "collapse.mahi"}
    )
    with Testbed(p, base_dir=tmp_path) as tb:
        r = check_link(tb, duration_s=2, rtt_count=200, iperf=False, directions=("up",), include=("rate",))
        assert r.ok, r.summary()
        tcp = next(x for x in r.rows if x.quantity == "TCP goodput, probe")
        assert tcp.ok is None and "ACK-limited by the reverse direction" in tcp.note
        slower = LinkProfile(
            name="asym-claims-20",
            delay_ms=10,
            buffer_bytes=60_000,
            up={"rate_mbit": 20},
            down={"trace": "collapse.mahi"},
        )
        broken = check_link(
            tb,
            slower,
            duration_s=2,
            rtt_count=200,
            iperf=False,
            directions=("up",),
            include=("rate",),
            base_dir=tmp_path,
        )
    assert not broken.ok and "UDP delivered (IP)" in {x.quantity for x in broken.failures()}


@needs_testbed("linkem", "linkem-probe")
def test_the_check_runs_on_a_real_lte_trace_with_outages():
    """mahimahi's Verizon LTE trace (shipped data) has a second of no capacity up: the check
    once divided by it (the RTT probes), then asked the probe for a 0 Mbit/s loss stream. It
    now completes, says why that loss is not measured, and judges the down direction's."""
    from repo_paths import ROOT
    from longlook.testbed import Testbed

    cellular = ROOT / "scenarios" / "traces" / "cellular"
    p = LinkProfile(
        name="verizon-lte",
        delay_ms=30,
        buffer_bytes=150_000,
        up={"trace": "Verizon-LTE-short.up"},
        down={"trace": "Verizon-LTE-short.down"},
    )
    with Testbed(p, base_dir=cellular) as tb:
        r = check_link(tb, p, duration_s=2.0, iperf=False, base_dir=cellular)
    loss = {row.direction: row for row in r.rows if row.quantity == "loss"}
    assert loss["up"].ok is None and "outage" in loss["up"].note, loss["up"]
    assert loss["down"].ok is not None, loss["down"]  # the down trace has no empty second
    assert r.ok, r.summary()
