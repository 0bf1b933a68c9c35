"""A stack whose server and client are one small Rust binary of ours in `stacks/adapters/<name>/crate/`
(its own crate and Cargo.lock, outside the main workspace), built alone once per version of
the library it wraps, in its own CARGO_TARGET_DIR under the build directory (so it never
waits on, or invalidates, another build). The version is the library's crates.io release:
the shipped lockfile pins the default one; another has its pin rewritten and is resolved
afresh. Every such binary takes the same arguments (`serve`, `fetch`, `--keylog`), given
here once. A crate over hyperium's h3 depends on `h3_harness/` beside this file (what those
adapters share), which is copied beside it for the build."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import ClassVar

from ...errors import LonglookError
from ..base import ClientCall, ServerCall, Stack, fetch_args, qlog_flag, serve_args


HARNESS = Path(__file__).parent / "h3_harness"
# how an adapter's manifest names the harness, from its `crate/` folder in the source tree
HARNESS_DEP = 'path = "../../../builds/h3_harness"'


class RustCrateStack(Stack):
    crate: ClassVar[str]  # the crate's name (its folder is the adapter's `crate/`)
    binary_name: ClassVar[str]  # the [package] name, the binary cargo builds
    library: ClassVar[str]  # the crates.io dependency whose version is the stack's
    build_hint: ClassVar[str] = "scripts/setup.sh installs Rust"

    @property
    def source(self) -> Path:
        return Path(sys.modules[type(self).__module__].__file__).parent / "crate"

    @property
    def binary(self) -> Path:
        return self.build_dir / self.binary_name

    def _sources(self, root: Path) -> dict[str, bytes]:
        files = [root / "Cargo.toml", *sorted((root / "src").glob("*.rs"))]
        return {str(p.relative_to(root)): p.read_bytes() for p in files if p.is_file()}

    def installed(self) -> bool:
        """Built from this checkout's sources: a changed source file, its own or the
        harness's, means a rebuild (both are copied before the build; Cargo.toml is compared
        as it was built)."""
        built = self.build_dir / "src"
        if not (self.binary.is_file() and (built / "Cargo.toml").is_file()):
            return False
        ours, theirs = self._sources(self.source), self._sources(built)
        uses_harness = HARNESS_DEP in ours["Cargo.toml"].decode()
        ours["Cargo.toml"] = self._as_built(ours["Cargo.toml"].decode()).encode()
        if uses_harness and self._sources(HARNESS) != self._sources(self.build_dir / HARNESS.name):
            return False
        return ours == theirs and self.binary.stat().st_mtime >= (built / "Cargo.toml").stat().st_mtime

    def _as_built(self, manifest: str) -> str:
        """The manifest as it is built: the library pinned at this version, and the harness
        at its copy beside the crate's."""
        return self._pinned(manifest).replace(HARNESS_DEP, f'path = "{self.build_dir / HARNESS.name}"')

    def _pinned(self, manifest: str) -> str:
        return re.sub(
            rf'{re.escape(self.library)} = \{{ version = "=[^"]+"',
            f'{self.library} = {{ version = "={self.version}"',
            manifest,
        )

    def install(self) -> None:
        if self.installed():
            return
        if not shutil.which("cargo"):
            raise LonglookError(
                f"{self.spec} needs cargo to build", hint=f"install Rust, then `{self.install_command}`"
            )
        src = self.build_dir / "src"
        shutil.rmtree(src, ignore_errors=True)
        shutil.copytree(self.source, src, ignore=shutil.ignore_patterns("target"))
        manifest = src / "Cargo.toml"
        text = manifest.read_text()
        if HARNESS_DEP in text:
            harness = self.build_dir / HARNESS.name
            shutil.rmtree(harness, ignore_errors=True)
            shutil.copytree(HARNESS, harness, ignore=shutil.ignore_patterns("target", "Cargo.lock"))
        manifest.write_text(self._as_built(text))
        # the shipped lockfile is for the default version (it records no path of the harness)
        locked = ["--locked"] if self._pinned(text) == text else []
        target = self.build_dir / "target"
        env = {**os.environ, "CARGO_TARGET_DIR": str(target)}
        p = subprocess.run(["cargo", "build", "--release", *locked], cwd=src, env=env, capture_output=True, text=True)
        if p.returncode != 0:
            raise LonglookError(
                f"building {self.spec} failed: {p.stderr.strip()[-800:]}",
                hint=f"{self.build_hint}; retry `{self.install_command}`",
            )
        shutil.copy(target / "release" / self.binary_name, self.binary)
        shutil.rmtree(target, ignore_errors=True)  # hundreds of MB to GBs of objects: not kept

    def server_argv(self, *, port, cert, key, root, qlog_dir, cc) -> ServerCall:
        return ServerCall(
            [
                str(self.binary),
                "serve",
                "--listen",
                f"0.0.0.0:{port}",
                *serve_args(cert=cert, key=key, root=root),
                *qlog_flag(qlog_dir),
                *("--cc", cc),
            ],
            env={},
            prints_ready=True,
        )

    def client_argv(self, *, url, mode, ca, run_id, out, qlog_dir, timeout_s, cc) -> ClientCall:
        return ClientCall(
            [
                str(self.binary),
                "fetch",
                *fetch_args(url=url, mode=mode, ca=ca, run_id=run_id, out=out, timeout_s=timeout_s),
                *qlog_flag(qlog_dir),
                *("--cc", cc),
            ],
            env={},
        )

    def with_keylog(self, call: ClientCall, keylog: Path) -> ClientCall:
        return ClientCall([*call.argv, "--keylog", str(keylog)], call.env)
