"""Our own endpoint (crates/endpoint) as a stack like the others: the same contract
(stacks/base.py), so the one server pool (stacks/servers.py) and the kinds treat it as any
stack. What differs is behind the contract: its server has knobs the others lack (MACW,
initial window, N-connection emulation, the TCP side, a content root), keyed by
`ServerOptions`; it files each connection's logs under the run that made it (`x-longlook-run`),
and it generates its content, so no files are written for it. Its client is the "native"
client (stacks/clients). The processes are driven by stacks/endpoint.py.

`ours` is the workspace's build (scripts/setup.sh). `ours@V` is the same code built against
quinn-proto release V (supported: 0.11.13 and newer in 0.11; stacks/adapters/ours/quinn_build.py), cached
by version in the stacks cache like any stack's release; as `server` and `client` it runs
`endpoint serve` and `endpoint fetch` of that build. Each records its quinn, quinn-proto and
quinn-udp versions and its binary's SHA-256 (version_info, registry.binary_digests)."""

from __future__ import annotations

import functools
from dataclasses import replace
from pathlib import Path
from typing import Hashable

from ....binaries import find_binary
from ....errors import LonglookError
from ....versions import binary_version, file_digest
from . import quinn_build
from ...base import OURS, Stack
from ...congestion import QUIC_CC
from ...endpoint import EndpointServer, ServerOptions, fetch
from ...release_registry import Registry


WORKSPACE = "workspace"


class Ours(Stack):
    name = OURS
    # `ours@V`: this checkout built against quinn-proto release V (quinn_build.py)
    release_registry = Registry("crates", "quinn-proto")
    versions = (WORKSPACE,)  # built from this checkout by scripts/setup.sh
    any_version = True  # or a quinn-proto release in quinn_build.SUPPORTED
    ccs = QUIC_CC
    serves_files = False
    # `endpoint serve --retry`, which start_server asks for through ServerOptions.retry
    server_case_flags = {"retry": ("--retry",)}

    def __init__(self, version: str | None = None):
        super().__init__(version)
        if self.is_release:
            quinn_build.check_supported(self.version)

    @property
    def is_release(self) -> bool:
        """Built against a named quinn-proto release (not the workspace's build)."""
        return self.version != WORKSPACE

    @property
    def binary(self) -> Path:
        return self.build_dir / "endpoint" if self.is_release else find_binary("endpoint")

    def installed(self) -> bool:
        if self.is_release:  # built, from this checkout's endpoint code
            built = quinn_build.read_build(self.build_dir)
            return (
                self.binary.is_file()
                and built is not None
                and built.get("endpoint_source") == quinn_build.source_digest()
            )
        try:
            find_binary("endpoint")
        except LonglookError:
            return False
        return True

    def install(self) -> None:
        if self.installed():
            return
        if not self.is_release:
            raise LonglookError("our endpoint is not built", hint="run scripts/setup.sh (cargo build --release)")
        from ...builds.releases import check_release, index_entries

        proto = check_release(OURS, self.version)  # an unknown release: the registry's nearest named
        quinn_build.build(proto, quinn_build.quinn_for(proto, index_entries("quinn")), self.build_dir)

    @property
    def install_command(self) -> str:
        return super().install_command if self.is_release else "bash scripts/setup.sh"

    def version_info(self) -> str:
        if not self.is_release:
            return binary_version("endpoint")
        built = quinn_build.read_build(self.build_dir) or {}
        pair = ", ".join(f"{k.replace('_', '-')} {built.get(k, '?')}" for k in ("quinn", "quinn_proto", "quinn_udp"))
        digest = file_digest(self.binary) if self.binary.is_file() else "not built"
        return f"endpoint (source {built.get('endpoint_source', '?')}) with {pair} (sha256 {digest})"

    def server_key(self, options: ServerOptions | None, cc: str | None, case: str | None = None) -> Hashable:
        return (self.spec, options or ServerOptions(), case)

    def log_folder(self, cc: str | None, port: int) -> str:
        return f"port-{port}"

    def start_server(
        self,
        testbed,
        *,
        port: int,
        options: ServerOptions | None,
        cc: str | None,
        cert_dir: Path,
        log_dir: Path,
        content_root: Path,
        case: str | None = None,
    ) -> EndpointServer:
        options = replace(options or ServerOptions(), retry=case == "retry")
        return EndpointServer.start(testbed, options, port=port, cert_dir=cert_dir, log_dir=log_dir, binary=self.binary)

    def fetcher(self, cc: str | None = None, logs: bool = True):
        """Its client is the native client (`endpoint fetch`, of this build); the server
        decides the congestion control."""
        binary = {"binary": self.binary} if self.is_release else {}
        return functools.partial(fetch, **binary, **({} if logs else {"qlog": False}))
