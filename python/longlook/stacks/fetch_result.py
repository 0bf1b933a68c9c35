"""What every client's run returns: a FetchResult (status, the client's JSON document, an
error, the wall time), read from the client's exit code and JSON by one rule (core.status),
whichever client ran (ours, a stack's, Chromium). The exit codes are the endpoint's
(docs/interfaces.md)."""

from __future__ import annotations

import json
import re
import signal
from dataclasses import dataclass
from pathlib import Path

# fetch's exit codes (docs/interfaces.md)
EXIT_OK = 0
EXIT_PROTOCOL_UNAVAILABLE = 3


# what a client that aborts says on its way out (Rust's allocator and panics, Go's runtime,
# C's assert): the why of a death by signal, where its last line is a backtrace's
ABORT_REASON = re.compile(
    r"memory allocation of \d+ bytes failed|panicked at|fatal error|assertion .*failed|Assertion .*failed"
)


def death(returncode: int, stderr: str | None) -> str:
    """`killed by signal N (NAME)`, and the line that says why when the client wrote one."""
    try:
        name = f" ({signal.Signals(-returncode).name})"
    except ValueError:
        name = ""
    why = next((line.strip() for line in (stderr or "").splitlines() if ABORT_REASON.search(line)), "")
    return f"killed by signal {-returncode}{name}" + (f": {why[:200]}" if why else "")


@dataclass
class FetchResult:
    """What one `endpoint fetch` produced, with how it ended."""

    status: str  # ok | failed | timeout | protocol_mismatch
    document: dict
    error: str | None
    wall_s: float


def fetch_result(
    out: Path,
    returncode: int,
    stderr: str | None,
    protocol: str | None,
    wall: float,
    *,
    timed_out: bool = False,
    protocol_unavailable: bool = False,
) -> FetchResult:
    """A client's exit and JSON document -> FetchResult, with the one status rule of
    core.status (shared by every client)."""
    from ..core.status import classify

    try:
        doc = json.loads(Path(out).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        # a killed client's last stderr line is whatever it last noted, not why it stopped
        err = (
            [death(returncode, stderr)]
            if returncode < 0
            else (stderr or "").strip().splitlines()[-1:] or [f"exit code {returncode}"]
        )
        return FetchResult("failed", {}, f"no JSON result: {err[0]}", wall)
    status = classify(
        ok=returncode == EXIT_OK and bool(doc.get("ok")),
        requested=protocol,
        negotiated=doc.get("protocol"),
        timed_out=timed_out,
        protocol_unavailable=protocol_unavailable,
    )
    errors = {
        "ok": None,
        "timeout": doc.get("error") or "timed out",
        "protocol_mismatch": doc.get("error") or f"requested {protocol}, negotiated {doc.get('protocol')}",
        "failed": doc.get("error") or f"exit code {returncode}",
    }
    return FetchResult(status, doc, errors[status], wall)
