"""Client CPU budgets on the real testbed: a budgeted client loads the same thing measurably
slower than an unlimited one, and each run records its client's CPU time (testbed/cpu.py,
core.audit). Also: the cgroup lives exactly as long as its testbed.

Measured here: our quinn client needs only ~0.06 s of CPU for 5 MB when it is
throttled (it reads in batches), so at 100 Mbit/s a fifth of a core keeps up with it; it
falls behind at 5%, but not always by 1.3x (579 vs 475 ms once, 2026-11-27), so the test
uses 2%. Chromium needs far more: at a fifth of a core a page takes ~8x longer."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pandas as pd

from testbed_helpers import needs_testbed
from testbed.stacks.test_chromium_path import needs_chromium

from longlook.core.execute import Runner
from longlook.core.status import counted_runs
from longlook.core.store import Store
from longlook.kinds.pageload import Scenario
from longlook.testbed import Testbed
from longlook.testbed import cpu


def _run(tmp_path: Path, *, client: str, workload: str, budget: str, rounds: int) -> pd.DataFrame:
    text = textwrap.dedent(f"""
        name = "cpu-budget-test"
        seed = 3
        rounds = {rounds}
        protocols = ["h3", "h2"]
        client = "{client}"
        timeout_s = 30
        retries = 1
        workloads = ["{workload}"]
        client_cpu = ["unlimited", {budget}]
        [[links]]
        rate_mbit = 100
        rtt_ms = 10
        buffer_bytes = 250000
        [options]
        zero_rtt = false
        [fidelity]
        exclude_flagged = false
    """)
    summary = Runner(Scenario.from_toml(text, source="test"), tmp_path, link_check=False).run()
    assert summary.ok == summary.runs == 2 * 2 * rounds, summary
    with Store.open(tmp_path, read_only=True) as store:
        runs = counted_runs(store.runs_frame(), "plt_ms", exclude_flagged=False)
        dims = pd.DataFrame(list(store.cells_frame()["dims"]))
    assert sorted(dims["client_cpu"]) == sorted(set(runs["client_cpu"]))  # a cell dimension
    return runs


def _slower(runs: pd.DataFrame, arm: str, budget: str, factor: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Measurably: the budgeted client's fastest run is `factor` slower than the unlimited
    client's slowest, same arm."""
    runs = runs[runs["arm"] == arm]
    slow, fast = runs[runs["client_cpu"] == budget], runs[runs["client_cpu"] == "unlimited"]
    assert len(slow) and len(fast)
    assert slow["plt_ms"].min() > factor * fast["plt_ms"].max(), runs[
        ["client_cpu", "plt_ms", "client_cpu_s"]
    ].to_string()
    return slow, fast


@needs_testbed("linkem", "endpoint")
def test_a_native_client_at_2_percent_of_a_core_downloads_slower_and_its_cpu_time_is_recorded(tmp_path: Path):
    runs = _run(tmp_path, client="native", workload="bulk:5m", budget="{quota = 0.02, cores = 1}", rounds=2)
    slow, fast = _slower(runs, "h3", "q0.02x1", 1.3)
    # recorded, not sized (h2's client: 13 ms for 5 MB here at 1% of a core; less on a faster one)
    assert (runs["client_cpu_s"] > 0).all(), runs[["arm", "client_cpu", "client_cpu_s"]]
    assert (slow["client_cpu_share"] < 0.07).all(), slow["client_cpu_share"].tolist()  # the budget held
    assert (slow["client_throttled_s"] > 0).all() and (fast["client_throttled_s"] == 0).all()


@needs_chromium
@needs_testbed("linkem", "endpoint")
def test_chromium_at_a_fifth_of_a_core_loads_a_page_slower(tmp_path: Path):
    runs = _run(tmp_path, client="chromium", workload="4x50k", budget='"phone-2014"', rounds=1)
    for arm in ("h3", "h2"):
        slow, _ = _slower(runs, arm, "phone-2014", 2.0)
        assert (slow["client_cpu_share"] < 0.3).all()
    assert (runs["client_cpu_s"] > 0.5).all()  # a browser, all of its processes counted


@needs_testbed()
def test_the_client_cgroup_lives_as_long_as_its_testbed():
    with Testbed(None) as tb:
        assert tb.id in {i for i, _ in cpu.testbed_groups()}
        out = tb.run("client", ["cat", "/proc/self/cgroup"]).stdout
        assert f"ll-{tb.id}-client" in out  # joined before it ran (cpuacct: measured)
        tb.set_client_cpu(cpu.CpuBudget.parse("phone-2014"))
        out = tb.run("client", ["cat", "/proc/self/cgroup"]).stdout
        scheduled = (
            (f"cpu:/longlook/ll-{tb.id}-client", f"cpuset:/longlook/ll-{tb.id}-client")
            if cpu.cgroup_version() == 1
            else (f"::/longlook/ll-{tb.id}-client",)
        )
        assert all(s in out for s in scheduled), out  # now also scheduled under the budget
        probe = tb.run("client", ["cat", "/proc/self/cgroup"], as_party=False).stdout
        assert f"ll-{tb.id}-client" not in probe  # the testbed's own tools stay out
    assert tb.id not in {i for i, _ in cpu.testbed_groups()}


@needs_testbed()
def test_clean_removes_a_client_group_whose_testbed_is_gone():
    from longlook.testbed import clean

    left = cpu.PartyCgroup("zzleft1", "client")
    left.create()  # as a testbed killed with -9 leaves it: no record, no namespaces
    assert "zzleft1" in {i for i, _ in cpu.testbed_groups()}
    cleaned = clean(ids={"zzleft1"})
    assert "zzleft1" not in {i for i, _ in cpu.testbed_groups()} and cleaned.cgroups


@needs_testbed("linkem", "endpoint")
def test_every_party_s_cpu_is_recorded_per_run_with_the_pinning_and_the_host_buffers(tmp_path: Path):
    """Server and linkem CPU per run (Langley §6.7 needs the server's), per MB forwarded; the
    pinning asked for and who shared a CPU; the TCP buffers sized to the path."""
    text = textwrap.dedent("""
        name = "party-cpu-test"
        rounds = 1
        protocols = ["h3", "h2"]
        workloads = ["bulk:2m"]
        timeout_s = 30
        [[links]]
        rate_mbit = 100
        rtt_ms = 40
        buffer_bytes = 500000
        [options]
        zero_rtt = false
        [fidelity]
        exclude_flagged = false
        [testbed]
        cpus = {router = [0], server = [1], client = [1]}
    """)
    summary = Runner(Scenario.from_toml(text, source="test"), tmp_path, link_check=False).run()
    assert summary.ok == summary.runs == 2, summary
    with Store.open(tmp_path, read_only=True) as store:
        runs = counted_runs(store.runs_frame(), "plt_ms", exclude_flagged=False)
    # recorded, not sized: a fast machine serves 2 MB in under 5 ms of CPU (seen: 4.7 ms)
    for party in ("client", "server", "router"):
        assert (runs[f"{party}_cpu_s"] > 0).all(), runs.filter(like="cpu")
        assert (runs[f"{party}_cpu_s_per_mb"] > 0).all()
    assert all(c == {"router": [0], "server": [1], "client": [1]} for c in runs["cpus"])
    assert all(s == ["server+client on CPU 1"] or s == ["client+server on CPU 1"] for s in runs["cpus_shared"])
    # 100 Mbit/s x 40 ms + 0.5 MB = 1 MB in flight: twice that, but never below what the
    # namespace had (this kernel: tcp_rmem max 32 MiB, tcp_wmem max 4 MiB)
    assert all(
        b["path_bytes"] == 1_000_000 and b["tcp_rmem_max"] >= 2_000_000 and b["tcp_wmem_max"] >= 2_000_000
        for b in runs["host_buffers"]
    )


@needs_testbed("linkem")
def test_a_linkem_held_back_by_a_cpu_quota_flags_the_run(tmp_path: Path):
    """linkem that cannot run when packets are due is the bottleneck itself: the audit says
    so (a quota of 2% of a core on its group, a 50 Mbit/s flow through it)."""
    from longlook.core.audit import RunAudit
    from longlook.core.spec import Fidelity
    from longlook.linkprofile import LinkProfile

    link = LinkProfile(rate_mbit=50, delay_ms=5, buffer_bytes=200_000)
    with Testbed(link) as tb:
        tb.cgroups["router"].apply(cpu.CpuBudget(quota=0.02, cores=1))
        tb.reconfigure(link)  # linkem restarts inside the budget
        server = tb.popen("server", ["iperf3", "-s", "-1"], as_party=False)
        audit = RunAudit(tb, None, Fidelity())
        audit.begin()
        tb.run("client", ["iperf3", "-c", Testbed.server_addr, "-t", "2"], check=False, timeout=30)
        a = audit.end()
        server.wait(10)
    assert a.flagged and any("linkem out of CPU" in r for r in a.reasons), a.reasons
    assert a.router_throttled_s > 0.04, a
