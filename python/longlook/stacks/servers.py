"""The servers of an experiment on one testbed: one pool for every stack, ours included.

One server per distinct configuration, each on its own port from 4433, kept while the testbed
lives (arms and cells may differ in server options or congestion control); a server that died
is restarted on its port. A kind opens the pool for a testbed with `open_servers` (its
`Kind.session`) and finds it in `RunContext.session["servers"]`. Our endpoint's TCP logs get
the kernel's exact congestion-state transitions when the tracepoint is there.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Hashable, Iterator, Protocol

from ..testbed.tracefs import tcp_tracefs
from .base import OURS
from .content import ensure_content
from .endpoint import ServerOptions
from .registry import resolve

FIRST_PORT = 4433


class Server(Protocol):
    """What the pool hands a kind: a running server of some stack."""

    log_dir: Path

    def alive(self) -> bool: ...

    def stop(self) -> None: ...

    def take_artifacts(
        self, run_id: str, dest: Path, *, unlabelled_since_ms: float | None = None
    ) -> dict[str, str]: ...


@dataclass
class ServerPool:
    testbed: object
    experiment_dir: Path  # certificates, server logs and served files live under it
    tracefs: Path | None = None
    by_key: dict[Hashable, tuple[int, Server]] = field(default_factory=dict)

    @property
    def cert_dir(self) -> Path:
        return self.experiment_dir / "cert"

    @property
    def log_root(self) -> Path:
        return self.experiment_dir / "server-logs"

    @property
    def content_root(self) -> Path:
        return self.experiment_dir / "stack-content"

    def get(
        self,
        spec: str = OURS,
        options: ServerOptions | None = None,
        cc: str | None = None,
        workload=None,
        case: str | None = None,
    ) -> tuple[int, Server]:
        """The server of stack `spec`: ours with `options`, another with congestion control
        `cc`, either started for the interop `case` (stacks.base.SERVER_CASES) when one is
        named; a stack that serves files gets the `workload`'s written under content_root."""
        stack = resolve(spec)
        if options is not None and self.tracefs:
            options = replace(options, tcp_tracefs=str(self.tracefs))
        buffers = getattr(self.testbed, "host_buffers", None)
        if options is not None and buffers is not None:
            # sized to the current link: a server of a smaller link's size is restarted
            options = replace(options, udp_buffer=buffers.udp_bytes)
        if workload is not None and stack.serves_files:
            ensure_content(self.content_root, workload.mode, workload.object_count, workload.object_size)
        key = stack.server_key(options, cc, case)
        entry = self.by_key.get(key)
        if entry is not None and entry[1].alive():
            return entry
        port = entry[0] if entry else FIRST_PORT + len(self.by_key)
        server = stack.start_server(
            self.testbed,
            port=port,
            options=options,
            cc=cc,
            cert_dir=self.cert_dir,
            log_dir=self.log_root / stack.log_folder(cc, port),
            content_root=self.content_root,
            case=case,
        )
        self.by_key[key] = (port, server)
        return port, server

    def stop_all(self) -> None:
        for _, server in self.by_key.values():
            server.stop()


@contextlib.contextmanager
def open_servers(testbed, experiment_dir: Path) -> Iterator[dict]:
    """A kind's session on one testbed (Kind.session): the server pool, stopped at its end."""
    pool = ServerPool(testbed, experiment_dir, tcp_tracefs())
    try:
        yield {"servers": pool}
    finally:
        pool.stop_all()
