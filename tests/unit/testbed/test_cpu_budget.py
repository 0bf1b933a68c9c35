"""Client CPU budgets without a testbed: profiles, custom budgets, the grid dimension every
kind gets, and one clear error for each kind of bad budget (testbed/cpu.py, core/spec.py).
The budgets on a real testbed: tests/testbed/testbed/test_cpu_testbed.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from longlook.core.spec import parse_scenario
from longlook.testbed.cpu import PROFILES, CpuBudget, CpuUsage, PartyCgroup
from unit.cli.test_bad_input import GOOD, _invoke, _one_clear_error


def _with(line: str) -> str:
    return GOOD.replace("timeout_s = 10", f"timeout_s = 10\n{line}")


def test_profiles_are_a_quota_and_cores_and_a_custom_budget_names_itself():
    assert CpuBudget.parse("phone-2014").quota == 0.25 and CpuBudget.parse("phone-2014").cores == 1
    assert CpuBudget.parse("unlimited").unlimited and CpuBudget.parse("unlimited").quota_us() is None
    custom = CpuBudget.parse({"quota": 0.2, "cores": 1})
    assert custom.label == "q0.2x1" and custom.quota_us() == 2000 and custom.period_us() == 10_000
    assert CpuBudget.parse({"name": "watch", "quota": 0.05}).label == "watch"
    # the kernel's smallest quota is 1 ms: a small share stretches the period instead
    assert CpuBudget.parse({"quota": 0.02}).period_us() == 50_000
    for name, limits in PROFILES.items():  # a stored budget reads back as itself
        b = CpuBudget.parse(name)
        assert CpuBudget.parse(b.model_dump()) == b and (limits is None) == b.unlimited


def test_every_cell_runs_once_per_budget_and_the_budget_is_a_dimension():
    plain = parse_scenario(GOOD)
    swept = parse_scenario(_with('client_cpu = ["unlimited", "phone-2014", {quota = 0.2, cores = 1}]'))
    assert [c.client_cpu for c in plain.cells()] == [None] and "client_cpu" not in plain.cells()[0].dims()
    cells = swept.cells()
    assert [c.dims()["client_cpu"] for c in cells] == ["unlimited", "phone-2014", "q0.2x1"]
    assert [c.id for c in cells] == [f"{plain.cells()[0].id}|cpu={x}" for x in ("unlimited", "phone-2014", "q0.2x1")]
    assert [c.index for c in cells] == [0, 1, 2] and swept.total_runs() == 3 * plain.total_runs()


def test_other_kinds_get_the_dimension_too():
    video = parse_scenario(
        Path("scenarios/kakhki-video.toml")
        .read_text()
        .replace('kind = "video"', 'kind = "video"\nclient_cpu = "phone-2013"'),
        base_dir=Path("scenarios"),
    )
    assert all(c.client_cpu.label == "phone-2013" and c.id.endswith("|cpu=phone-2013") for c in video.cells())


def test_a_client_process_joins_the_group_before_it_execs():
    group = PartyCgroup("t1", "client")
    assert group.wrap(["endpoint", "fetch"]) == ["endpoint", "fetch"]  # no group: as it was
    group.created, group.version = True, 1
    argv = group.wrap(["ip", "netns", "exec", "ll-t1-client", "endpoint", "fetch"])
    assert argv[:2] == ["/bin/sh", "-c"] and argv[-6:] == ["ip", "netns", "exec", "ll-t1-client", "endpoint", "fetch"]
    assert "cpuacct/longlook/ll-t1-client/cgroup.procs" in argv[2] and 'exec "$@"' in argv[2]
    assert "cpu/longlook" not in argv[2]  # unlimited: measured, not scheduled as a group
    assert CpuUsage(300, 200, 100, 5, 2, 70) - CpuUsage(100, 50, 50, 1, 1, 20) == CpuUsage(200, 150, 50, 4, 1, 50)


BAD_BUDGETS = [
    ("quota 0", "client_cpu = {quota = 0, cores = 1}", "quota 0: must be > 0"),
    ("negative quota", "client_cpu = {quota = -0.5}", "must be > 0"),
    ("quota over its cores", "client_cpu = {quota = 1.5, cores = 1}", "more than its 1 core"),
    # one value is named as written (no [0] of the list it becomes); a list's element by index
    ("unknown profile", 'client_cpu = "phone-1999"', 'client_cpu: unknown profile "phone-1999"'),
    ("unknown profile in a list", 'client_cpu = ["desktop", "phone-1999"]', "client_cpu[1]: unknown profile"),
    ("no quota", "client_cpu = {cores = 2}", "needs quota"),
    ("below the kernel's quota", "client_cpu = {quota = 0.001}", "at least 0.01"),
    ("zero cores", "client_cpu = {quota = 0.2, cores = 0}", "at least one core"),
    ("a budget twice", 'client_cpu = ["phone-2014", "phone-2014"]', "each budget once"),
    ("a profile's name on other values", 'client_cpu = {name = "phone-2014", quota = 0.9}', "is a profile"),
]


@pytest.mark.parametrize("case", BAD_BUDGETS, ids=[c[0] for c in BAD_BUDGETS])
def test_a_bad_budget_is_one_clear_error(tmp_path: Path, case):
    _, line, words = case
    path = tmp_path / "s.toml"
    path.write_text(_with(line))
    _one_clear_error(_invoke("run", str(path), "--out", str(tmp_path / "exp")), "client_cpu", words)
    assert not (tmp_path / "exp").exists()


def test_more_cores_than_the_machine_has_is_refused_before_any_run(tmp_path: Path):
    cores = len(os.sched_getaffinity(0)) + 1
    path = tmp_path / "s.toml"
    path.write_text(_with(f"client_cpu = {{quota = 0.5, cores = {cores}}}"))
    _one_clear_error(
        _invoke("run", str(path), "--out", str(tmp_path / "exp")), f"{cores} cores, this machine has {cores - 1}"
    )
    assert not (tmp_path / "exp").exists()


def test_states_select_the_cells_of_one_budget_by_dimension():
    from longlook.analyses.states.runs import select_cells
    from longlook.errors import LonglookError

    dims = {f"c|cpu={b}": {"rate_mbit": r, "client_cpu": b} for b in ("unlimited", "phone-2014") for r in (10.0,)}
    dims["d|cpu=unlimited"] = {"rate_mbit": 50.0, "client_cpu": "unlimited"}
    assert select_cells(dims, "client_cpu=unlimited") == {"c|cpu=unlimited", "d|cpu=unlimited"}
    assert select_cells(dims, "client_cpu=unlimited,rate_mbit=10") == {"c|cpu=unlimited"}
    assert select_cells(dims, "c|cpu=phone-2014") == {"c|cpu=phone-2014"}  # a cell id as before
    with pytest.raises(LonglookError, match="no cell has client_cpu=phone-2013"):
        select_cells(dims, "client_cpu=phone-2013")
    with pytest.raises(LonglookError, match="nor a DIM=VALUE selector"):
        select_cells(dims, "budget=phone-2014")


def test_an_unbudgeted_client_that_kept_the_machine_busy_is_flagged_a_budgeted_one_is_not():
    from longlook.core.audit import Audit, cpu_figures
    from longlook.core.spec import Fidelity

    starved = Audit(client_cpu=None, client_cpu_s=3.6, client_cpu_share=1.8).judge(Fidelity())
    assert starved.flagged and "client CPU-starved" in starved.reasons[0]
    assert not Audit(client_cpu="unlimited", client_cpu_share=1.0).judge(Fidelity()).flagged
    assert not Audit(client_cpu="phone-2014", client_cpu_share=1.9).judge(Fidelity()).flagged  # asked for
    metrics, details = cpu_figures(Audit(client_cpu_s=0.5, client_cpu_share=0.25, client_throttled_s=0.1))
    assert metrics == {"client_cpu_s": 0.5, "client_cpu_share": 0.25}
    assert details == {"client_cpu": "unlimited", "client_throttled_s": 0.1}


def test_each_party_gets_its_cpu_per_mb_and_a_saturated_linkem_flags_the_run():
    from longlook.core.audit import Audit, cpu_figures, party_cpu
    from longlook.core.spec import Fidelity

    a = Audit(delivered_mb=10.0)
    party_cpu(
        a,
        {"client": CpuUsage(0), "server": CpuUsage(0), "router": CpuUsage(0)},
        {"client": CpuUsage(int(1.96e9)), "server": CpuUsage(int(0.5e9)), "router": CpuUsage(int(1e9))},
        2.0,
    )
    metrics, details = cpu_figures(a)
    assert metrics["server_cpu_s"] == 0.5 and metrics["server_cpu_s_per_mb"] == 0.05
    assert metrics["router_cpu_share"] == 0.5 and details["saturated"] == ["client"]
    assert not a.judge(Fidelity()).flagged  # a saturated client is an outcome, not a fault
    busy = Audit(router_cpu_s=1.0, router_cpu_share=0.99, linkem_busiest_thread_share=0.97).judge(Fidelity())
    assert busy.flagged and "linkem out of CPU" in busy.reasons[0]
    held = Audit(router_cpu_s=0.2, router_cpu_share=0.1, router_throttled_s=0.5).judge(Fidelity())
    assert held.flagged and "quota held it back" in held.reasons[0]
