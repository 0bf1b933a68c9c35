"""Testbed: client, router and server namespaces with linkem emulating the path between them.

    with Testbed(profile) as tb:
        tb.run("client", ["ping", "-c1", SERVER_ADDR])
        tb.reconfigure(other_profile)     # between grid cells
        tb.linkem_stats()

Everything is removed on every way out: normal exit, exceptions, SIGINT, SIGTERM, atexit.
A `kill -9` of the owner leaves namespaces behind; `longlook clean`, or the next Testbed,
removes them (they are recorded in ownership.RUNTIME_DIR).
"""

from __future__ import annotations

import atexit
import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import threading
import weakref
from pathlib import Path

from ..errors import Terminated
from ..linkprofile import LinkProfile
from . import cleanup, ownership, topology
from .buffers import HostBuffers, host_buffers
from .cpu import PARTIES, CpuBudget, CpuPinning, CpuUsage, PartyCgroup
from .host import TestbedError, cpu_wakeup_latency_us, hold_cpu_wakeup_latency, linkem_datapath, preflight, tool
from .linkem import Linkem
from .processes import terminate
from .tracefs import remove_stale_instances

Role = str  # "client" | "router" | "server"

_open_testbeds: "weakref.WeakSet[Testbed]" = weakref.WeakSet()


def merged_stats(a: dict, b: dict) -> dict:
    """Both segments' linkem stats as one document for the run audit: segment A's directions
    as they are, B's as `b-up`/`b-down`; written no later than the older of the two."""
    out = dict(a)
    out["directions"] = {**(a.get("directions") or {}), **{f"b-{k}": v for k, v in (b.get("directions") or {}).items()}}
    out["flows"] = [*(a.get("flows") or []), *({**f, "segment": "b"} for f in b.get("flows") or [])]
    if a.get("mono_ms") is not None and b.get("mono_ms") is not None:
        out["mono_ms"] = min(a["mono_ms"], b["mono_ms"])
    # covers every release up to the older of the two (absent unless both say: core.audit)
    out.pop("covers_mono_ms", None)
    if a.get("covers_mono_ms") is not None and b.get("covers_mono_ms") is not None:
        out["covers_mono_ms"] = min(a["covers_mono_ms"], b["covers_mono_ms"])
    return out


@atexit.register
def _close_all_at_exit() -> None:
    for tb in list(_open_testbeds):
        tb.close()


class Testbed:
    """Three namespaces `ll-<id>-client|router|server` joined through an emulating router.

    `profile=None` builds the topology with plain kernel forwarding and no linkem (for
    debugging the topology itself; never for measurements).
    """

    __test__ = False  # not a pytest test class

    client_addr = topology.CLIENT_ADDR
    server_addr = topology.SERVER_ADDR

    def __init__(
        self,
        profile: LinkProfile | None,
        id: str | None = None,
        workdir: Path | str | None = None,
        *,
        base_dir: Path | None = None,
        seed: int | None = None,
        rt_priority: int | None = None,
        flow_log: bool = False,
        flow_log_interval_ms: int | None = None,
        ready_timeout_s: float = 10.0,
        cpus: CpuPinning | None = None,
        datapath: str | None = None,
    ):
        self.id = id or secrets.token_hex(3)
        if not re.fullmatch(r"[A-Za-z0-9_]{1,24}", self.id):
            raise TestbedError(
                f"testbed id {self.id!r}: use 1-24 letters, digits or _",
                hint="it becomes part of the namespace names ll-<id>-client etc.",
            )
        # a profile of two segments (testbed/segments.py) needs the proxy topology
        self.ns = topology.namespace_names(self.id, proxy=bool(profile and profile.segments))
        self.profile = profile
        self.base_dir = Path(base_dir) if base_dir else Path.cwd()
        self._own_workdir = workdir is None
        self.workdir = Path(workdir) if workdir else None
        self._linkem_options = dict(
            seed=seed, rt_priority=rt_priority, flow_log=flow_log, ready_timeout_s=ready_timeout_s
        )
        if flow_log_interval_ms is not None:
            self._linkem_options["flow_log_interval_ms"] = flow_log_interval_ms
        self.linkem: Linkem | None = None
        self.linkem_b: Linkem | None = None  # segment B's, in router2 (proxy topology)
        self.host_buffers: HostBuffers = host_buffers(None)  # sized to each link (testbed/buffers.py)
        self._tcp_floors: tuple[int, int] | None = None  # the namespaces' own tcp_rmem/wmem maxima
        self._record: ownership.Record | None = None
        self._children: list[subprocess.Popen] = []
        self._previous_handlers: dict[int, object] = {}
        self._lock = threading.Lock()
        self._open = False
        self._cpu_latency_fd: int | None = None
        # each party's processes join its group: the client's budget (client_cpu), every
        # party's CPU time per run, pinning (`[testbed] cpus`)
        self.cgroups = {party: PartyCgroup(self.id, party) for party in PARTIES}
        self.cpus = cpus or CpuPinning()
        # how packets reach linkem: the caller's choice (a bench comparing them), else LONGLOOK_DATAPATH
        self.datapath = linkem_datapath(datapath)

    # ---- lifecycle -------------------------------------------------------------------

    def __enter__(self) -> "Testbed":
        self.open()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def open(self) -> "Testbed":
        preflight()
        # recorded leftovers of crashed runs (owner gone); this process's other open testbeds live on
        cleanup.clean(orphans=False, open_here=frozenset(tb.id for tb in _open_testbeds))
        if set(self.ns.values()) & set(topology.existing_namespaces()):
            raise TestbedError(
                f"a testbed with id '{self.id}' is already running", hint="choose another id, or stop that run"
            )
        if self.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix=f"longlook-{self.id}-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._record = ownership.new_record(self.id, list(self.ns.values()), self.workdir)
        self._record.save()  # before creating anything, so a crash mid-setup is cleanable
        self._open = True
        self._cpu_latency_fd = hold_cpu_wakeup_latency(cpu_wakeup_latency_us())
        _open_testbeds.add(self)
        self._install_signal_handlers()
        try:
            for party, group in self.cgroups.items():
                group.create()
                group.pin(getattr(self.cpus, party))  # before linkem and servers start
            topology.create(self.ns)
            if self.profile is not None:
                for router in ("router", "router2"):
                    if router not in self.ns:
                        continue
                    if self.datapath == "afpacket":
                        topology.add_afpacket_rules(
                            self.ns[router], tuple(i for i, _ in topology.AFPACKET_PORTS[router])
                        )
                    else:
                        topology.add_nfqueue_rules(self.ns[router], topology.NFQUEUES[router])
                self._start_linkem(self.profile)
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        """Idempotent teardown: children, linkem (final stats), every process in the
        namespaces, the namespaces, the record, and the workdir if we made it."""
        with self._lock:
            if not self._open:
                return
            self._open = False
        self._shield_signals()  # a second Ctrl-C must not cut the teardown short
        try:
            terminate([c.pid for c in self._children if c.poll() is None], grace_s=1.0)
            for c in self._children:
                try:
                    c.wait(2)
                except subprocess.TimeoutExpired:
                    pass
            for linkem in self._linkems():
                linkem.stop()
            cleanup.teardown_namespaces(list(self.ns.values()))
            for group in self.cgroups.values():
                group.remove()  # their processes ended with the namespaces
            # an endpoint killed (by the teardown's SIGKILL, or a fault) cannot remove its
            # tracefs instance; only instances of processes that are gone are touched
            remove_stale_instances()
        finally:
            if self._record is not None:
                self._record.remove()
            if self._own_workdir and self.workdir is not None:
                shutil.rmtree(self.workdir, ignore_errors=True)
            if self._cpu_latency_fd is not None:
                os.close(self._cpu_latency_fd)
                self._cpu_latency_fd = None
            self._restore_signal_handlers()
            _open_testbeds.discard(self)

    def _install_signal_handlers(self) -> None:
        """SIGTERM/SIGHUP become SystemExit so `with` blocks unwind and close the testbed
        (SIGINT already raises KeyboardInterrupt). Only the main thread may set handlers."""
        if threading.current_thread() is not threading.main_thread():
            return

        def _exit(signum, _frame):
            raise Terminated(signum)

        for sig in (signal.SIGTERM, signal.SIGHUP):
            self._previous_handlers[sig] = signal.signal(sig, _exit)

    def _shield_signals(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            previous = signal.signal(sig, signal.SIG_IGN)
            self._previous_handlers.setdefault(sig, previous)

    def _restore_signal_handlers(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig, handler in self._previous_handlers.items():
            signal.signal(sig, handler)
        self._previous_handlers.clear()

    # ---- the link --------------------------------------------------------------------

    def _start_linkem(self, profile: LinkProfile) -> None:
        if bool(profile.segments) != ("proxy" in self.ns):
            raise TestbedError(
                f"link profile {profile.name!r}: {'has' if profile.segments else 'has no'} "
                f"proxy segments, and this testbed was built {'with' if 'proxy' in self.ns else 'without'} "
                f"the proxy topology",
                hint="every link of one experiment has segments, or none",
            )
        self._size_host_buffers(profile)
        if "proxy" not in self.ns:
            topology.second_client_address(self.ns["client"], present=profile.handover is not None)
        if profile.segments:  # segment A in router, B in router2, each its own linkem
            a, b = profile.segments
            self.linkem = self._linkem("router", a, self.workdir)
            self.linkem_b = self._linkem("router2", b, self.workdir / "segment-b")
            self._record.extra["linkem_b_pid"] = self.linkem_b.pid
        else:
            self.linkem = self._linkem("router", profile, self.workdir)
        self._record.linkem_pid = self.linkem.pid
        self._record.linkem_started = self.linkem.started
        self._record.save()

    def _size_host_buffers(self, profile: LinkProfile) -> None:
        """The ends' TCP buffer limits for this link (between cells, with linkem's restart),
        never below what the namespaces had when the testbed made them."""
        if self._tcp_floors is None:
            self._tcp_floors = topology.tcp_buffer_maxima(self.ns["client"])
        self.host_buffers = host_buffers(profile, self.base_dir, floors=self._tcp_floors)
        for role in ("client", "server", "proxy"):
            if role in self.ns:
                topology.set_sysctls(self.ns[role], self.host_buffers.sysctls())

    def _linkem(self, router: str, profile: LinkProfile, workdir: Path) -> Linkem:
        if profile.handover is not None and self.datapath != "afpacket":
            raise TestbedError(
                f"link {profile.name}: a handover needs linkem's AF_PACKET datapath (this testbed uses "
                f"{self.datapath}): its two paths release packets out of order, which NFQUEUE's batch "
                f"verdicts cannot; drop LONGLOOK_DATAPATH or the scenario's datapath setting"
            )
        if profile.nat is not None and self.datapath != "afpacket":
            raise TestbedError(
                f"link {profile.name}: a NAT needs linkem's AF_PACKET datapath (this testbed uses "
                f"{self.datapath}): on NFQUEUE the kernel forwards its own copy of each packet, "
                f"which linkem cannot rewrite; drop LONGLOOK_DATAPATH or the scenario's datapath setting"
            )
        workdir.mkdir(parents=True, exist_ok=True)
        config = workdir / "link.toml"
        config.write_text(profile.to_linkem_toml(self.base_dir))
        options = dict(self._linkem_options)
        if router == "router2" and options["seed"] is not None:
            # its own random stream: with A's seed, B would drop the packets right after A's
            # drops (the same draw sequence, shifted), pairing losses into single events
            options["seed"] = (options["seed"] + 1) % 2**63
        if router == "router2" and options.get("pcap") is not None:  # B's packets in a file of their own
            options["pcap"] = options["pcap"].with_stem(options["pcap"].stem + "-b")
        linkem = Linkem(
            self.ns[router],
            config,
            workdir,
            profile_name=profile.name,
            queues=tuple(q for _, q in topology.NFQUEUES[router]),
            afpacket=topology.afpacket_ports(self.ns, router) if self.datapath == "afpacket" else None,
            launcher=self.cgroups["router"].wrap,
            **options,
        )
        linkem.start()
        return linkem

    def _linkems(self) -> list[Linkem]:
        return [lk for lk in (self.linkem, self.linkem_b) if lk is not None]

    def set_pcap(self, path: Path | None, copy_bytes: int = 128, max_bytes: int | None = None) -> None:
        """linkem's packet log from its next start (`reconfigure`) on: arrivals of both
        directions at `path`, `copy_bytes` of each packet, at most `max_bytes`; None: none.
        The file is complete once that linkem stopped."""
        self._linkem_options.update(pcap=path, pcap_copy_bytes=copy_bytes, pcap_max_bytes=max_bytes)

    def reconfigure(self, profile: LinkProfile, base_dir: Path | None = None) -> None:
        """Restart linkem with another profile (between grid cells; the path drops packets
        while no linkem is bound, by design)."""
        self._require_open()
        if self.linkem is None:
            raise TestbedError("this testbed was built without emulation (profile=None)")
        if base_dir is not None:
            self.base_dir = Path(base_dir)
        for linkem in self._linkems():
            linkem.stop()
        self.profile = profile
        self._start_linkem(profile)

    def rephase_trace(self, phase_ms: float) -> None:
        """Every linkem of the path meets its traces at `phase_ms` from its next packet on
        (core.trace_phase)."""
        self._require_open()
        for linkem in self._linkems():
            linkem.rephase(phase_ms)

    def check(self) -> None:
        """Raise if the testbed is not usable (closed, or linkem died)."""
        self._require_open()
        for linkem in self._linkems():
            linkem.check()

    def linkem_stats(self) -> dict:
        """linkem's latest stats document (docs/interfaces.md, "Stats JSON")."""
        self._require_open()
        if self.linkem is None:
            raise TestbedError("this testbed was built without emulation (profile=None)")
        if self.linkem_b is None:
            return self.linkem.stats()
        return merged_stats(self.linkem.stats(), self.linkem_b.stats())

    # ---- running things inside -------------------------------------------------------

    def exec_argv(self, role: Role, argv: list[str], *, as_party: bool = True) -> list[str]:
        """argv run in the role's namespace. A client process joins the client's CPU cgroup
        before it execs (its budget, its CPU time), a server process the server's;
        `as_party=False` for the testbed's own tools (link probes), which must neither be
        slowed by a device's budget nor counted as a party's CPU."""
        if role not in self.ns:
            raise ValueError(f"role must be one of {', '.join(self.ns)}, not {role!r}")
        argv = [tool("ip"), "netns", "exec", self.ns[role], *map(str, argv)]
        # joined outside: `ip netns exec` remounts /sys, hiding the cgroup file system
        if role in ("client", "server") and as_party:
            return self.cgroups[role].wrap(argv)
        return argv

    def set_client_cpu(self, budget: CpuBudget | None) -> None:
        """The CPU budget of client processes started from now on (None: unlimited)."""
        self._require_open()
        self.cgroups["client"].apply(budget)

    def cpu_usage(self) -> dict[str, CpuUsage | None]:
        """Cumulative CPU counters of each party (client, server, router = linkem)."""
        return {party: group.usage() for party, group in self.cgroups.items()}

    def client_running(self) -> bool | None:
        """Whether a client process runs now (None: not measurable here); the audit's CPU
        window is the span in which one did (testbed/cpu_span.py)."""
        return self.cgroups["client"].populated()

    def run(
        self,
        role: Role,
        argv: list[str],
        *,
        timeout: float | None = None,
        check: bool = True,
        as_party: bool = True,
        **kwargs,
    ) -> subprocess.CompletedProcess:
        """Run a command in a namespace to completion (output captured as text by default).
        Checks linkem afterwards: a result obtained over a dead link is not returned."""
        self._require_open()
        kwargs.setdefault("capture_output", True)
        kwargs.setdefault("text", True)
        try:
            p = subprocess.run(self.exec_argv(role, argv, as_party=as_party), timeout=timeout, **kwargs)
        except subprocess.TimeoutExpired:
            self.check()
            raise TestbedError(f"`{' '.join(map(str, argv))}` in {role} did not finish in {timeout} s") from None
        self.check()
        if check and p.returncode != 0:
            err = (p.stderr or "").strip() if isinstance(p.stderr, str) else ""
            raise TestbedError(f"`{' '.join(map(str, argv))}` in {role} failed (exit {p.returncode}): {err}")
        return p

    def popen(self, role: Role, argv: list[str], *, as_party: bool = True, **kwargs) -> subprocess.Popen:
        """Start a command in a namespace; it is ended at teardown if still running."""
        self._require_open()
        kwargs.setdefault("stdin", subprocess.DEVNULL)
        p = subprocess.Popen(self.exec_argv(role, argv, as_party=as_party), **kwargs)
        self._children.append(p)
        return p

    def _require_open(self) -> None:
        if not self._open:
            raise TestbedError("the testbed is closed")
