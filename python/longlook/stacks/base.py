"""The contract every QUIC stack adapter fulfils (docs/interfaces.md, "Stacks").

A stack is a folder `stacks/adapters/<name>/` whose `__init__.py` defines a `Stack` subclass, plus one
line in `stacks/registry.py`. The adapter says:

- its `name`, the `versions` it knows how to install (the first is the default) and the
  exact version string recorded with every run (`version_info`);
- how to install it (`install`: idempotent, cached by version under `build_dir`, one folder
  per name and version so two versions live side by side, in `stacks_dir()`) and whether it is installed;
- which congestion controls it offers (`ccs`, our names; the first is its default);
- how to start its server (`server_argv`: the testbed's server address, the files under a
  content root, the paths of `endpoint serve`) and where its qlog goes (a directory given);
- how to run its client for one page load or bulk download (`client_argv`), whose result is
  the fetch JSON of `endpoint fetch` (the adapter may build it afterwards: `finish_fetch`);
  and how that client writes a TLS key log (`with_keylog`), when it can.

The machinery that runs them (namespaces, readiness, logs, statuses) is shared:
`stacks/runner.py`; the pool of an experiment's servers is `stacks/servers.py`. Our own
endpoint is a stack too (`stacks/adapters/ours/`): it keeps this contract and overrides how its
server starts (`start_server`, `server_key`), since it has knobs the others lack.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, ClassVar, Hashable

from ..errors import LonglookError
from ..untrusted import env_dir, path_inside, release_token
from ..qlog.dialects import normalise
from .release_registry import Registry as ReleaseRegistry
from .endpoint import MOVING_CLIENT_CASES, native_migration_flags
from .runner import StackServer, stack_fetcher

OURS = "ours"  # the project's own endpoint: the default server and (as "native") client


def stacks_dir() -> Path:
    """Where stacks are built, one folder per `<name>-<version>`: $LONGLOOK_STACKS_DIR, else
    the user's cache (~/.cache/longlook/stacks), outside the work tree so that a fresh clone
    (CI) reuses what an earlier one built on the same machine."""
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return env_dir("LONGLOOK_STACKS_DIR", Path(cache) / "longlook" / "stacks")


@dataclass(frozen=True)
class ServerCall:
    """How to start a stack's server: argv, extra environment, and whether it prints a line
    starting with `ready` once listening (else the runner waits for its UDP port)."""

    argv: list[str]
    env: dict[str, str]

    prints_ready: bool = False

    def with_flags(self, *flags: str) -> "ServerCall":
        """This call with `flags` added at the end."""
        return ServerCall([*self.argv, *flags], self.env, self.prints_ready)


@dataclass(frozen=True)
class ClientCall:
    """How to run a stack's client for one fetch; it writes the fetch JSON to `out` itself
    unless the adapter builds it in `finish_fetch`."""

    argv: list[str]
    env: dict[str, str]

    def with_flags(self, *flags: str, after: int | None = None) -> "ClientCall":
        """This call with `flags` added at the end, or after its first `after` words (a
        program whose options must come before its positional arguments)."""
        at = len(self.argv) if after is None else after
        return ClientCall([*self.argv[:at], *flags, *self.argv[at:]], self.env)


def serve_args(*, cert, key, root) -> list[str]:
    """What every server of ours in an adapter folder takes after its `serve` (or the
    stack's listen option): the certificate, its key and the folder it serves."""
    return ["--cert", str(cert), "--key", str(key), "--root", str(root)]


def qlog_flag(qlog_dir: Path | None, flag: str = "--qlog-dir") -> tuple[str, ...]:
    """A server's qlog flag, or none when its logs are off (qlog_dir None)."""
    return (flag, str(qlog_dir)) if qlog_dir is not None else ()


def fetch_args(*, url, mode, ca, run_id, out, timeout_s) -> list[str]:
    """What every client of ours in an adapter folder takes after its `fetch`: the URL, the
    CA to trust, page or bulk, the run's id, where its fetch JSON goes, and its time limit."""
    return [
        "--url", url, "--ca", str(ca), "--mode", mode, "--run-id", run_id, "--out", str(out),
        "--timeout-s", str(timeout_s),
    ]  # fmt: skip


# the interop cases a client is asked for (wire/cases): its adapter says how (Stack.case_calls)
CLIENT_CASES = ("resumption", "zerortt", "keyupdate", "chacha20", "v2", *MOVING_CLIENT_CASES)
# the interop cases a server is started for (a server per case: a Retry to every new address
# is no way to serve the other runs); its adapter says how (Stack.server_case_call)
SERVER_CASES = ("retry",)


@dataclass(frozen=True)
class CaseCalls:
    """How to ask a stack's client for one interop case: a first connection where the case
    needs one (a session ticket for resumption and 0-RTT), then the measured one."""

    warmup: ClientCall | None
    measured: ClientCall


class Stack:
    """Base of every stack adapter; one instance per (name, version)."""

    name: ClassVar[str]
    versions: ClassVar[tuple[str, ...]]  # installable versions; the first is the default
    ccs: ClassVar[tuple[str, ...]]  # congestion controls offered; the first is the default
    alpn: ClassVar[str] = "h3"
    # how its qlog files are serialised: "JSON-SEQ" (RFC 7464 records) or "JSON" (one document)
    qlog_format: ClassVar[str] = "JSON-SEQ"
    # False: it writes no qlog at all (msquic: its tracing is LTTng/ETW), so nothing is waited
    # for after a connection closes, and its runs have no sender log to read
    writes_qlog: ClassVar[bool] = True
    # its client sends `x-longlook-run` (our server files a connection under its run by it);
    # example clients that cannot are matched by time (EndpointServer.take_unlabelled)
    sends_run_header: ClassVar[bool] = True
    # a version is "pinned" by the adapter's files (go.mod, Cargo.lock, pip pin, apt)
    any_version: ClassVar[bool] = False  # True: any registry version may be named
    # how its registry spells a release: "v" for Go module tags (v0.65.0), "" for crates.io,
    # PyPI and Debian (0.30.0); `0.65.0` and `v0.65.0` are then one release and one build
    tag_prefix: ClassVar[str] = ""
    # its server serves files from a content root (stacks/content.py writes the workload's)
    serves_files: ClassVar[bool] = True
    # the registry that lists its releases (what `NAME@A..B` sweeps and bisect searches);
    # None: the adapter's files pin its one version
    release_registry: ClassVar[ReleaseRegistry | None] = None
    # Debian packages its build needs beyond Rust and Go, installed before it builds
    apt_needs: ClassVar[tuple[str, ...]] = ()
    # interop cases (wire/cases) it cannot do as a client or as a server here, each with why
    # (from the stack's or its wrapper's source): the matrix shows them apart from failures
    unsupported_as_client: ClassVar[dict[str, str]] = {}
    unsupported_as_server: ClassVar[dict[str, str]] = {}
    # the CLIENT_CASES its client can be asked for (case_calls says how)
    client_cases: ClassVar[tuple[str, ...]] = ()
    # the SERVER_CASES its server can be started for, each by the flags added to its call
    server_case_flags: ClassVar[dict[str, tuple[str, ...]]] = {}
    # asked for connection migration, its client moves to the address its OS's route names
    # then (not to one it is given): the route moves under it as under a client not told to
    migrates_by_route: ClassVar[bool] = False
    # its client's run is read from its qlog (finish_fetch): it writes one whether or not
    # the scenario keeps the clients' logs
    fetch_from_qlog: ClassVar[bool] = False

    def __init__(self, version: str | None = None):
        if version is not None:  # it names a folder and goes into build commands
            version = self.canonical(release_token(version, f"stack {self.name}'s version"))
        self.version = version or self.versions[0]
        if version is not None and not self.any_version and version not in self.versions:
            raise LonglookError(
                f"stack {self.name} has no version {version!r}", hint=f"known: {', '.join(self.versions)}"
            )

    # ---- identity ------------------------------------------------------------------------
    @classmethod
    def canonical(cls, version: str) -> str:
        """A release number as the registry spells it (with or without a leading v), so one
        release has one identity; a name that is no number (a branch, "workspace") as given."""
        number = version[1:] if version[:1] in "vV" and version[1:2].isdigit() else version
        return cls.tag_prefix + number if number[:1].isdigit() else version

    @property
    def spec(self) -> str:
        return f"{self.name}@{self.version}"

    @property
    def build_dir(self) -> Path:
        return path_inside(stacks_dir(), f"{self.name}-{self.version}")

    @property
    def folder(self) -> Path:
        """The adapter's own folder (its scripts and pins)."""
        import importlib

        return Path(importlib.import_module(type(self).__module__).__file__).parent

    @property
    def install_command(self) -> str:
        return f"longlook stacks install {self.spec}"

    def version_info(self) -> str:
        """The exact version recorded with every run."""
        return self.spec

    # ---- build ---------------------------------------------------------------------------
    def installed(self) -> bool:
        raise NotImplementedError

    def install(self) -> None:
        """Install or build; a no-op when already done (idempotent, cached by version)."""
        raise NotImplementedError

    def require(self, cc: str | None = None) -> None:
        """One clear error when the build is missing or `cc` is not offered."""
        if not self.installed():
            raise LonglookError(
                f"stack {self.spec} is not installed (looked in {self.build_dir})",
                hint=f"install it with `{self.install_command}` (or scripts/setup.sh)",
            )
        self.cc(cc)

    def cc(self, cc: str | None) -> str:
        """The congestion control a run uses: `cc`, or the stack's default."""
        if cc is None:
            return self.ccs[0]
        if cc not in self.ccs:
            raise LonglookError(
                f"stack {self.spec} has no congestion control {cc!r}",
                hint=f"{self.name} offers: {', '.join(self.ccs)} (install command: `{self.install_command}`)",
            )
        return cc

    # ---- serving (the pool of stacks/servers.py calls these) ----------------------------------
    def server_key(self, options, cc: str | None, case: str | None = None) -> Hashable:
        """What makes two of its servers different: one server per key and testbed."""
        return (self.spec, self.cc(cc), case)

    def log_folder(self, cc: str | None, port: int) -> str:
        return f"{self.name}-{self.version}-{self.cc(cc)}-{port}"

    def start_server(
        self,
        testbed,
        *,
        port: int,
        options,
        cc: str | None,
        cert_dir: Path,
        log_dir: Path,
        content_root: Path,
        case: str | None = None,
    ) -> StackServer:
        """Its server in the server namespace, ready (`server_argv` through stacks/runner.py),
        started for the interop `case` (one of `server_cases`) when one is named."""
        return StackServer.start(
            testbed,
            self,
            self.cc(cc),
            port=port,
            cert_dir=cert_dir,
            root=content_root,
            log_dir=log_dir,
            case=case,
            logs=getattr(options, "qlog", True),  # the scenario's server_logs (ServerOptions.qlog)
        )

    def fetcher(self, cc: str | None = None, logs: bool = True) -> Callable:
        """A fetch function (the signature of stacks.endpoint.fetch) running its client;
        `logs`: its qlog (the scenario's client_logs)."""
        return stack_fetcher(self, cc, logs=logs)

    # ---- running -------------------------------------------------------------------------
    def server_argv(
        self, *, port: int, cert: Path, key: Path, root: Path, qlog_dir: Path | None, cc: str
    ) -> ServerCall:
        raise NotImplementedError

    def client_argv(
        self, *, url: str, mode: str, ca: Path, run_id: str, out: Path, qlog_dir: Path, timeout_s: float, cc: str
    ) -> ClientCall:
        raise NotImplementedError

    @property
    def server_cases(self) -> tuple[str, ...]:
        return tuple(self.server_case_flags)

    def server_case_call(self, case: str, call: ServerCall) -> ServerCall | None:
        """`call` (its server's) made to show `case` (one of `server_cases`) on every
        connection; None when it cannot be asked."""
        flags = self.server_case_flags.get(case)
        return None if flags is None else call.with_flags(*flags)

    def migration_flags(self, at_ms: float, to: str) -> tuple[str, ...]:
        """What tells its client to move its connection to address `to`, `at_ms` after its
        first packet (a client asked for connection migration): by default our client's
        flags, which the adapters' own clients take too."""
        return tuple(native_migration_flags(at_ms, to))

    def case_calls(self, case: str, call: ClientCall, state_dir: Path) -> CaseCalls | None:
        """`call` (a fetch, key log included) made to ask the client for `case` (one of
        `client_cases`), its session state kept in `state_dir`; None when it cannot be asked."""
        return None

    def with_keylog(self, call: ClientCall, keylog: Path) -> ClientCall | None:
        """`call` made to append its TLS secrets to `keylog` (NSS key log format, for
        Wireshark); None when its client cannot write one (docs/interfaces.md says why)."""
        return None

    def finish_fetch(
        self,
        *,
        url: str,
        mode: str,
        run_id: str,
        out: Path,
        qlog_dir: Path,
        returncode: int,
        stderr: str,
        started_unix_ms: int,
        wall_ms: float,
    ) -> None:
        """After the client exited: write or complete the fetch JSON at `out` (default:
        the client wrote it)."""

    def normalise_qlog(self, path: Path, out: Path) -> None:
        """Write `path` (the stack's own qlog) as a JSON-SEQ qlog in our vocabulary
        (qlog/dialects.py)."""
        normalise(path, out, stack=self.name)
