"""ngtcp2 from Debian (`ngtcp2-server`, `ngtcp2-client`: the GnuTLS example programs
gtlsserver / gtlsclient, installed by scripts/setup.sh through apt); and a newer release from
bookworm-backports beside it (`ngtcp2@1.11.0`: unpacked into its own folder, backports.py). The server serves files
(longlook.stacks.content writes them). The client takes every URL at once and does not
parse HTML, so a page load requests the HTML and its objects together (the objects are
known from the page path `/page/<N>x<S>.html`); its fetch JSON is built from the client's
qlog (stacks/qlog_fetch.py). Congestion control: cubic (default), reno, bbr, bbr2. qlog: JSON-SEQ
through `--qlog-dir` / `--qlog-file`, no congestion-state event (states are derived)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

from ....errors import LonglookError
from ...base import CaseCalls, ClientCall, ServerCall, Stack, qlog_flag
from ...endpoint import SERVER_ADDR
from ...qlog_fetch import fetch_document
from . import backports

SERVER, CLIENT = "gtlsserver", "gtlsclient"
# the windows our endpoint and Chromium use (docs/interfaces.md: 6 MiB stream, 15 MiB connection)
WINDOWS = [
    "--max-data=15728640",
    "--max-stream-data-bidi-local=6291456",
    "--max-window=15728640",
    "--max-stream-window=6291456",
]
# GnuTLS' priority string for TLS 1.3 with ChaCha20-Poly1305 as the only cipher
CHACHA20_ONLY = "NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+CHACHA20-POLY1305"
# how long after the handshake its client starts a key update: within a page's transfer
KEY_UPDATE_AFTER = "10ms"
# gtlsclient's --change-local-addr binds a new socket to the source address the kernel's route
# names (rtnetlink) when its timer fires, counted from the handshake's end; the route moves
# once linkem took the first path down (testbed/route_handover.py polls every 50 ms), so the
# client asks this much later than it is told to move: after a short break, as a phone whose
# OS names the LTE address once its Wi-Fi is gone. gtlsclient 0.12.1 then binds the new socket
# and calls ngtcp2_conn_initiate_immediate_migration, but sends from it only when it next has
# something to write: a downloading client writes ACKs for what arrives, and with the old path
# down nothing arrives, so it never sends from its new address and the connection idles out
# (the testbed, 2026-11-30: "Local address is now [198.18.1.3]:60243" on its stderr, not one
# datagram from there at the router). The interop runner's migration keeps the old path up.
ROUTE_SETTLE_MS = 250
PAGE = re.compile(r"^/page/(\d+)x([0-9]+[km]?)\.html$")


def object_paths(path: str) -> list[str]:
    """The objects of a synthetic page, from its path (what the HTML would list)."""
    m = PAGE.match(path)
    return [f"/obj/{m.group(2)}/{i}.jpg" for i in range(int(m.group(1)))] if m else []


class Ngtcp2(Stack):
    name = "ngtcp2"
    # Debian's own build: its one version is the distribution's
    apt_needs = ("ngtcp2-server", "ngtcp2-client")
    # what Debian bookworm ships (apt decides, `version_info` records it), then bookworm-backports'
    versions = ("0.12.1", *backports.PACKAGES)
    sends_run_header = False  # Debian's example client has no option for request headers
    # gtlsclient's switches: --session-file/--tp-file (read, then written: a ticket and the
    # server's transport parameters from a first connection), --disable-early-data,
    # --key-update=<after the handshake>, --ciphers (a GnuTLS priority string)
    # --change-local-addr=<after the handshake> (connection migration: a new socket, a new
    # path validated, ngtcp2_conn_initiate_immediate_migration)
    # --version=v2 (1.x: RFC 9369's v2; 0.12.1 knows only the draft's)
    migrates_by_route = True
    fetch_from_qlog = True  # its fetch JSON is built from its client's qlog (stacks/qlog_fetch.py)
    server_case_flags = {"retry": ("--validate-addr",)}  # address validation: a Retry to every new Initial

    @property
    def debian(self) -> bool:
        """Debian's own build, installed by apt (the first version), not a backport."""
        return self.version == self.versions[0]

    @property
    def ccs(self) -> tuple[str, ...]:
        return ("cubic", "reno", "bbr", "bbr2") if self.debian else ("cubic", "reno", "bbr")  # 1.x dropped bbr2

    @property
    def client_cases(self) -> tuple[str, ...]:
        cases = ("resumption", "zerortt", "keyupdate", "chacha20", "connection-migration")
        return cases if self.debian else (*cases, "v2")

    @property
    def unsupported_as_client(self) -> dict[str, str]:
        if self.debian:
            return {"v2": "its QUIC v2 is the draft's (`--preferred-versions=v2draft` in 0.12.1), not RFC 9369's"}
        return {}

    @property
    def install_command(self) -> str:
        if self.debian:
            return "apt-get install -y ngtcp2-server ngtcp2-client (scripts/setup.sh)"
        return f"longlook stacks install {self.spec} (from bookworm-backports)"

    def program(self, name: str) -> str:
        if self.debian:
            return shutil.which(name) or name
        return str(backports.program(self.build_dir, name))

    def program_env(self) -> dict[str, str]:
        return {} if self.debian else {"LD_LIBRARY_PATH": backports.library_path(self.build_dir)}

    def installed(self) -> bool:
        if not self.debian:
            return backports.unpacked(self.build_dir)
        return bool(shutil.which(SERVER) and shutil.which(CLIENT))

    def install(self) -> None:
        if not self.debian:
            backports.fetch(self.version, self.build_dir)
        elif not self.installed():
            p = subprocess.run(
                ["apt-get", "install", "-y", "-qq", "ngtcp2-server", "ngtcp2-client"], capture_output=True, text=True
            )
            if p.returncode != 0:
                raise LonglookError(
                    f"installing {self.spec} failed: {p.stderr.strip()[-500:]}", hint=self.install_command
                )

    def version_info(self) -> str:
        if not self.debian:
            return f"{self.name}@{backports.PACKAGES[self.version]['ngtcp2-client']} (bookworm-backports)"
        p = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "ngtcp2-client"], capture_output=True, text=True)
        return f"{self.name}@{p.stdout.strip() or 'not installed'}"

    def server_argv(self, *, port, cert, key, root, qlog_dir, cc) -> ServerCall:
        return ServerCall(
            [
                self.program(SERVER),
                "-q",
                *qlog_flag(qlog_dir),
                f"--cc={cc}",
                "-d",
                str(root),
                *WINDOWS,
                SERVER_ADDR,
                str(port),
                str(key),
                str(cert),
            ],
            env=self.program_env(),
        )

    def client_argv(self, *, url, mode, ca, run_id, out, qlog_dir, timeout_s, cc) -> ClientCall:
        u = urlsplit(url)
        urls = [url] + [f"https://{u.netloc}{p}" for p in (object_paths(u.path) if mode == "page" else [])]
        download = out.parent / "client-download"
        download.mkdir(exist_ok=True)
        return ClientCall(
            [
                self.program(CLIENT),
                "-q",
                "--exit-on-all-streams-close",
                "--qlog-file",
                str(qlog_dir / "client.sqlog"),
                "--download",
                str(download),
                f"--cc={cc}",
                f"--timeout={int(timeout_s)}s",
                *WINDOWS,
                u.hostname,
                str(u.port or 443),
                *urls,
            ],
            env=self.program_env(),
        )

    def migration_flags(self, at_ms: float, to: str) -> tuple[str, ...]:
        # `to` is where the route will name: gtlsclient takes no address
        return (f"--change-local-addr={round(at_ms) + ROUTE_SETTLE_MS}ms",)

    def case_calls(self, case: str, call: ClientCall, state_dir: Path) -> CaseCalls | None:
        def asked(*flags: str) -> ClientCall:
            return call.with_flags(*flags, after=1)

        if case in ("resumption", "zerortt"):
            state_dir.mkdir(parents=True, exist_ok=True)
            files = (f"--session-file={state_dir / 'session.pem'}", f"--tp-file={state_dir / 'tp.pem'}")
            early = () if case == "zerortt" else ("--disable-early-data",)
            return CaseCalls(warmup=asked(*files), measured=asked(*files, *early))
        if case == "keyupdate":
            return CaseCalls(warmup=None, measured=asked(f"--key-update={KEY_UPDATE_AFTER}"))
        if case == "chacha20":
            return CaseCalls(warmup=None, measured=asked(f"--ciphers={CHACHA20_ONLY}"))
        if case == "connection-migration":  # the runner added migration_flags
            return CaseCalls(warmup=None, measured=call)
        if case == "v2" and "v2" in self.client_cases:
            return CaseCalls(warmup=None, measured=asked("--version=v2"))
        return None

    def with_keylog(self, call: ClientCall, keylog: Path) -> ClientCall:
        # gtlsclient has no flag; GnuTLS itself appends to $SSLKEYLOGFILE
        return ClientCall(call.argv, {**call.env, "SSLKEYLOGFILE": str(keylog)})

    def finish_fetch(self, *, url, mode, run_id, out, qlog_dir, returncode, stderr, started_unix_ms, wall_ms):
        u = urlsplit(url)
        paths = [u.path] + (object_paths(u.path) if mode == "page" else [])
        download = out.parent / "client-download"
        doc = fetch_document(
            qlog_dir / "client.sqlog",
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
        import json

        Path(out).write_text(json.dumps(doc))
