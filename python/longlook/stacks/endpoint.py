"""The native endpoint (crates/endpoint) as the runner drives it: the server inside the server
namespace, one `endpoint fetch` process per run inside the client namespace.

The command lines and JSON are specified in docs/interfaces.md.
"""

from __future__ import annotations

import functools
import json
import select
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..binaries import find_binary
from ..errors import LonglookError
from ..linkprofile import HANDOVER_CLIENT_ADDR
from ..testbed.processes import stop_child
from .fetch_result import EXIT_PROTOCOL_UNAVAILABLE, FetchResult, fetch_result

SERVER_ADDR = "198.18.2.2"
# the interop cases (stacks.base.CLIENT_CASES) the native client can be asked for, by its flags:
# a key update 50 ms after the handshake (beyond a round trip at the matrix's RTT, so the
# handshake is confirmed as RFC 9001 §6.1 asks, while the page is still arriving), and
# ChaCha20-Poly1305 offered alone. Resumption and 0-RTT are its `zero_rtt` arms (a warm-up
# connection in the same process).
NATIVE_CASE_ARGV = {"keyupdate": ("--key-update-after-ms", "50"), "chacha20": ("--chacha20",)}
# and what it cannot do, with why (the matrix shows these apart from failures)
NATIVE_UNSUPPORTED = {"v2": "quinn 0.11 speaks QUIC version 1 only"}
CLIENT_QLOG = "client.sqlog"  # beside fetch.json: the native client's trace of its QUIC connection
SERVER_KEYLOG = "keys.log"  # in a server's log directory: the secrets of all its connections


@dataclass(frozen=True)
class ServerOptions:
    """What the server side of a cell is configured with. A change restarts the server."""

    quic_cc: str = "cubic"
    max_cwnd_packets: int | None = None
    initial_window_packets: int | None = None
    n_conn: int | None = None
    pacing: bool = True
    tcp_cc: str = "cubic"
    qlog: bool = True
    tcp_tracefs: str | None = None  # exact TCP state transitions from tcp_cong_state_set
    keylog: bool = False  # TLS secrets of all its connections in <log dir>/keys.log ([capture])
    udp_buffer: int = 0  # UDP socket buffers sized to the path (testbed/buffers.py); 0 = kernel's
    ecn: bool = True  # False: its QUIC datagrams are sent not-ECT (quinn marks ECT(0))
    retry: bool = False  # a Retry to every Initial from an address not yet validated

    def argv(self) -> list[str]:
        args = ["--cc", self.quic_cc, "--tcp-cc", self.tcp_cc, "--pacing", "on" if self.pacing else "off"]
        if self.max_cwnd_packets:
            args += ["--max-cwnd-packets", str(self.max_cwnd_packets)]
        if self.initial_window_packets:
            args += ["--initial-window-packets", str(self.initial_window_packets)]
        if self.n_conn:
            args += ["--n-conn", str(self.n_conn)]
        if not self.qlog:
            args.append("--no-qlog")
        if self.tcp_tracefs:
            args += ["--tcp-tracefs", self.tcp_tracefs]
        if self.udp_buffer:
            args += ["--udp-buffer", str(self.udp_buffer)]
        if not self.ecn:
            args.append("--no-ecn")
        if self.retry:
            args.append("--retry")
        return args


def server_spki(cert_pem: Path) -> str:
    """base64 SHA-256 of the certificate's SubjectPublicKeyInfo (`endpoint spki`), for
    Chromium's pin; cached per certificate file and modification."""
    if not Path(cert_pem).is_file():
        raise LonglookError(
            f"no server certificate at {cert_pem}", hint="the endpoint server writes it when it first starts"
        )
    return _spki(str(cert_pem), Path(cert_pem).stat().st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _spki(cert_pem: str, _mtime_ns: int) -> str:  # a regenerated certificate is a new key
    out = subprocess.run(
        [str(find_binary("endpoint")), "spki", "--cert", str(cert_pem)], capture_output=True, text=True, timeout=10
    )
    if out.returncode != 0 or not out.stdout.strip():
        raise LonglookError(f"`endpoint spki --cert {cert_pem}` failed: {out.stderr.strip()}")
    return out.stdout.strip()


def log_artifacts(names: list[str]) -> dict[str, str]:
    """A run's artifact keys for the server logs it took: the QUIC connection's qlog
    (`qlog`), the TCP connection's log (`tcp_log`), anything else by its own name. The
    analyses (states, fallback) look the traces up by these keys."""
    return {("tcp_log" if n.endswith(".tcp.sqlog") else "qlog" if n.endswith(".sqlog") else n): n for n in names}


@dataclass
class EndpointServer:
    """`endpoint serve` running in the server namespace until stopped."""

    process: subprocess.Popen
    log_dir: Path
    spki: str
    options: ServerOptions
    _consumed_connections: int = field(default=0)

    @classmethod
    def start(
        cls,
        testbed,
        options: ServerOptions,
        *,
        port: int,
        cert_dir: Path,
        log_dir: Path,
        timeout_s: float = 15.0,
        binary: Path | None = None,
    ) -> "EndpointServer":
        """`binary`: another build of the endpoint (ours@VERSION); default the workspace's."""
        log_dir.mkdir(parents=True, exist_ok=True)
        argv = [
            str(binary or find_binary("endpoint")),
            "serve",
            "--listen",
            f"0.0.0.0:{port}",
            "--cert-dir",
            str(cert_dir),
            "--log-dir",
            str(log_dir),
            *options.argv(),
        ]
        if options.keylog:
            argv += ["--keylog", str(log_dir / SERVER_KEYLOG)]
        proc = testbed.popen(
            "server", argv, stdout=subprocess.PIPE, stderr=open(log_dir / "server.stderr", "ab"), text=True
        )
        spki = wait_for_ready(proc, timeout_s, log_dir / "server.stderr")
        return cls(process=proc, log_dir=log_dir, spki=spki, options=options)

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        stop_child(self.process)

    def take_logs(self, run_id: str, dest: Path) -> list[str]:
        """Move the server's log files of `run_id`'s connections into `dest`.

        A rename is safe while the server still writes (same inode), so no waiting here.
        """
        index = self.log_dir / "connections.jsonl"
        if not index.exists():
            return []
        moved = []
        for line in index.read_text().splitlines():
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line being written right now
            if entry.get("run_id") != run_id:
                continue
            for f in self.log_dir.glob(f"{entry['conn']}*"):
                dest.mkdir(parents=True, exist_ok=True)
                target = dest / f.name
                f.rename(target)
                moved.append(target.name)
        return moved

    def take_artifacts(self, run_id: str, dest: Path, *, unlabelled_since_ms: float | None = None) -> dict[str, str]:
        """stacks.servers.Server: the run's logs as artifacts (log_artifacts); with
        `unlabelled_since_ms` (a client that cannot send the run header, Stack.sends_run_header)
        the unlabelled connections since then when none was labelled. A server without
        logs (`--no-qlog`) has none to give."""
        if not self.options.qlog:
            return {}
        taken = self.take_logs(run_id, dest)
        if not taken and unlabelled_since_ms is not None:
            taken = self.take_unlabelled(dest, int(unlabelled_since_ms))
        return log_artifacts(taken)

    def take_unlabelled(self, dest: Path, since_unix_ms: int, wait_s: float = 3.0) -> list[str]:
        """Move the logs of the connections that named no run and started at or after
        `since_unix_ms` (the fetch's start) into `dest`: clients that cannot send the run
        header (Stack.sends_run_header). One client runs at a time per testbed, so those are
        this run's. Their index line is written at close, so wait up to `wait_s` for it."""
        index = self.log_dir / "connections.jsonl"
        deadline = time.monotonic() + wait_s
        while True:
            stems = []
            for line in index.read_text().splitlines() if index.exists() else []:
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line being written right now
                if entry.get("run_id") is None and entry.get("start_unix_ms", 0) >= since_unix_ms:
                    stems.append(entry["conn"])
            files = [f for stem in stems for f in self.log_dir.glob(f"{stem}*")]
            if files or time.monotonic() >= deadline:
                break
            time.sleep(0.1)
        moved = []
        for f in files:
            dest.mkdir(parents=True, exist_ok=True)
            f.rename(dest / f.name)
            moved.append(f.name)
        return moved


def wait_for_ready(proc: subprocess.Popen, timeout_s: float, stderr_path: Path) -> str:
    """Until an endpoint process (serve, proxy) prints `ready [spki=...]`: its SPKI pin ("" if
    none), or one clear error when it exits or stays silent."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise LonglookError(
                f"the endpoint server exited with code {proc.returncode} before it was ready", hint=f"see {stderr_path}"
            )
        ready, _, _ = select.select([proc.stdout], [], [], 0.2)
        if ready:
            line = proc.stdout.readline()
            if line.startswith("ready"):
                for word in line.split():
                    if word.startswith("spki="):
                        return word.removeprefix("spki=")
                return ""
    proc.kill()
    raise LonglookError(f"the endpoint server was not ready within {timeout_s:.0f} s", hint=f"see {stderr_path}")


# the interop cases asked of a client on a link that moves it (a handover): a stack's client is
# told where and when to go by the native client's flags (migration_argv; stacks/runner.py)
MOVING_CLIENT_CASES = ("connection-migration",)


def _handover(testbed):
    return getattr(getattr(testbed, "profile", None), "handover", None)


def native_migration_flags(at_ms: float, to: str) -> list[str]:
    """Our client's flags to move its connection to address `to`, `at_ms` after its first packet."""
    return ["--migrate-at-ms", f"{at_ms:g}", "--migrate-to", to]


def migration_target(testbed) -> tuple[float, str] | None:
    """On a link with a handover: when the client moves (ms after its first packet) and to
    which address; None on a link without one."""
    handover = _handover(testbed)
    return None if handover is None else (handover.migrate_at_ms(), HANDOVER_CLIENT_ADDR)


def migration_argv(testbed, protocol: str) -> list[str]:
    """On a link with a handover the client moves when it is told its first path went down
    (linkprofile.Handover): QUIC moves its connection; TCP reconnects from the new address and
    resumes with range requests where the handover says `tcp_reconnect`, else stays on its
    connection and dies with its path."""
    handover = _handover(testbed)
    if handover is None or protocol not in ("h3", "h2") or (protocol == "h2" and not handover.tcp_reconnect):
        return []
    return native_migration_flags(handover.migrate_at_ms(), HANDOVER_CLIENT_ADDR)


def fetch(
    testbed,
    *,
    url: str,
    protocol: str,
    run_id: str,
    cert_dir: Path,
    out: Path,
    timeout_s: float,
    mode: str = "page",
    zero_rtt: bool = False,
    race_argv: list[str] | None = None,
    keylog: Path | None = None,
    binary: Path | None = None,
    ecn: bool = True,
    client_case: str | None = None,
    qlog: bool = True,
) -> FetchResult:
    """One run of the native client in the client namespace. With `zero_rtt` the client
    first makes an unmeasured connection for a session ticket, then measures a 0-RTT one.
    protocol "race" is the QUIC-enabled racing client (its flags in `race_argv`); it asks
    for no particular protocol, so whatever served the page is recorded, never a mismatch.
    `keylog`: the TLS secrets of its connections are appended there (NSS key log format).
    `binary`: another build of the endpoint (ours@VERSION); default the workspace's.
    `ecn` False: its QUIC datagrams are sent not-ECT. `client_case`: an interop case it is
    asked for (NATIVE_CASE_ARGV)."""
    argv = [
        str(binary or find_binary("endpoint")),
        "fetch",
        "--url",
        url,
        "--proto",
        protocol,
        "--mode",
        mode,
        "--ca",
        str(cert_dir / "cert.pem"),
        "--run-id",
        run_id,
        "--out",
        str(out),
        "--timeout-s",
        str(timeout_s),
        *(race_argv or []),
    ]
    if zero_rtt:
        argv.append("--zero-rtt")
    if client_case is not None:
        if client_case not in NATIVE_CASE_ARGV:
            raise LonglookError(
                f"the native client cannot be asked for {client_case}", hint=f"it can: {', '.join(NATIVE_CASE_ARGV)}"
            )
        argv += NATIVE_CASE_ARGV[client_case]
    if qlog and protocol in ("h3", "race"):  # the measured QUIC connection's client-side trace
        argv += ["--qlog", str(out.parent / CLIENT_QLOG)]
    if keylog is not None:
        argv += ["--keylog", str(keylog)]
    if not ecn:
        argv.append("--no-ecn")
    argv += migration_argv(testbed, protocol)
    buffers = getattr(testbed, "host_buffers", None)  # sized to the path (testbed/buffers.py)
    if buffers is not None and protocol == "h3":
        argv += ["--udp-buffer", str(buffers.udp_bytes)]
    started = time.monotonic()
    # Not testbed.run: a timeout or a non-zero exit is this run's outcome, not a testbed fault.
    try:
        proc = subprocess.run(testbed.exec_argv("client", argv), capture_output=True, text=True, timeout=timeout_s + 5)
    except subprocess.TimeoutExpired:
        testbed.check()
        return FetchResult("timeout", {}, f"no result within {timeout_s + 5:.0f} s", time.monotonic() - started)
    wall = time.monotonic() - started
    testbed.check()  # a result obtained over a dead link is not a result
    return fetch_result(
        out,
        proc.returncode,
        proc.stderr,
        None if protocol == "race" else protocol,
        wall,
        protocol_unavailable=proc.returncode == EXIT_PROTOCOL_UNAVAILABLE,
    )
