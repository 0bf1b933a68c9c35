"""The servers of an experiment: one endpoint server per distinct configuration, each on its
own port, kept for the whole experiment (arms and cells may differ in server options, e.g.
QUIC congestion control); a server that died is restarted on its port."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..stacks.endpoint import EndpointServer, ServerOptions

FIRST_PORT = 4433


@dataclass
class ServerPool:
    testbed: object
    cert_dir: Path
    log_root: Path
    tracefs: Path | None = None  # exact TCP transitions when the kernel has the tracepoint
    by_options: dict[ServerOptions, tuple[int, EndpointServer]] = field(default_factory=dict)

    def get(self, options: ServerOptions) -> tuple[int, EndpointServer]:
        entry = self.by_options.get(options)
        if entry is not None and entry[1].alive():
            return entry
        port = entry[0] if entry else FIRST_PORT + len(self.by_options)
        server = EndpointServer.start(self.testbed, options, port=port, cert_dir=self.cert_dir,
                                      log_dir=self.log_root / f"port-{port}")
        self.by_options[options] = (port, server)
        return port, server

    def stop_all(self) -> None:
        for _, server in self.by_options.values():
            server.stop()
