"""aioquic (PyPI), pinned, in its own virtualenv per version under the build directory; its
HTTP/3 server and client are the two scripts beside this file (the wheel ships none).
Congestion control: reno (default), cubic. qlog: one JSON file (not JSON-SEQ) per connection,
written when the connection closes; no congestion-state event (states are derived,
qlog/dialects.py). CPU-bound near 80-90 Mbit/s on this machine."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ....errors import LonglookError
from ...base import CaseCalls, ClientCall, ServerCall, Stack, fetch_args, qlog_flag, serve_args
from ...release_registry import Registry


class Aioquic(Stack):
    name = "aioquic"
    release_registry = Registry("pypi", "aioquic")
    versions = ("1.7.2",)
    any_version = True  # any release on PyPI with the same API
    ccs = ("reno", "cubic")
    # h3client.py's switches: --session-ticket (a first connection's ticket, pickled),
    # --early-data, --chacha20, --key-update-after-ms (QuicConnection.request_key_update),
    # --quic-v2 (v2 preferred from a v1 Initial), --migrate-at-ms/--migrate-to (a socket on the
    # new address, then QuicConnection.change_connection_id)
    client_cases = ("resumption", "zerortt", "keyupdate", "chacha20", "v2", "connection-migration")
    server_case_flags = {"retry": ("--retry",)}  # h3server.py: aioquic's serve(retry=True)
    qlog_format = "JSON"  # one document per connection, written at close

    @property
    def python(self) -> Path:
        return self.build_dir / "venv" / "bin" / "python"

    def installed(self) -> bool:
        return (self.build_dir / "installed").is_file() and self.python.exists()

    def install(self) -> None:
        if self.installed():
            return
        self.build_dir.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "venv", str(self.build_dir / "venv")], check=True)
        p = subprocess.run(
            [str(self.python), "-m", "pip", "install", "-q", f"aioquic=={self.version}"], capture_output=True, text=True
        )
        if p.returncode != 0:
            raise LonglookError(
                f"installing {self.spec} failed: {p.stderr.strip()[-500:]}", hint=f"retry `{self.install_command}`"
            )
        (self.build_dir / "installed").write_text(self.version + "\n")

    def server_argv(self, *, port, cert, key, root, qlog_dir, cc) -> ServerCall:
        return ServerCall(
            [
                str(self.python),
                str(self.folder / "h3server.py"),
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
                str(self.python),
                str(self.folder / "h3client.py"),
                *fetch_args(url=url, mode=mode, ca=ca, run_id=run_id, out=out, timeout_s=timeout_s),
                *qlog_flag(qlog_dir),
                *("--cc", cc),
            ],
            env={},
        )

    def case_calls(self, case: str, call: ClientCall, state_dir: Path) -> CaseCalls | None:
        asked = call.with_flags
        if case in ("resumption", "zerortt"):
            state_dir.mkdir(parents=True, exist_ok=True)
            ticket = ("--session-ticket", str(state_dir / "ticket.pickle"))
            early = ("--early-data",) if case == "zerortt" else ()
            return CaseCalls(warmup=asked(*ticket), measured=asked(*ticket, *early))
        if case == "keyupdate":  # within a page's transfer, after the handshake
            return CaseCalls(warmup=None, measured=asked("--key-update-after-ms", "10"))
        if case == "chacha20":
            return CaseCalls(warmup=None, measured=asked("--chacha20"))
        if case == "v2":
            return CaseCalls(warmup=None, measured=asked("--quic-v2"))
        if case == "connection-migration":  # the runner added where and when (migration_flags)
            return CaseCalls(warmup=None, measured=call)
        return None

    def with_keylog(self, call: ClientCall, keylog: Path) -> ClientCall:
        return ClientCall([*call.argv, "--keylog", str(keylog)], call.env)  # secrets_log_file
