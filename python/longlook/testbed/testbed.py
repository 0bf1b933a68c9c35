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
from .host import TestbedError, hold_cpu_wakeup_latency, preflight, tool
from .linkem import Linkem
from .processes import terminate

Role = str  # "client" | "router" | "server"

_open_testbeds: "weakref.WeakSet[Testbed]" = weakref.WeakSet()


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

    def __init__(self, profile: LinkProfile | None, id: str | None = None,
                 workdir: Path | str | None = None, *, base_dir: Path | None = None,
                 seed: int | None = None, rt_priority: int | None = None,
                 flow_log: bool = False, ready_timeout_s: float = 10.0):
        self.id = id or secrets.token_hex(3)
        if not re.fullmatch(r"[A-Za-z0-9_]{1,24}", self.id):
            raise TestbedError(f"testbed id {self.id!r}: use 1-24 letters, digits or _",
                               hint="it becomes part of the namespace names ll-<id>-client etc.")
        self.ns = topology.namespace_names(self.id)
        self.profile = profile
        self.base_dir = Path(base_dir) if base_dir else Path.cwd()
        self._own_workdir = workdir is None
        self.workdir = Path(workdir) if workdir else None
        self._linkem_options = dict(seed=seed, rt_priority=rt_priority, flow_log=flow_log,
                                    ready_timeout_s=ready_timeout_s)
        self.linkem: Linkem | None = None
        self._record: ownership.Record | None = None
        self._children: list[subprocess.Popen] = []
        self._previous_handlers: dict[int, object] = {}
        self._lock = threading.Lock()
        self._open = False
        self._cpu_latency_fd: int | None = None

    # ---- lifecycle -------------------------------------------------------------------

    def __enter__(self) -> "Testbed":
        self.open()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def open(self) -> "Testbed":
        preflight()
        cleanup.clean(orphans=False)  # recorded leftovers of crashed runs (owner gone)
        if set(self.ns.values()) & set(topology.existing_namespaces()):
            raise TestbedError(f"a testbed with id '{self.id}' is already running",
                               hint="choose another id, or stop that run")
        if self.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix=f"longlook-{self.id}-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._record = ownership.new_record(self.id, list(self.ns.values()), self.workdir)
        self._record.save()  # before creating anything, so a crash mid-setup is cleanable
        self._open = True
        self._cpu_latency_fd = hold_cpu_wakeup_latency(0)
        _open_testbeds.add(self)
        self._install_signal_handlers()
        try:
            topology.create(self.ns)
            if self.profile is not None:
                topology.add_nfqueue_rules(self.ns["router"])
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
            if self.linkem is not None:
                self.linkem.stop()
            cleanup.teardown_namespaces(list(self.ns.values()))
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
        config = self.workdir / "link.toml"
        config.write_text(profile.to_linkem_toml(self.base_dir))
        self.linkem = Linkem(self.ns["router"], config, self.workdir, profile_name=profile.name,
                             **self._linkem_options)
        self.linkem.start()
        self._record.linkem_pid = self.linkem.pid
        self._record.linkem_started = self.linkem.started
        self._record.save()

    def reconfigure(self, profile: LinkProfile, base_dir: Path | None = None) -> None:
        """Restart linkem with another profile (between grid cells; the path drops packets
        while no linkem is bound, by design)."""
        self._require_open()
        if self.linkem is None:
            raise TestbedError("this testbed was built without emulation (profile=None)")
        if base_dir is not None:
            self.base_dir = Path(base_dir)
        self.linkem.stop()
        self.profile = profile
        self._start_linkem(profile)

    def check(self) -> None:
        """Raise if the testbed is not usable (closed, or linkem died)."""
        self._require_open()
        if self.linkem is not None:
            self.linkem.check()

    def linkem_stats(self) -> dict:
        """linkem's latest stats document (docs/interfaces.md, "Stats JSON")."""
        self._require_open()
        if self.linkem is None:
            raise TestbedError("this testbed was built without emulation (profile=None)")
        return self.linkem.stats()

    # ---- running things inside -------------------------------------------------------

    def exec_argv(self, role: Role, argv: list[str]) -> list[str]:
        if role not in self.ns:
            raise ValueError(f"role must be one of {', '.join(self.ns)}, not {role!r}")
        return [tool("ip"), "netns", "exec", self.ns[role], *map(str, argv)]

    def run(self, role: Role, argv: list[str], *, timeout: float | None = None,
            check: bool = True, **kwargs) -> subprocess.CompletedProcess:
        """Run a command in a namespace to completion (output captured as text by default).
        Checks linkem afterwards: a result obtained over a dead link is not returned."""
        self._require_open()
        kwargs.setdefault("capture_output", True)
        kwargs.setdefault("text", True)
        try:
            p = subprocess.run(self.exec_argv(role, argv), timeout=timeout, **kwargs)
        except subprocess.TimeoutExpired:
            self.check()
            raise TestbedError(f"`{' '.join(map(str, argv))}` in {role} did not finish in {timeout} s") from None
        self.check()
        if check and p.returncode != 0:
            err = (p.stderr or "").strip() if isinstance(p.stderr, str) else ""
            raise TestbedError(f"`{' '.join(map(str, argv))}` in {role} failed (exit {p.returncode}): {err}")
        return p

    def popen(self, role: Role, argv: list[str], **kwargs) -> subprocess.Popen:
        """Start a command in a namespace; it is ended at teardown if still running."""
        self._require_open()
        kwargs.setdefault("stdin", subprocess.DEVNULL)
        p = subprocess.Popen(self.exec_argv(role, argv), **kwargs)
        self._children.append(p)
        return p

    def _require_open(self) -> None:
        if not self._open:
            raise TestbedError("the testbed is closed")
