"""One `endpoint fetch --mode session` process in the client namespace: one connection over
the requested protocol, GETs sent one at a time through its stdin, each answered by a JSON
line (the object's timing) on its stdout; its final report (protocol negotiated, local
address) is written to `--out` when stdin closes (docs/interfaces.md, endpoint)."""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from ....binaries import find_binary
from ....stacks.endpoint import migration_argv
from ....stacks.fetch_result import fetch_result


class SessionError(Exception):
    """The session broke: the connection failed, timed out or the client exited."""


@dataclass
class ObjectFetch:
    path: str
    status: int
    bytes: int
    start_ms: float  # ms from the connection's first packet
    first_byte_ms: float
    end_ms: float
    protocol: str | None = None  # what served it (the racing client says; else the session's)


class EndpointSession:
    def __init__(
        self,
        testbed,
        *,
        url: str,
        protocol: str,
        run_id: str,
        cert_dir: Path,
        out: Path,
        timeout_s: float,
        stderr_path: Path,
        race_argv: list[str] | None = None,
        keylog: Path | None = None,
        binary: Path | None = None,
        ecn: bool = True,
    ):
        # `binary`: another build of the endpoint (ours@VERSION); default the workspace's;
        # `ecn` False: its QUIC datagrams are sent not-ECT
        argv = [
            str(binary or find_binary("endpoint")),
            "fetch",
            "--url",
            url,
            "--proto",
            protocol,
            "--mode",
            "session",
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
        if keylog is not None:  # [capture] keylog
            argv += ["--keylog", str(keylog)]
        if not ecn:
            argv.append("--no-ecn")
        argv += migration_argv(testbed, protocol)  # a link with a handover: the client moves
        self.protocol = protocol
        self.out = out
        self.started = time.monotonic()
        self._stderr = open(stderr_path, "w")
        self.proc = testbed.popen(
            "client", argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, text=True, bufsize=1
        )
        self.handshake_ms: float | None = None
        self.ready_s: float | None = None  # monotonic, when the connection was up

    def wait_ready(self, timeout_s: float) -> None:
        line = self._line(timeout_s)
        doc = json.loads(line)
        self.handshake_ms = doc.get("handshake_ms")
        self.ready_s = time.monotonic()

    def get(self, path: str, timeout_s: float) -> ObjectFetch:
        try:
            self.proc.stdin.write(path + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise SessionError(self._why("the client exited")) from None
        doc = json.loads(self._line(timeout_s))
        return ObjectFetch(**{k: doc[k] for k in ObjectFetch.__dataclass_fields__ if k in doc})

    def cpu_s(self) -> float | None:
        """CPU time (user + system) the client process used so far."""
        try:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            return None

    def close(self, timeout_s: float = 10.0):
        """End the session; the client's final report as a FetchResult (status, document)."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._stderr.close()
        stderr = Path(self._stderr.name).read_text(errors="replace")
        # the racing client asks for no protocol: what served it is recorded, not a mismatch
        return fetch_result(
            self.out,
            self.proc.returncode,
            stderr,
            None if self.protocol == "race" else self.protocol,
            time.monotonic() - self.started,
            protocol_unavailable=self.proc.returncode == 3,
        )

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def _line(self, timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise SessionError(f"no answer from the client within {timeout_s:.0f} s")
            ready, _, _ = select.select([self.proc.stdout], [], [], min(left, 0.5))
            if ready:
                line = self.proc.stdout.readline()
                if not line:
                    raise SessionError(self._why("the client exited"))
                return line
            if self.proc.poll() is not None:
                raise SessionError(self._why("the client exited"))

    def _why(self, what: str) -> str:
        self._stderr.flush()
        tail = Path(self._stderr.name).read_text(errors="replace").strip().splitlines()[-1:]
        return f"{what}: {tail[0]}" if tail else what
