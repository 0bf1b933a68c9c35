"""kwik + flupke (Java; Maven Central `tech.kwik:kwik`, `tech.kwik:flupke`): kwik is a QUIC
stack in the QUIC interop runner, flupke its HTTP/3 layer. This folder holds a small Maven
project (pom.xml, src/) with a file server and a page-load client, built once per version
(`mvn package` and the runtime jars) under the build directory; Maven's own cache is ~/.m2.

Pinned: kwik 0.10.8 with flupke 0.9.4 (flupke's own kwik; kwik 0.10.9 needs agent15 3.2,
which Maven Central does not serve). Congestion control: NewReno, kwik's only one. qlog:
kwik publishes its events through its `QLog` interface, but its writer (the `tech.kwik.qlog`
module) is not on Maven Central: `src/main/java/tech/kwik/qlog/QLogFrontEnd.java` writes one
JSON-SEQ file per connection (packets with frames, window and RTT metrics, losses; no
ssthresh or state events: the states are derived). The client writes a key log (kwik's
`secrets`), and does not verify the server's certificate (kwik matches names against DNS
SANs only; the testbed's certificate names an IP address). Each fetch is a fresh JVM, as
every other client is a fresh process: its handshake includes the JVM's class loading."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from ....errors import LonglookError
from ...base import CaseCalls, ClientCall, ServerCall, Stack, fetch_args, qlog_flag, serve_args

FLUPKE = "0.9.4"


class Kwik(Stack):
    name = "kwik"
    # built with Maven on a JDK
    apt_needs = ("maven", "openjdk-17-jdk-headless")
    versions = ("0.10.8",)
    ccs = ("newreno",)
    # its client (src/.../Fetch.java) is asked for these by its flags (case_calls)
    client_cases = ("resumption", "keyupdate", "chacha20", "v2")
    server_case_flags = {"retry": ("--retry", "always")}  # Serve.java: ServerConnectionConfig.retryRequired
    unsupported_as_client = {
        "zerortt": "flupke's HTTP/3 client sends its requests after the handshake: kwik takes early data "
        "only as raw streams given to connect()",
        "connection-migration": "kwik 0.10.8's one call, QuicClientConnectionImpl.changeAddress(), gives the "
        "sender a new socket and keeps the connection ID (SenderImpl.changeAddress sets the socket only): a "
        "NAT rebinding as the server sees it, not a migration, whose new path takes an unused ID (RFC 9000 9.5)",
    }

    @property
    def jar(self) -> Path:
        return self.build_dir / "longlook-kwik.jar"

    @property
    def binary(self) -> Path:
        """What `versions.stack_binaries` digests: our jar (kwik's own jars are pinned by version)."""
        return self.jar

    def version_info(self) -> str:
        return f"{self.spec} (flupke {FLUPKE})"

    def _sources(self, root: Path) -> dict[str, bytes]:
        files = [root / "pom.xml", *sorted((root / "src").rglob("*.java"))]
        return {str(p.relative_to(root)): p.read_bytes() for p in files if p.is_file()}

    def installed(self) -> bool:
        """Built from this checkout's sources (a changed source means a rebuild)."""
        built = self.build_dir / "src"
        return (
            self.jar.is_file()
            and (self.build_dir / "lib").is_dir()
            and built.is_dir()
            and self._sources(self.folder) == self._sources(built)
        )

    def install(self) -> None:
        if self.installed():
            return
        for tool in ("mvn", "java"):
            if not shutil.which(tool):
                raise LonglookError(
                    f"{self.spec} needs {tool} to build",
                    hint=f"apt-get install maven openjdk-17-jdk-headless, then `{self.install_command}`",
                )
        src = self.build_dir / "src"
        shutil.rmtree(src, ignore_errors=True)
        shutil.rmtree(self.build_dir / "lib", ignore_errors=True)
        src.mkdir(parents=True)
        shutil.copy(self.folder / "pom.xml", src / "pom.xml")
        shutil.copytree(self.folder / "src", src / "src")
        p = subprocess.run(
            [
                "mvn",
                "-B",
                "-q",
                "package",
                "dependency:copy-dependencies",
                "-DincludeScope=runtime",
                f"-DoutputDirectory={self.build_dir / 'lib'}",
                f"-Dkwik.version={self.version}",
            ],
            cwd=src,
            capture_output=True,
            text=True,
            env={**os.environ},
        )
        if p.returncode != 0:
            raise LonglookError(
                f"building {self.spec} failed: {(p.stdout + p.stderr).strip()[-800:]}",
                hint=f"needs Maven Central (mvn) and Java 17; retry `{self.install_command}`",
            )
        shutil.copy(src / "target" / "longlook-kwik-0.1.0.jar", self.jar)
        shutil.rmtree(src / "target", ignore_errors=True)

    def _java(self, *args: str) -> list[str]:
        # a small heap and one GC thread: client and server share the testbed's two cores
        return [
            "java",
            "-Xss512k",
            "-XX:+UseSerialGC",
            "-cp",
            f"{self.jar}:{self.build_dir / 'lib'}/*",
            "longlook.kwik.Main",
            *args,
        ]

    def server_argv(self, *, port, cert, key, root, qlog_dir, cc) -> ServerCall:
        return ServerCall(
            self._java(
                "serve",
                "--listen-port",
                str(port),
                *serve_args(cert=cert, key=key, root=root),
                *qlog_flag(qlog_dir),
            ),
            env={},
            prints_ready=True,
        )

    def client_argv(self, *, url, mode, ca, run_id, out, qlog_dir, timeout_s, cc) -> ClientCall:
        return ClientCall(
            self._java(
                "fetch",
                *fetch_args(url=url, mode=mode, ca=ca, run_id=run_id, out=out, timeout_s=timeout_s),
                *qlog_flag(qlog_dir),
            ),
            env={},
        )

    def with_keylog(self, call: ClientCall, keylog: Path) -> ClientCall:
        return ClientCall([*call.argv, "--keylog", str(keylog)], call.env)  # kwik's `secrets` (NSS key log)

    def case_calls(self, case: str, call: ClientCall, state_dir: Path) -> CaseCalls | None:
        asked = call.with_flags
        if case == "resumption":  # the first connection keeps its newest ticket, the second resumes with it
            state_dir.mkdir(parents=True, exist_ok=True)
            ticket = ("--ticket-file", str(state_dir / "ticket.bin"))
            return CaseCalls(warmup=asked(*ticket), measured=asked(*ticket))
        if case == "keyupdate":  # within a page's transfer, after the handshake
            return CaseCalls(warmup=None, measured=asked("--key-update-after-ms", "50"))
        if case == "chacha20":
            return CaseCalls(warmup=None, measured=asked("--cipher", "chacha20"))
        if case == "v2":
            return CaseCalls(warmup=None, measured=asked("--version", "v2"))
        return None
