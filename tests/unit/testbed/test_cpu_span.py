"""The client's span (testbed/cpu_span.py): every party's CPU share divides by the time the
client's processes ran, not by the run's window."""

from __future__ import annotations

import itertools
import time

import pytest

from longlook.core.audit import RunAudit
from longlook.core.spec import Fidelity
from longlook.testbed.cpu import CpuUsage
from longlook.testbed.cpu_span import SpanWatch


class _Client:
    """A client group whose processes come and go when the test says."""

    def __init__(self):
        self.running = False
        self.ticks = itertools.count()

    def snapshot(self) -> int:
        return next(self.ticks)


def _watch(client: _Client) -> SpanWatch:
    return SpanWatch(lambda: client.running, client.snapshot, poll_s=0.002).start()


def test_the_span_runs_from_the_first_client_process_to_the_last_one_gone():
    client = _Client()
    watch = _watch(client)
    time.sleep(0.05)  # the window before the client (a server starting)
    client.running = True
    time.sleep(0.1)  # a 0-RTT warm-up fetch
    client.running = False
    time.sleep(0.03)
    client.running = True
    time.sleep(0.1)  # the measured fetch
    client.running = False
    time.sleep(0.2)  # the window after it (logs translated)
    span = watch.stop()
    assert 0.2 <= span.seconds <= 0.27, span.seconds
    assert span.end.counters > span.start.counters + 1  # the second exit, not the first


def test_a_client_still_running_when_the_window_ends_ends_the_span_there():
    client = _Client()
    client.running = True
    watch = _watch(client)
    time.sleep(0.05)
    started = time.monotonic()
    span = watch.stop()
    assert span.start.t < started <= span.end.t


def test_no_client_process_no_span():
    assert _watch(_Client()).stop() is None


class _Testbed:
    """Counters a test sets, and a client that runs when it says."""

    def __init__(self):
        self.usage = {p: CpuUsage(0) for p in ("client", "server", "router")}
        self.running = False

    def cpu_usage(self) -> dict:
        return dict(self.usage)

    def client_running(self) -> bool:
        return self.running

    def linkem_stats(self) -> dict:
        return {}


def test_the_audit_divides_by_the_span_and_counts_the_server_only_within_it():
    tb = _Testbed()
    audit = RunAudit(tb, None, Fidelity())
    audit.begin()
    tb.usage["server"] = CpuUsage(int(0.3e9))  # its start-up, before the client
    time.sleep(0.05)
    tb.running = True
    time.sleep(0.05)
    tb.usage["client"] = CpuUsage(int(0.1e9))
    tb.usage["server"] = CpuUsage(int(0.35e9))
    time.sleep(0.05)
    tb.running = False
    time.sleep(0.3)  # logs translated after the client left
    a = audit.end()
    assert 0.09 <= a.client_span_s <= 0.13, a.client_span_s
    assert a.client_cpu_s == 0.1 and a.server_cpu_s == 0.05
    assert a.client_cpu_share == pytest.approx(0.1 / a.client_span_s, rel=1e-3)  # not / the 0.45 s window
    assert a.server_cpu_share == pytest.approx(0.05 / a.client_span_s, rel=1e-3)


def test_a_run_whose_client_never_ran_has_cpu_seconds_but_no_share():
    tb = _Testbed()
    audit = RunAudit(tb, None, Fidelity())
    audit.begin()
    tb.usage["server"] = CpuUsage(int(0.2e9))
    a = audit.end()
    assert a.server_cpu_s == 0.2 and a.client_span_s is None
    assert a.server_cpu_share is None and a.client_cpu_share is None


def test_a_testbed_that_cannot_say_when_its_client_ran_keeps_the_window():
    tb = _Testbed()
    tb.client_running = lambda: None  # no cgroup to read
    audit = RunAudit(tb, None, Fidelity())
    audit.begin()
    tb.usage["client"] = CpuUsage(int(0.1e9))
    time.sleep(0.1)
    a = audit.end()
    window_s = (audit.t1_ms - audit.t0_ms) / 1000
    assert a.client_span_s is None and a.client_cpu_share == pytest.approx(0.1 / window_s, rel=1e-2)


def test_an_abandoned_run_leaves_no_watch_polling():
    tb = _Testbed()
    audit = RunAudit(tb, None, Fidelity())
    audit.begin()
    assert audit._span._thread.is_alive()
    audit.abandon()  # the kind raised: core.execute abandons the audit
    assert not audit._span._thread.is_alive()
