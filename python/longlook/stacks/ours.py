"""Our own endpoint (crates/endpoint) as a stack like the others: the same contract
(stacks/base.py), so the one server pool (stacks/servers.py) and the kinds treat it as any
stack. What differs is behind the contract: its server has knobs the others lack (MACW,
initial window, N-connection emulation, the TCP side, a content root), keyed by
`ServerOptions`; it files each connection's logs under the run that made it (`x-longlook-run`),
and it generates its content, so no files are written for it. Its client is the "native"
client (stacks/clients). The processes are driven by stacks/endpoint.py."""

from __future__ import annotations

from pathlib import Path
from typing import Hashable

from ..binaries import find_binary
from ..errors import LonglookError
from ..versions import binary_version
from .base import OURS, Stack
from .congestion import QUIC_CC
from .endpoint import EndpointServer, ServerOptions, fetch


class Ours(Stack):
    name = OURS
    versions = ("workspace",)  # built from this checkout by scripts/setup.sh
    ccs = QUIC_CC
    serves_files = False

    def installed(self) -> bool:
        try:
            find_binary("endpoint")
        except LonglookError:
            return False
        return True

    def install(self) -> None:
        if not self.installed():
            raise LonglookError("our endpoint is not built", hint="run scripts/setup.sh (cargo build --release)")

    @property
    def install_command(self) -> str:
        return "bash scripts/setup.sh"

    def version_info(self) -> str:
        return binary_version("endpoint")

    def server_key(self, options: ServerOptions | None, cc: str | None) -> Hashable:
        return (self.spec, options or ServerOptions())

    def log_folder(self, cc: str | None, port: int) -> str:
        return f"port-{port}"

    def start_server(self, testbed, *, port: int, options: ServerOptions | None, cc: str | None,
                     cert_dir: Path, log_dir: Path, content_root: Path) -> EndpointServer:
        return EndpointServer.start(testbed, options or ServerOptions(), port=port, cert_dir=cert_dir,
                                    log_dir=log_dir)

    def fetcher(self, cc: str | None = None):
        """Its client is the native client (`endpoint fetch`); the server decides the
        congestion control."""
        return fetch
