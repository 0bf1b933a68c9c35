"""The machine-stall monitor's attribution logic (pure). The real monitor binary:
tests/testbed/testbed/test_stalls_testbed.py."""

from longlook.testbed.stalls import Stall, probes_hit, stalls_within


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
