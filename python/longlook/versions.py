"""longlook's own version and those of the project's binaries, recorded with every
experiment. The version lives here, not in the package root, so no module imports the root
(a contract in pyproject.toml keeps it so)."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from .binaries import find_binary
from .errors import LonglookError

__version__ = "0.1.0"


def binary_version(name: str) -> str:
    """`NAME --version`'s first line and the binary's digest: two builds of one crate version
    (a changed knob, a patched stack) are told apart in `longlook compare`."""
    try:
        path = find_binary(name)
        out = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=10)
        line = (out.stdout.strip().splitlines() or [f"exit {out.returncode}"])[0]
        return f"{line} (sha256 {file_digest(path)})"
    except (LonglookError, OSError, subprocess.TimeoutExpired) as e:
        return f"unknown ({e})"


def file_digest(path: Path, length: int = 12) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()[:length]


def source_commit() -> str | None:
    """The git commit of the checkout this package runs from, "+dirty" when its tracked files
    differ from it; None outside a checkout. Recorded per experiment so a published result
    names the code that measured it."""
    root = Path(__file__).resolve().parents[2]
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.TimeoutExpired):
        return None
