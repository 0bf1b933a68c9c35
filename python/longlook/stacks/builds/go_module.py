"""A stack whose server and client are one small Go program of ours in its adapter's folder
(the `.go` files beside go.mod and go.sum), built per version of the Go module it wraps,
under the build directory. go.mod/go.sum pin the default version; another is resolved through
the Go module proxy into its own folder. After `go mod tidy` the build checks that the module
resolved to the release asked for: tidy would otherwise satisfy a package an old release
lacks by upgrading it, and an "old" build would silently be the newest. Every such program
takes the same arguments (`serve`, `fetch`, `--keylog`) and writes its qlog into $QLOGDIR,
given here once."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import ClassVar

from ...errors import LonglookError
from ..base import ClientCall, ServerCall, Stack, fetch_args, serve_args

# the Go client programs' shared package (its own module), beside this file; a program's go.mod
# replaces it with this folder's relative path in the source tree, and the build with its copy
GOFETCH = Path(__file__).parent / "gofetch"
GOFETCH_MODULE = "longlook/gofetch"


class GoModuleStack(Stack):
    module: ClassVar[str]  # the Go module whose version is the stack's
    binary_name: ClassVar[str]
    oldest_note: ClassVar[str] = ""  # which releases the program supports, for the error
    # gofetch's `serve --retry`, which each program maps to its stack's switch
    server_case_flags = {"retry": ("--retry",)}

    @property
    def binary(self) -> Path:
        return self.build_dir / self.binary_name

    def _program(self) -> list[Path]:
        """The program's files: its Go sources, go.mod and go.sum."""
        return [*sorted(self.folder.glob("*.go")), self.folder / "go.mod", self.folder / "go.sum"]

    def installed(self) -> bool:
        """Built from this adapter's Go sources and the shared package's (a changed one means
        a rebuild), against the release asked for (go.mod says so)."""
        src = self.build_dir / "src"
        go_mod = src / "go.mod"
        sources = [(f, src / f.name) for f in self._program() if f.suffix == ".go"]
        sources += [(f, self.build_dir / GOFETCH.name / f.name) for f in sorted(GOFETCH.glob("*.go"))]
        return (
            self.binary.is_file()
            and go_mod.is_file()
            and all(built.is_file() and built.read_bytes() == ours.read_bytes() for ours, built in sources)
            and f"{self.module} {self.version}" in go_mod.read_text()
        )

    def install(self) -> None:
        if self.installed():
            return
        if not shutil.which("go"):
            raise LonglookError(
                f"{self.spec} needs Go (1.26 or newer) to build", hint=f"install Go, then `{self.install_command}`"
            )
        src = self.build_dir / "src"
        shutil.rmtree(src, ignore_errors=True)
        src.mkdir(parents=True)
        for f in self._program():
            shutil.copy(f, src / f.name)
        shared = self.build_dir / GOFETCH.name
        shutil.rmtree(shared, ignore_errors=True)
        shutil.copytree(GOFETCH, shared)
        env = {**os.environ, "GOFLAGS": "-mod=mod"}
        steps = [
            ["go", "mod", "edit", f"-replace={GOFETCH_MODULE}=../{GOFETCH.name}"],
            ["go", "mod", "edit", f"-require={self.module}@{self.version}"],
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
            ["go", "list", "-m", "-f", "{{.Version}}", self.module], cwd=src, env=env, capture_output=True, text=True
        )
        got = p.stdout.strip()
        if got != self.version:
            shutil.rmtree(src, ignore_errors=True)
            raise LonglookError(
                f"{self.spec} does not build with longlook's program: Go resolved {self.module} to "
                f"{got or 'nothing'} ({p.stderr.strip()[-300:] or 'a package the program uses is missing'})",
                hint=self.oldest_note or f"try the default version, `{self.name}`",
            )

    def server_argv(self, *, port, cert, key, root, qlog_dir, cc) -> ServerCall:
        return ServerCall(
            [str(self.binary), "serve", "--listen", f"0.0.0.0:{port}", *serve_args(cert=cert, key=key, root=root)],
            env={"QLOGDIR": str(qlog_dir)} if qlog_dir else {},  # quic-go's and x/net's tracer: on when set
            prints_ready=True,
        )

    def client_argv(self, *, url, mode, ca, run_id, out, qlog_dir, timeout_s, cc) -> ClientCall:
        fetch = fetch_args(url=url, mode=mode, ca=ca, run_id=run_id, out=out, timeout_s=timeout_s)
        return ClientCall([str(self.binary), "fetch", *fetch], env={"QLOGDIR": str(qlog_dir)} if qlog_dir else {})

    def with_keylog(self, call: ClientCall, keylog: Path) -> ClientCall:
        return ClientCall([*call.argv, "--keylog", str(keylog)], call.env)  # tls.Config.KeyLogWriter
