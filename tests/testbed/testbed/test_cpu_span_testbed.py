"""Another stack's client is measured as ours is: a quic-go download through the
testbed, audited as a page load is (its server started and its logs translated inside the
run's window), records the client's CPU seconds as an independent count has them, and its
share of a core as those seconds over the time the client process lived.

Measured when this was written (100 Mbit/s, 8 MB; /tmp harness over every installed client):
the cgroup's client CPU matched getrusage(RUSAGE_CHILDREN) within 1% for ours, quic-go,
ngtcp2, quiche, tquic, s2n-quic, kwik and aioquic (Chromium's orphaned helpers are reaped by
init, so only the cgroup counts all of them). The shares were the fault: divided by a window
2-20x longer than the client lived (quiche 0.02 for a client busy 0.19 of a core)."""

from __future__ import annotations

import os
import resource
from pathlib import Path

import pytest

from testbed_helpers import needs_testbed

from longlook.core.audit import RunAudit
from longlook.core.spec import Fidelity
from longlook.kinds.pageload.spec import Workload
from longlook.linkprofile import LinkProfile
from longlook.stacks.registry import resolve
from longlook.stacks.servers import open_servers
from longlook.testbed import SERVER_ADDR, Testbed

STACK = "quic-go"


def _children_cpu_s() -> float:
    """User + system CPU of this process's waited-for children: the client, with nothing of
    the server's (still running) or of this process's own log translation."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _needs_stack():
    if resolve(STACK).installed() or os.environ.get("CI"):
        return lambda f: f
    return pytest.mark.skip(reason=f"{STACK} is not installed (longlook stacks install {STACK})")


@_needs_stack()
@needs_testbed("linkem")
def test_a_quic_go_client_s_cpu_seconds_and_share_match_an_independent_count(tmp_path: Path):
    workload = Workload(object_count=1, object_size=8_000_000)
    fetch = resolve(STACK).fetcher()
    with (
        Testbed(LinkProfile(rate_mbit=100, delay_ms=5, buffer_bytes=250_000)) as tb,
        open_servers(tb, tmp_path) as shared,
    ):
        run_dir = tmp_path / "runs" / "r1"
        run_dir.mkdir(parents=True)
        audit = RunAudit(tb, None, Fidelity())
        audit.begin()
        port, server = shared["servers"].get(STACK, None, None, workload=workload)  # a run's first: it starts
        cpu0 = _children_cpu_s()
        result = fetch(
            tb,
            url=f"https://{SERVER_ADDR}:{port}{workload.url_path()}",
            protocol="h3",
            run_id="r1",
            cert_dir=shared["servers"].cert_dir,
            out=run_dir / "fetch.json",
            timeout_s=30,
        )
        client_s = _children_cpu_s() - cpu0
        server.take_artifacts("r1", run_dir)  # its qlog translated, as a page load does
        a = audit.end()
    window_s = (audit.t1_ms - audit.t0_ms) / 1000
    assert result.status == "ok", result.error
    assert window_s > 1.5 * result.wall_s, (window_s, result.wall_s)  # the window holds more than the client
    assert a.client_cpu_s == pytest.approx(client_s, rel=0.05, abs=0.01), (a.client_cpu_s, client_s)
    # the client's span is its process's life (one 5 ms poll at either end)
    assert a.client_span_s == pytest.approx(result.wall_s, abs=0.03), (a.client_span_s, result.wall_s)
    assert a.client_cpu_share == pytest.approx(client_s / result.wall_s, rel=0.1, abs=0.02), (
        a.client_cpu_share,
        client_s,
        result.wall_s,
    )
    # the server's and linkem's CPU are counted over the same span: the server's start is not the run's
    assert a.server_cpu_share == pytest.approx(a.server_cpu_s / a.client_span_s, rel=1e-3)
