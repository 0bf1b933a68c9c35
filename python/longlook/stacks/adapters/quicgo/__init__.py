"""quic-go (Go module) with its in-tree HTTP/3: `main.go` beside this file is a small server
(files under a root) and client (fetch JSON), built per quic-go version under the build
directory (builds/go_module.py). Congestion control: NewReno only (hard-coded in quic-go).
qlog: JSON-SEQ through quic-go's tracer into $QLOGDIR, with `congestion_state_updated`
(slow_start, congestion_avoidance, recovery, application_limited).

Supported releases: v0.56.0 and newer (OLDEST). main.go uses the `qlogwriter` package, which
quic-go added in v0.56.0; an older release is one error at once."""

from __future__ import annotations

from pathlib import Path

from packaging.version import InvalidVersion, Version

from ....errors import LonglookError
from ...base import CaseCalls, ClientCall
from ...builds.go_module import GoModuleStack
from ...release_registry import Registry

MODULE = "github.com/quic-go/quic-go"
OLDEST = "v0.56.0"  # the first release with the qlogwriter package main.go uses


class QuicGo(GoModuleStack):
    name = "quic-go"
    module = MODULE
    binary_name = "longlook-quicgo"
    oldest_note = f"the adapter supports {OLDEST} and newer"
    release_registry = Registry("go", "github.com/quic-go/quic-go")
    versions = ("v0.65.0", "v0.64.1")
    any_version = True  # any tag on the module proxy whose API main.go compiles against
    # main.go's switches: --resume (a first connection, then the measured one, in one process:
    # quic-go keeps tickets in its tls.ClientSessionCache), --early-data (quic.DialAddrEarly and
    # http3.MethodGet0RTT), --v2 (quic.Version2 alone: its http3 dials with one version),
    # --migrate-at-ms/--migrate-to (the runner's: Conn.AddPath, Path.Probe and Switch)
    client_cases = ("resumption", "zerortt", "v2", "connection-migration")
    unsupported_as_client = {
        "keyupdate": "quic-go updates its keys only after 100,000 packets (updatable_aead.go); no call asks for one",
        "chacha20": "Go's crypto/tls chooses the TLS 1.3 suite itself (tls.Config.CipherSuites does not apply to 1.3)",
    }
    tag_prefix = "v"
    ccs = ("newreno",)

    def __init__(self, version: str | None = None):
        super().__init__(version)
        try:
            old = Version(self.version.removeprefix("v")) < Version(OLDEST.removeprefix("v"))
        except InvalidVersion:
            old = False  # not a release number: the module proxy answers for it at build time
        if old:
            raise LonglookError(
                f"{self.spec}: longlook's quic-go adapter supports {OLDEST} and newer",
                hint=f"main.go uses the qlogwriter package, added in quic-go {OLDEST}",
            )

    def case_calls(self, case: str, call: ClientCall, state_dir: Path) -> CaseCalls | None:
        flags = {
            "resumption": ["--resume"],
            "zerortt": ["--resume", "--early-data"],
            "v2": ["--v2"],
            "connection-migration": [],  # the runner adds where and when (MOVING_CLIENT_CASES)
        }.get(case)
        return None if flags is None else CaseCalls(warmup=None, measured=call.with_flags(*flags))
