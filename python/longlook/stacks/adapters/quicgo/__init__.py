"""quic-go (Go module) with its in-tree HTTP/3: `main.go` beside this file is a small server
(files under a root) and client (fetch JSON), built per quic-go version under the build
directory; go.mod/go.sum pin the default version, another version is resolved through the Go
module proxy into its own folder. Congestion control: NewReno only (hard-coded in quic-go).
qlog: JSON-SEQ through quic-go's tracer into $QLOGDIR, with `congestion_state_updated`
(slow_start, congestion_avoidance, recovery, application_limited).

Supported releases: v0.56.0 and newer (OLDEST). main.go uses the `qlogwriter` package, which
quic-go added in v0.56.0; an older release is one error at once. After `go mod tidy` the
build checks that the module resolved to the release asked for: tidy would otherwise satisfy
a missing package by upgrading quic-go, and an "old" build would silently be the newest."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from packaging.version import InvalidVersion, Version

from ....errors import LonglookError
from ...base import CaseCalls, ClientCall, ServerCall, Stack, fetch_args, serve_args
from ...release_registry import Registry

MODULE = "github.com/quic-go/quic-go"
OLDEST = "v0.56.0"  # the first release with the qlogwriter package main.go uses


class QuicGo(Stack):
    name = "quic-go"
    release_registry = Registry("go", "github.com/quic-go/quic-go")
    versions = ("v0.65.0", "v0.64.1")
    any_version = True  # any tag on the module proxy whose API main.go compiles against
    # main.go's switches: --resume (a first connection, then the measured one, in one process:
    # quic-go keeps tickets in its tls.ClientSessionCache), --early-data (quic.DialAddrEarly and
    # http3.MethodGet0RTT), --v2 (quic.Version2 alone: its http3 dials with one version)
    client_cases = ("resumption", "zerortt", "v2")
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

    @property
    def binary(self):
        return self.build_dir / "longlook-quicgo"

    def installed(self) -> bool:
        """Built, from this adapter's main.go (a changed main.go means a rebuild), against
        the release asked for (go.mod says so)."""
        built_from = self.build_dir / "src" / "main.go"
        go_mod = self.build_dir / "src" / "go.mod"
        return (
            self.binary.is_file()
            and built_from.is_file()
            and go_mod.is_file()
            and built_from.read_bytes() == (self.folder / "main.go").read_bytes()
            and f"{MODULE} {self.version}" in go_mod.read_text()
        )

    def install(self) -> None:
        if self.installed():
            return
        if not shutil.which("go"):
            raise LonglookError(
                f"{self.spec} needs Go (1.26 or newer) to build", hint=f"install Go, then `{self.install_command}`"
            )
        src = self.build_dir / "src"
        src.mkdir(parents=True, exist_ok=True)
        for f in ("main.go", "go.mod", "go.sum"):
            shutil.copy(self.folder / f, src / f)
        env = {**os.environ, "GOFLAGS": "-mod=mod"}
        steps = [
            ["go", "mod", "edit", f"-require={MODULE}@{self.version}"],
            ["go", "mod", "tidy"],
            ["go", "build", "-trimpath", "-o", str(self.binary), "."],
        ]
        for argv in steps:
            p = subprocess.run(argv, cwd=src, env=env, capture_output=True, text=True)
            if p.returncode != 0:
                raise LonglookError(
                    f"building {self.spec} failed at `{' '.join(argv)}`: {p.stderr.strip()[-800:]}",
                    hint=f"retry `{self.install_command}`",
                )
            if argv[1:3] == ["mod", "tidy"]:
                self._check_resolved(src, env)

    def _check_resolved(self, src: Path, env: dict) -> None:
        """The module resolved to the release asked for (tidy may upgrade it to supply a
        package the release lacks)."""
        p = subprocess.run(
            ["go", "list", "-m", "-f", "{{.Version}}", MODULE], cwd=src, env=env, capture_output=True, text=True
        )
        got = p.stdout.strip()
        if got != self.version:
            shutil.rmtree(src, ignore_errors=True)
            raise LonglookError(
                f"{self.spec} does not build with longlook's main.go: Go resolved {MODULE} to "
                f"{got or 'nothing'} ({p.stderr.strip()[-300:] or 'a package main.go uses is missing'})",
                hint=f"the adapter supports {OLDEST} and newer",
            )

    def server_argv(self, *, port, cert, key, root, qlog_dir, cc) -> ServerCall:
        return ServerCall(
            [
                str(self.binary),
                "serve",
                "--listen",
                f"0.0.0.0:{port}",
                *serve_args(cert=cert, key=key, root=root),
            ],
            env={"QLOGDIR": str(qlog_dir)},
            prints_ready=True,
        )

    def client_argv(self, *, url, mode, ca, run_id, out, qlog_dir, timeout_s, cc) -> ClientCall:
        return ClientCall(
            [
                str(self.binary),
                "fetch",
                *fetch_args(url=url, mode=mode, ca=ca, run_id=run_id, out=out, timeout_s=timeout_s),
            ],
            env={"QLOGDIR": str(qlog_dir)},
        )

    def case_calls(self, case: str, call: ClientCall, state_dir: Path) -> CaseCalls | None:
        flags = {"resumption": ["--resume"], "zerortt": ["--resume", "--early-data"], "v2": ["--v2"]}.get(case)
        return None if flags is None else CaseCalls(warmup=None, measured=call.with_flags(*flags))

    def with_keylog(self, call: ClientCall, keylog: Path) -> ClientCall:
        return ClientCall([*call.argv, "--keylog", str(keylog)], call.env)  # tls.Config.KeyLogWriter
