"""tquic (crates.io, BoringSSL vendored): its own example programs, `tquic_server` and
`tquic_client` from the `tquic_tools` crate, built with `cargo install --locked` (its
published lockfile) once per version under the build directory. The server serves files;
the client takes every URL at once (HTML and objects together, like ngtcp2's) and prints
no timings, so its fetch JSON is built from its qlog (stacks/qlog_fetch.py). It does not
verify the server's certificate. Congestion control: bbr (tquic's default), cubic, bbr3,
copa. qlog: JSON-SEQ per connection (`--qlog-dir`)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

from ....errors import LonglookError
from ...base import CaseCalls, ClientCall, ServerCall, Stack, qlog_flag
from ...qlog_fetch import fetch_document
from ..ngtcp2 import object_paths
from ...release_registry import Registry


class Tquic(Stack):
    name = "tquic"
    release_registry = Registry("crates", "tquic_tools")
    # BoringSSL builds through cmake
    apt_needs = ("cmake",)
    versions = ("1.6.0",)
    any_version = True  # any tquic_tools release on crates.io
    ccs = ("bbr", "cubic", "bbr3", "copa")
    fetch_from_qlog = True  # its fetch JSON is built from its client's qlog (stacks/qlog_fetch.py)
    sends_run_header = False  # tquic_client has no option for request headers
    # tquic_client's switches: --session-file (a first connection's ticket), --enable-early-data
    client_cases = ("resumption", "zerortt")
    server_case_flags = {"retry": ("--enable-retry",)}  # tquic_server's stateless Retry
    unsupported_as_client = {
        "keyupdate": "tquic_client has no option to start a key update (tquic_tools' --help)",
        "chacha20": "tquic_client has no option for its cipher suites (tquic_tools' --help)",
        "v2": "tquic_client has no option for a QUIC version (tquic_tools' --help)",
        "connection-migration": "tquic_client's --local-addresses adds paths right after the handshake, for "
        "multipath (Connection::add_path); it has no option to move its connection later",
    }

    def _bin(self, name: str):
        return self.build_dir / "bin" / name

    def installed(self) -> bool:
        return self._bin("tquic_server").is_file() and self._bin("tquic_client").is_file()

    def install(self) -> None:
        if self.installed():
            return
        if not shutil.which("cargo"):
            raise LonglookError(
                f"{self.spec} needs cargo to build", hint=f"install Rust, then `{self.install_command}`"
            )
        env = {**os.environ, "CARGO_TARGET_DIR": str(self.build_dir / "target")}
        p = subprocess.run(
            [
                "cargo",
                "install",
                "tquic_tools",
                "--version",
                f"={self.version}",
                "--locked",
                "--root",
                str(self.build_dir),
            ],
            env=env,
            capture_output=True,
            text=True,
        )
        shutil.rmtree(self.build_dir / "target", ignore_errors=True)
        if p.returncode != 0:
            raise LonglookError(
                f"building {self.spec} failed: {p.stderr.strip()[-800:]}",
                hint=f"needs cmake (scripts/setup.sh); retry `{self.install_command}`",
            )

    def server_argv(self, *, port, cert, key, root, qlog_dir, cc) -> ServerCall:
        return ServerCall(
            [
                str(self._bin("tquic_server")),
                "--listen",
                f"0.0.0.0:{port}",
                "--cert",
                str(cert),
                "--key",
                str(key),
                "--root",
                str(root),
                *qlog_flag(qlog_dir),
                "--congestion-control-algor",
                cc,
                "--log-level",
                "OFF",
            ],
            env={},
        )

    def client_argv(self, *, url, mode, ca, run_id, out, qlog_dir, timeout_s, cc) -> ClientCall:
        u = urlsplit(url)
        urls = [url] + [f"https://{u.netloc}{p}" for p in (object_paths(u.path) if mode == "page" else [])]
        n = str(len(urls))
        download = out.parent / "client-download"
        download.mkdir(exist_ok=True)
        return ClientCall(
            [
                str(self._bin("tquic_client")),
                "--alpn",
                "h3",
                "--threads",
                "1",
                "--max-concurrent-conns",
                "1",
                "--max-concurrent-requests",
                n,
                "--max-requests-per-conn",
                n,
                "--total-requests-per-thread",
                n,
                "--congestion-control-algor",
                cc,
                "--qlog-dir",
                str(qlog_dir),
                "--dump-dir",
                str(download),
                "--log-level",
                "OFF",
                *urls,
            ],
            env={},
        )

    def case_calls(self, case: str, call: ClientCall, state_dir: Path) -> CaseCalls | None:
        if case not in self.client_cases:
            return None
        state_dir.mkdir(parents=True, exist_ok=True)
        session = ["--session-file", str(state_dir / "session")]
        early = ["--enable-early-data"] if case == "zerortt" else []
        return CaseCalls(warmup=call.with_flags(*session, after=1), measured=call.with_flags(*session, *early, after=1))

    def with_keylog(self, call: ClientCall, keylog: Path) -> ClientCall:
        return ClientCall([call.argv[0], "--keylog-file", str(keylog), *call.argv[1:]], call.env)

    def finish_fetch(self, *, url, mode, run_id, out, qlog_dir, returncode, stderr, started_unix_ms, wall_ms):
        import json

        u = urlsplit(url)
        paths = [u.path] + (object_paths(u.path) if mode == "page" else [])
        download = out.parent / "client-download"
        # the newest: a first connection (a ticket for resumption) wrote its own before it
        logs = sorted([*qlog_dir.glob("*.qlog"), *qlog_dir.glob("*.sqlog")], key=lambda p: p.stat().st_mtime)
        doc = fetch_document(
            logs[-1] if logs else qlog_dir / "missing.qlog",
            url=url,
            mode=mode,
            run_id=run_id,
            paths=paths,
            download=download,
            returncode=returncode,
            stderr=stderr,
            started_unix_ms=started_unix_ms,
        )
        shutil.rmtree(download, ignore_errors=True)
        out.write_text(json.dumps(doc))
