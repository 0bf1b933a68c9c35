"""Running any stack in the testbed: its server in the server namespace (started by the pool
of stacks/servers.py, one per stack, version and congestion control), its client in the
client namespace for one fetch. The result follows `endpoint fetch` (status through core.status, via
fetch_result.fetch_result); the stack's qlogs are moved into the run directory, raw and
translated into our vocabulary (qlog/dialects.py)."""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import LonglookError
from ..testbed.processes import stop_child
from .endpoint import MOVING_CLIENT_CASES, migration_target, server_spki
from .fetch_result import EXIT_PROTOCOL_UNAVAILABLE, FetchResult, fetch_result

if TYPE_CHECKING:  # the contract (stacks/base.py) starts its servers through this module
    from .base import Stack

LOG_SETTLE_S = 3.0  # how long a server may take to write a connection's qlog after the client left


CERT_CONFIG = """[req]
distinguished_name = dn
x509_extensions = ext
prompt = no
[dn]
CN = longlook
[ext]
subjectAltName = IP:198.18.2.2, DNS:localhost, IP:127.0.0.1
basicConstraints = critical, CA:FALSE
"""


def ensure_cert(cert_dir: Path) -> tuple[Path, Path]:
    """cert.pem + key.pem as `endpoint serve` makes them (self-signed, not a CA: rustls refuses
    a CA certificate as a server's; SAN 198.18.2.2, localhost, 127.0.0.1), generated with
    openssl when no server made them yet."""
    cert, key = cert_dir / "cert.pem", cert_dir / "key.pem"
    if not (cert.exists() and key.exists()):
        cert_dir.mkdir(parents=True, exist_ok=True)
        config = cert_dir / "openssl.cnf"
        config.write_text(CERT_CONFIG)
        subprocess.run(
            [
                "openssl",
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-keyout",
                str(key),
                "-out",
                str(cert),
                "-days",
                "365",
                "-config",
                str(config),
            ],
            check=True,
            capture_output=True,
        )
        config.unlink()
    return cert, key


def _spki(cert: Path) -> str:
    """The certificate's SPKI pin for Chromium, "" when unavailable."""
    try:
        return server_spki(cert)
    except (LonglookError, OSError, subprocess.TimeoutExpired):
        return ""


def _udp_listening(testbed, port: int) -> bool:
    p = subprocess.run(
        testbed.exec_argv("server", ["ss", "-Hnul", f"sport = :{port}"], as_party=False),
        capture_output=True,
        text=True,
        timeout=10,
    )
    return bool(p.stdout.strip())


@dataclass
class StackServer:
    """A stack's server running in the server namespace until stopped."""

    stack: "Stack"
    cc: str
    process: subprocess.Popen
    qlog_dir: Path
    stderr_path: Path
    spki: str = ""
    logs: bool = True  # False: started without its qlog (a scenario's server_logs = false)
    _taken: set[str] = field(default_factory=set)

    @classmethod
    def start(
        cls,
        testbed,
        stack: "Stack",
        cc: str,
        *,
        port: int,
        cert_dir: Path,
        root: Path,
        log_dir: Path,
        timeout_s: float = 20.0,
        case: str | None = None,
        logs: bool = True,
    ) -> "StackServer":
        cert, key = ensure_cert(cert_dir)
        qlog_dir = log_dir / "qlog"
        qlog_dir.mkdir(parents=True, exist_ok=True)
        # logs off: no qlog at all, whose writing would count as the stack's CPU and time
        call = stack.server_argv(port=port, cert=cert, key=key, root=root, qlog_dir=qlog_dir if logs else None, cc=cc)
        if case is not None:
            asked = stack.server_case_call(case, call)
            if asked is None:
                can = ", ".join(stack.server_cases) or "none"
                raise LonglookError(
                    f"{stack.spec}'s server cannot be started for {case}", hint=f"it can be started for: {can}"
                )
            call = asked
        stderr_path = log_dir / "server.stderr"
        proc = testbed.popen(
            "server",
            call.argv,
            stdout=subprocess.PIPE,
            stderr=open(stderr_path, "ab"),
            text=True,
            env={**os.environ, **call.env},
        )
        server = cls(stack=stack, cc=cc, process=proc, qlog_dir=qlog_dir, stderr_path=stderr_path, logs=logs)
        server._wait_ready(testbed, port, call.prints_ready, timeout_s)
        server.spki = _spki(cert)
        return server

    def _wait_ready(self, testbed, port: int, prints_ready: bool, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise LonglookError(
                    f"the {self.stack.spec} server exited with code {self.process.returncode} before it was ready",
                    hint=f"see {self.stderr_path}",
                )
            if prints_ready:
                ready, _, _ = select.select([self.process.stdout], [], [], 0.2)
                if ready and self.process.stdout.readline().startswith("ready"):
                    return
            elif _udp_listening(testbed, port):
                return
            else:
                time.sleep(0.1)
        self.stop()
        raise LonglookError(
            f"the {self.stack.spec} server was not ready within {timeout_s:.0f} s", hint=f"see {self.stderr_path}"
        )

    @property
    def log_dir(self) -> Path:
        return self.stderr_path.parent

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        stop_child(self.process)

    def take_logs(self, run_id: str, dest: Path) -> dict[str, str]:
        """Move the qlogs of the connections made since the last call into `dest` (runs are
        sequential per server): the last one as `qlog` (translated) + `qlog_raw`, earlier
        ones (a 0-RTT warm-up) as `qlog_warmup_raw`. Returns artifact names -> files."""
        settle = LOG_SETTLE_S if self.stack.writes_qlog and self.logs else 0.0
        files = _settled_new_files(self.qlog_dir, self._taken, settle)
        return _move_logs(self.stack, files, dest, "server")

    def take_artifacts(self, run_id: str, dest: Path, *, unlabelled_since_ms: float | None = None) -> dict[str, str]:
        """stacks.servers.Server: its logs are new files since the last call, whatever the client."""
        return self.take_logs(run_id, dest)


def _settled_new_files(directory: Path, taken: set[str], wait_s: float) -> list[Path]:
    """Files not yet taken, once their sizes stopped changing (a log written at close)."""
    deadline = time.monotonic() + wait_s
    sizes: dict[str, int] = {}
    while True:
        new = sorted(
            (p for p in directory.iterdir() if p.is_file() and p.name not in taken), key=lambda p: p.stat().st_mtime
        )
        now = {p.name: p.stat().st_size for p in new}
        if new and now == sizes and all(now.values()):
            break
        if time.monotonic() > deadline:
            break
        sizes = now
        time.sleep(0.2)
    taken.update(p.name for p in new)
    return new


def _move_logs(stack: "Stack", files: list[Path], dest: Path, side: str) -> dict[str, str]:
    dest.mkdir(parents=True, exist_ok=True)
    arts: dict[str, str] = {}
    prefix = "" if side == "server" else "client_"
    for i, f in enumerate(files):
        last = i == len(files) - 1
        raw = dest / f"{side}-{stack.name}{'' if last else f'-{i}'}{''.join(f.suffixes)}"
        f.rename(raw)
        if last:
            arts[f"{prefix}qlog_raw"] = raw.name
            ours = dest / f"{side}.sqlog"
            try:
                stack.normalise_qlog(raw, ours)
                arts[f"{prefix}qlog"] = ours.name
            except (ValueError, OSError) as e:  # a log cut short: keep the raw one, say why
                (dest / f"{side}-qlog-error.txt").write_text(f"{raw.name}: {e}\n")
        else:
            arts[f"{prefix}qlog_warmup_raw"] = raw.name
    return arts


def _run_client(testbed, call, timeout_s: float) -> tuple[int, str, bool]:
    """Run a stack's client in the client namespace: its exit code, stderr and whether it
    ran past the timeout."""
    try:
        proc = subprocess.run(
            testbed.exec_argv("client", call.argv),
            capture_output=True,
            text=True,
            timeout=timeout_s + 5,
            env={**os.environ, **call.env},
        )
        return proc.returncode, proc.stderr, False
    except subprocess.TimeoutExpired as e:
        err = e.stderr
        return 124, (err.decode(errors="replace") if isinstance(err, bytes) else (err or "")), True


def stack_fetcher(stack: "Stack", cc: str | None = None, logs: bool = True):
    """A fetch function (the signature of endpoint.fetch) running `stack`'s client; without
    `logs` its client writes no qlog, unless its run is read from it (Stack.fetch_from_qlog)."""
    stack.require(cc)
    cc = stack.cc(cc)
    logs = logs or stack.fetch_from_qlog

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
        keylog: Path | None = None,
        client_case: str | None = None,
    ) -> FetchResult:
        qlog_dir = out.parent / "client-qlog"
        qlog_dir.mkdir(parents=True, exist_ok=True)
        call = stack.client_argv(
            url=url,
            mode=mode,
            ca=cert_dir / "cert.pem",
            run_id=run_id,
            out=out,
            qlog_dir=qlog_dir if logs else None,
            timeout_s=timeout_s,
            cc=cc,
        )
        if keylog is not None:  # a client that cannot write one runs as it is (no key log file)
            call = stack.with_keylog(call, keylog) or call
        if client_case in MOVING_CLIENT_CASES:  # where and when to move, in the stack's own flags
            target = migration_target(testbed)
            if target is None:
                return FetchResult("failed", {}, f"{client_case} needs a link with a handover to move across", 0.0)
            call = call.with_flags(*stack.migration_flags(*target))
        if client_case is not None:  # asked for an interop case: maybe a first connection, then this one
            calls = stack.case_calls(client_case, call, out.parent / "client-state")
            if calls is None:
                return FetchResult("failed", {}, f"{stack.spec}'s client cannot be asked for {client_case}", 0.0)
            if calls.warmup is not None:
                _, stderr, _ = _run_client(testbed, calls.warmup, timeout_s)
                (out.parent / "client-warmup.stderr").write_text(stderr[-200_000:] if stderr else "")
                if out.exists():  # the measured connection writes its own
                    out.rename(out.parent / "fetch-warmup.json")
            call = calls.measured
        started_ms, started = int(time.time() * 1000), time.monotonic()
        rc, stderr, timed_out = _run_client(testbed, call, timeout_s)
        wall = time.monotonic() - started
        (out.parent / "client.stderr").write_text(stderr[-200_000:] if stderr else "")
        testbed.check()
        stack.finish_fetch(
            url=url,
            mode=mode,
            run_id=run_id,
            out=out,
            qlog_dir=qlog_dir,
            returncode=rc,
            stderr=stderr,
            started_unix_ms=started_ms,
            wall_ms=wall * 1000,
        )
        arts = _move_logs(stack, _settled_new_files(qlog_dir, set(), 0.5), out.parent, "client")
        qlog_dir.rmdir() if not any(qlog_dir.iterdir()) else None
        result = fetch_result(
            out, rc, stderr, protocol, wall, timed_out=timed_out, protocol_unavailable=rc == EXIT_PROTOCOL_UNAVAILABLE
        )
        if result.document:
            doc = result.document
            doc.setdefault("client", stack.spec)
            doc["artifacts"] = {**(doc.get("artifacts") or {}), **arts}
            out.write_text(json.dumps(doc))
        return result

    return fetch
