"""quiche (crates.io, BoringSSL vendored in boring-sys; bindgen needs Debian's libclang-dev):
stacks-rs/quiche-h3/ is a small Rust binary (its own crate and Cargo.lock, outside the main
workspace) with a file server and a page-load client on quiche's HTTP/3, built once per
quiche version under the build directory. Congestion control: cubic (default), reno, bbr2
(quiche's gcongestion BBRv2). qlog: JSON-SEQ per connection, with `congestion_state_updated`
(quiche's names, mapped onto Table 3 by qlog/dialects.py)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from ...binaries import REPO_ROOT
from ...errors import LonglookError
from ..base import ClientCall, ServerCall, Stack

CRATE = REPO_ROOT / "stacks-rs" / "quiche-h3"


class Quiche(Stack):
    name = "quiche"
    versions = ("0.30.0",)
    any_version = True  # another crates.io release with the same API: Cargo.toml's pin is rewritten
    ccs = ("cubic", "reno", "bbr2")

    @property
    def binary(self):
        return self.build_dir / "longlook-quiche"

    def installed(self) -> bool:
        """Built from this checkout's stacks-rs/quiche-h3: a changed main.rs means a rebuild
        (the source is copied before the build, so the binary must also be newer than it)."""
        built_from = self.build_dir / "src" / "src" / "main.rs"
        return (self.binary.is_file() and built_from.is_file()
                and built_from.read_bytes() == (CRATE / "src" / "main.rs").read_bytes()
                and self.binary.stat().st_mtime >= built_from.stat().st_mtime)

    def install(self) -> None:
        if self.installed():
            return
        if not shutil.which("cargo"):
            raise LonglookError(f"{self.spec} needs cargo to build", hint=f"install Rust, then `{self.install_command}`")
        src = self.build_dir / "src"
        shutil.rmtree(src, ignore_errors=True)
        shutil.copytree(CRATE, src, ignore=shutil.ignore_patterns("target"))
        manifest = src / "Cargo.toml"
        text = manifest.read_text()
        pinned = re.sub(r'quiche = \{ version = "=[^"]+"', f'quiche = {{ version = "={self.version}"', text)
        manifest.write_text(pinned)
        locked = ["--locked"] if pinned == text else []  # the shipped lockfile is for the default version
        env = {**os.environ, "CARGO_TARGET_DIR": str(self.build_dir / "target")}
        p = subprocess.run(["cargo", "build", "--release", *locked], cwd=src, env=env, capture_output=True, text=True)
        if p.returncode != 0:
            raise LonglookError(f"building {self.spec} failed: {p.stderr.strip()[-800:]}",
                                hint=f"needs cmake and libclang-dev (scripts/setup.sh); retry `{self.install_command}`")
        shutil.copy(self.build_dir / "target" / "release" / "longlook-quiche", self.binary)
        shutil.rmtree(self.build_dir / "target", ignore_errors=True)  # 1+ GB of objects

    def server_argv(self, *, port, cert, key, root, qlog_dir, cc) -> ServerCall:
        return ServerCall([str(self.binary), "serve", "--listen", f"0.0.0.0:{port}", "--cert", str(cert),
                           "--key", str(key), "--root", str(root), "--qlog-dir", str(qlog_dir), "--cc", cc],
                          env={}, prints_ready=True)

    def client_argv(self, *, url, mode, ca, run_id, out, qlog_dir, timeout_s, cc) -> ClientCall:
        return ClientCall([str(self.binary), "fetch", "--url", url, "--ca", str(ca), "--mode", mode,
                           "--run-id", run_id, "--out", str(out), "--timeout-s", str(timeout_s),
                           "--qlog-dir", str(qlog_dir), "--cc", cc], env={})

    def with_keylog(self, call: ClientCall, keylog: Path) -> ClientCall:
        return ClientCall([*call.argv, "--keylog", str(keylog)], call.env)  # Connection::set_keylog
