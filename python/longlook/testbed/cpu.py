"""CPU of each party: client budgets (Kakhki §5: QUIC's gains shrank on phones whose CPUs could
not keep up), and every party's CPU time (Langley §6.7: a QUIC server's CPU per byte).

Each testbed has one cgroup per party (`longlook/ll-<id>-client|server|router`): the client's
processes, the servers', linkem. Each measures its CPU time per run; any may be pinned to
CPUs (`[testbed] cpus`). A slower device is emulated by a CFS bandwidth quota on the client's
group: `quota` = CPU time per period as a share of one core (0.2 = a fifth of a core),
`cores` = how many CPUs those processes may run on (cpuset).

    budget = CpuBudget.parse("phone-2014")           # or {quota = 0.2, cores = 1}
    group = PartyCgroup("ab12cd", "client"); group.create()
    group.apply(budget)                               # before a cell's runs
    argv = group.wrap(argv)                           # the process joins before it execs
    before = group.usage(); ...; after = group.usage(); after - before
    group.remove()                                    # testbed teardown; `longlook clean`

cgroup v1 (this kernel: `cpu`, `cpuacct` and `cpuset` mounted separately under
/sys/fs/cgroup) or v2 (`cpu.max`, `cpuset.cpus`, `cpu.stat`) where /sys/fs/cgroup is cgroup2.
With no budget (unlimited) and no pinning a v1 party joins only `cpuacct`, which measures without
scheduling it as a group, so an unlimited run is scheduled exactly as before.
"""

from __future__ import annotations

import os
import re
import shlex
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict, StrictInt, model_validator

from .host import TestbedError

ROOT = Path(os.environ.get("LONGLOOK_CGROUP_ROOT", "/sys/fs/cgroup"))
PARENT = "longlook"  # every testbed's group lives under this one, so leftovers are easy to find

# A CFS period short enough that a throttled client waits a few ms, not 80 ms in a row: a
# slow CPU is slow evenly, while a 100 ms period at 20% would freeze the client for 80 ms,
# longer than the RTTs measured. The kernel's smallest quota is 1 ms, so a small share
# stretches the period (quota 0.05 -> 20 ms).
PERIOD_US = 10_000
MIN_QUOTA_US = 1_000
MIN_QUOTA = 0.01  # 1 ms of 100 ms, the longest period used

# Named device profiles: (quota as a share of one core of this machine, cores). This
# machine's vCPU (AMD EPYC) runs about 4x a 2014 phone core per thread. The paper's clients
# (Kakhki §3.1): a desktop Intel Core i5 3.3 GHz quad-core, a Nexus 6 (late 2014, 2.7 GHz
# Krait quad-core) and a MotoG (2013, 1.2 GHz Cortex-A7 quad-core). Single-thread speed
# relative to this vCPU, rounded from Geekbench-4-class single-core scores (vCPU ~4000, i5
# ~3800, Snapdragon 835 ~1900, Nexus 6 ~1000, MotoG ~350): approximations, an order of
# magnitude right, not a calibration. Phones get one core: a QUIC client's packet work
# (decrypt, ACK, reassembly) runs on one thread, which a share of one core slows as a slower
# core would; more cores at the same share would let that thread run at full speed.
PROFILES: dict[str, tuple[float, int] | None] = {
    "unlimited": None,  # no budget: the whole machine, as every run without client_cpu
    "desktop": (2.0, 2),  # the paper's quad-core i5 is more than this 2-vCPU machine: all of it
    "phone-2017": (0.5, 1),  # a 2017 flagship (Snapdragon 835) core, about half a vCPU
    "phone-2014": (0.25, 1),  # Nexus 6
    "phone-2013": (0.1, 1),  # MotoG
}
UNLIMITED = "unlimited"


class CpuBudget(BaseModel):
    """The client's CPU: a profile name, or a custom `{quota = 0.2, cores = 1, name = "..."}`.
    `quota` None = unlimited."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str | None = None
    quota: float | None = None
    cores: int = 1

    @model_validator(mode="before")
    @classmethod
    def _profile(cls, v: Any) -> Any:
        if isinstance(v, str):
            if v not in PROFILES:
                raise ValueError(
                    f'unknown profile "{v}"; known: {", ".join(PROFILES)}, or a table {{quota = 0.2, cores = 1}}'
                )
            limits = PROFILES[v]
            return {"name": v} if limits is None else {"name": v, "quota": limits[0], "cores": limits[1]}
        if isinstance(v, dict):
            if v.get("name") in PROFILES and not _is_profile(v["name"], v.get("quota"), v.get("cores", 1)):
                raise ValueError(
                    f'name "{v["name"]}" is a profile: write client_cpu = "{v["name"]}", '
                    f"or name a custom budget otherwise"
                )
            if "quota" not in v and v.get("name") != UNLIMITED:
                raise ValueError(
                    'a custom budget needs quota (a share of one core, e.g. 0.2); for no limit use "unlimited"'
                )
        return v

    @model_validator(mode="after")
    def _sane(self) -> "CpuBudget":
        if self.name is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.+-]*", self.name):
            raise ValueError(f'name "{self.name}": use letters, digits and _ . + -')
        if self.cores < 1:
            raise ValueError(f"cores {self.cores}: a client needs at least one core")
        if self.quota is None:
            return self
        if not self.quota > 0:
            raise ValueError(
                f'quota {self.quota:g}: must be > 0 (a share of one core, e.g. 0.2 = 20%); for no limit use "unlimited"'
            )
        if self.quota < MIN_QUOTA:
            raise ValueError(
                f"quota {self.quota:g}: the kernel's CFS quota is at least 1 ms of "
                f"a 100 ms period, so at least {MIN_QUOTA:g}"
            )
        if self.quota > self.cores:
            raise ValueError(
                f"quota {self.quota:g} is more than its {self.cores} core(s) can run "
                f"(a quota is CPU time per period as a share of one core): give "
                f"cores = {int(-(-self.quota // 1))} or a smaller quota"
            )
        return self

    @property
    def unlimited(self) -> bool:
        return self.quota is None

    @property
    def label(self) -> str:
        """Its name in cell ids and the report: the profile, or `q0.2x1` for a custom one."""
        if self.name:
            return self.name
        return UNLIMITED if self.unlimited else f"q{self.quota:g}x{self.cores}"

    def period_us(self) -> int:
        if self.quota is None:
            return PERIOD_US
        return max(PERIOD_US, int(-(-MIN_QUOTA_US // self.quota)))

    def quota_us(self) -> int | None:
        return None if self.quota is None else int(round(self.quota * self.period_us()))

    @classmethod
    def parse(cls, v: Any) -> "CpuBudget":
        return cls.model_validate(v)


def _is_profile(name: str, quota: float | None, cores: int) -> bool:
    """A table that is a profile written out (a budget stored and read back)."""
    limits = PROFILES[name]
    return quota is None if limits is None else (quota, cores) == limits


def machine_cpus() -> list[int]:
    """The CPUs this process may run on, in order."""
    return sorted(os.sched_getaffinity(0))


def check_fits(budget: CpuBudget) -> None:
    """A budget asking for more cores than this machine has is refused before any run."""
    have = len(machine_cpus())
    if budget.quota is not None and budget.cores > have:
        raise TestbedError(
            f"client_cpu {budget.label}: {budget.cores} cores, this machine has {have}",
            hint="scale the profile to this machine: fewer cores, the same quota per core",
        )


@dataclass(frozen=True)
class CpuUsage:
    """A cgroup's cumulative counters (ns); subtract two for an interval."""

    usage_ns: int = 0
    user_ns: int | None = None
    system_ns: int | None = None
    periods: int = 0
    throttled_periods: int = 0
    throttled_ns: int = 0

    def __sub__(self, other: "CpuUsage") -> "CpuUsage":
        sub = lambda a, b: None if a is None or b is None else a - b  # noqa: E731
        return CpuUsage(
            self.usage_ns - other.usage_ns,
            sub(self.user_ns, other.user_ns),
            sub(self.system_ns, other.system_ns),
            self.periods - other.periods,
            self.throttled_periods - other.throttled_periods,
            self.throttled_ns - other.throttled_ns,
        )

    @property
    def cpu_s(self) -> float:
        return self.usage_ns / 1e9


def cgroup_version() -> int | None:
    """2 where /sys/fs/cgroup is cgroup2 with the cpu controller, 1 where cgroup v1 mounts
    cpu and cpuacct, None where neither is usable (a container without cgroups)."""
    if (ROOT / "cgroup.controllers").is_file():
        return 2 if "cpu" in (ROOT / "cgroup.controllers").read_text().split() else None
    if (ROOT / "cpu" / "cpu.cfs_quota_us").is_file() and (ROOT / "cpuacct" / "cpuacct.usage").is_file():
        return 1
    return None


def _write(path: Path, value: str) -> None:
    try:
        path.write_text(value)
    except OSError as e:
        raise TestbedError(
            f"cannot write {value!r} to {path}: {e.strerror}",
            hint="client CPU budgets need root and the cgroup cpu controller",
        ) from None


def _stat(path: Path) -> dict[str, int]:
    try:
        return {k: int(v) for k, v in (line.split() for line in path.read_text().splitlines() if line.strip())}
    except (OSError, ValueError):
        return {}


PARTIES = ("client", "server", "router")


class PartyCgroup:
    """One party's cgroup of one testbed (`ll-<id>-client|server|router`): the client's
    processes (under its budget), the servers', linkem. Each measures its CPU time; any may
    be pinned to CPUs (`[testbed] cpus`)."""

    def __init__(self, testbed_id: str, party: str = "client"):
        if party not in PARTIES:
            raise ValueError(f"party must be one of {', '.join(PARTIES)}, not {party!r}")
        self.party = party
        self.name = f"ll-{testbed_id}-{party}"
        self.version = cgroup_version()
        self.budget: CpuBudget = CpuBudget.parse(UNLIMITED)
        self.cpus: tuple[int, ...] | None = None  # pinned; None = every CPU the budget allows
        self.created = False

    # ---- where things are

    def _dir(self, controller: str) -> Path:
        base = ROOT if self.version == 2 else ROOT / controller
        return base / PARENT / self.name

    def _dirs(self) -> list[Path]:
        if self.version == 2:
            return [self._dir("")]
        return [self._dir(c) for c in ("cpu", "cpuacct", "cpuset") if (ROOT / c).is_dir()]

    @property
    def available(self) -> bool:
        return self.version is not None

    # ---- life

    def create(self) -> None:
        if not self.available:
            return
        if self.version == 2:
            _write_quiet(ROOT / "cgroup.subtree_control", "+cpu +cpuset")
            (ROOT / PARENT).mkdir(exist_ok=True)
            _write_quiet(ROOT / PARENT / "cgroup.subtree_control", "+cpu +cpuset")
            self._dir("").mkdir(exist_ok=True)
        else:
            for d in self._dirs():
                d.mkdir(parents=True, exist_ok=True)
            cpuset = ROOT / "cpuset"
            if cpuset.is_dir():  # v1 cpuset groups start empty: give them the machine's CPUs
                for d in (cpuset / PARENT, self._dir("cpuset")):
                    for f in ("cpuset.cpus", "cpuset.mems"):
                        if not (d / f).read_text().strip():
                            _write(d / f, (cpuset / f).read_text().strip())
        self.created = True
        self.apply(self.budget)

    def pin(self, cpus: list[int] | tuple[int, ...] | None) -> None:
        """Run this party's processes started from now on on these CPUs only (None: all)."""
        if cpus is not None:
            unknown = sorted(set(cpus) - set(machine_cpus()))
            if unknown or not cpus:
                raise TestbedError(
                    f"[testbed] cpus.{self.party} = {list(cpus)}: this machine has CPUs {machine_cpus()}",
                    hint="pin each party to CPUs this machine has",
                )
        self.cpus = tuple(sorted(set(cpus))) if cpus is not None else None
        self.apply(self.budget)

    def apply(self, budget: CpuBudget | None) -> None:
        """Set the budget of the processes started from now on (between cells)."""
        budget = budget or CpuBudget.parse(UNLIMITED)
        if not budget.unlimited:
            if not self.available:
                raise TestbedError(
                    f"client_cpu {budget.label}: this host has no usable cgroup cpu controller",
                    hint="mount cgroup v1 cpu,cpuacct or cgroup2 with the cpu controller",
                )
            check_fits(budget)
        self.budget = budget
        if not self.created:
            return
        cpus = list(self.cpus) if self.cpus is not None else machine_cpus()
        cpu_list = ",".join(map(str, cpus if budget.unlimited else cpus[-budget.cores :]))
        quota = budget.quota_us()
        if self.version == 2:
            d = self._dir("")
            if budget.unlimited and not (d / "cpu.max").exists():
                return  # measured through cpu.stat, which every v2 group has
            _write(d / "cpu.max", f"{quota if quota else 'max'} {budget.period_us()}")
            if (d / "cpuset.cpus").exists():
                _write(d / "cpuset.cpus", cpu_list)
        else:
            d = self._dir("cpu")
            _write(d / "cpu.cfs_quota_us", "-1")  # the period may only change with no quota
            _write(d / "cpu.cfs_period_us", str(budget.period_us()))
            _write(d / "cpu.cfs_quota_us", str(quota if quota else -1))
            if (ROOT / "cpuset").is_dir():
                _write(self._dir("cpuset") / "cpuset.cpus", cpu_list)

    def remove(self) -> None:
        """Delete the group (its processes must have ended: the testbed ends them first)."""
        for d in self._dirs():
            _rmdir(d)
        self.created = False

    # ---- joining and measuring

    def procs_files(self) -> list[Path]:
        """The cgroup.procs a client process writes its pid into for the current budget."""
        if not self.created:
            return []
        if self.version == 2:
            return [self._dir("") / "cgroup.procs"]
        if self.budget.unlimited:  # measured, not scheduled as a group (pinned: its cpuset too)
            pinned = [self._dir("cpuset")] if self.cpus is not None and (ROOT / "cpuset").is_dir() else []
            return [d / "cgroup.procs" for d in (self._dir("cpuacct"), *pinned)]
        return [d / "cgroup.procs" for d in self._dirs()]

    def wrap(self, argv: list[str]) -> list[str]:
        """argv that joins the group and then execs argv (same pid, same stdio), so every
        child the client starts (Chromium's processes) is in it too. Fails closed: a client
        that could not join does not run."""
        files = self.procs_files()
        if not files:
            return argv
        joins = " && ".join(f"echo $$ > {shlex.quote(str(f))}" for f in files)
        script = (
            f'{{ {joins}; }} 2>/dev/null || {{ echo "longlook: could not join the {self.party} CPU '
            f'cgroup {self.name}" >&2; exit 125; }}; exec "$@"'
        )
        return ["/bin/sh", "-c", script, f"longlook-{self.party}-cpu", *map(str, argv)]

    def populated(self) -> bool | None:
        """Whether any process is in the group now (None: not measurable here). A process
        leaves the list as it exits, before its parent learns of it."""
        if not self.created:
            return None
        procs = (self._dir("") if self.version == 2 else self._dir("cpuacct")) / "cgroup.procs"
        try:
            with open(procs, "rb") as f:
                return bool(f.read(1))
        except OSError:
            return None

    def usage(self) -> CpuUsage | None:
        if not self.created:
            return None
        if self.version == 2:
            s = _stat(self._dir("") / "cpu.stat")
            if "usage_usec" not in s:
                return None
            return CpuUsage(
                s["usage_usec"] * 1000,
                s.get("user_usec", 0) * 1000,
                s.get("system_usec", 0) * 1000,
                s.get("nr_periods", 0),
                s.get("nr_throttled", 0),
                s.get("throttled_usec", 0) * 1000,
            )
        acct = self._dir("cpuacct")
        try:
            usage = int((acct / "cpuacct.usage").read_text())
        except (OSError, ValueError):
            return None
        user = _int_or_none(acct / "cpuacct.usage_user")
        system = _int_or_none(acct / "cpuacct.usage_sys")
        s = _stat(self._dir("cpu") / "cpu.stat")
        return CpuUsage(
            usage, user, system, s.get("nr_periods", 0), s.get("nr_throttled", 0), s.get("throttled_time", 0)
        )


def _int_or_none(path: Path) -> int | None:
    try:
        return int(path.read_text())
    except (OSError, ValueError):
        return None


def _write_quiet(path: Path, value: str) -> None:
    try:
        path.write_text(value)
    except OSError:
        pass  # already enabled, or not ours to enable: creating the group will tell


def _rmdir(d: Path, wait_s: float = 2.0) -> None:
    """rmdir a cgroup; the kernel refuses while an exiting process is still counted in it."""
    deadline = time.monotonic() + wait_s
    while d.exists():
        try:
            d.rmdir()
            return
        except OSError:
            if time.monotonic() > deadline:
                return  # `longlook clean` tries again
            time.sleep(0.05)


def testbed_groups() -> list[tuple[str, Path]]:
    """(testbed id, group directory) of every testbed's party groups, in every hierarchy."""
    bases = [ROOT] if cgroup_version() == 2 else [ROOT / c for c in ("cpu", "cpuacct", "cpuset")]
    found = []
    for base in bases:
        parent = base / PARENT
        if parent.is_dir():
            for d in sorted(parent.glob("ll-*-*")):
                tb_id, _, party = d.name.removeprefix("ll-").rpartition("-")
                if d.is_dir() and party in PARTIES:
                    found.append((tb_id, d))
    return found


def remove_leftovers(ids: Callable[[str], bool]) -> list[str]:
    """Remove the party groups of the testbeds `ids` selects (gone ones: `longlook clean`);
    processes still in them are ended first (a process of a dead testbed is ours)."""
    from .processes import terminate

    removed = []
    for tb_id, d in testbed_groups():
        if not ids(tb_id):
            continue
        procs = d / "cgroup.procs"
        try:
            pids = [int(p) for p in procs.read_text().split()]
        except (OSError, ValueError):
            pids = []
        if pids:
            terminate(pids, grace_s=1.0)
        _rmdir(d)
        if not d.exists():
            removed.append(str(d))
    return removed


class CpuPinning(BaseModel):
    """`[testbed] cpus = {router = [0], server = [1], client = [1]}`: the CPUs each party's
    processes may run on; a party not named runs anywhere. Recorded with every run, and the
    audit names the parties that shared a CPU."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    # strict: `true` is no CPU number
    client: tuple[StrictInt, ...] | None = None
    server: tuple[StrictInt, ...] | None = None
    router: tuple[StrictInt, ...] | None = None

    @model_validator(mode="after")
    def _cpus(self) -> "CpuPinning":
        for party in PARTIES:
            cpus = getattr(self, party)
            if cpus is None:
                continue
            if not cpus or any(c < 0 for c in cpus) or len(set(cpus)) != len(cpus):
                raise ValueError(f"{party} = {list(cpus)}: a non-empty list of distinct CPU numbers (0, 1, ...)")
            usable = sorted(os.sched_getaffinity(0))
            if any(c not in usable for c in cpus):
                raise ValueError(f"{party} = {list(cpus)}: this machine's CPUs are {usable}")
        return self

    def as_dict(self) -> dict[str, list[int]]:
        return {p: list(getattr(self, p)) for p in PARTIES if getattr(self, p) is not None}

    def shared(self) -> list[str]:
        """Parties that may run on one CPU, e.g. `client+server on CPU 1` (unpinned parties
        share every CPU, which the report says without listing)."""
        pinned = self.as_dict()
        out = []
        for cpu in sorted({c for cpus in pinned.values() for c in cpus}):
            on = [p for p in PARTIES if cpu in pinned.get(p, ())]
            if len(on) > 1:
                out.append(f"{'+'.join(on)} on CPU {cpu}")
        return out
