"""Versions of the project's own binaries, recorded with every experiment."""

from __future__ import annotations

import subprocess

from .binaries import find_binary
from .errors import LonglookError


def binary_version(name: str) -> str:
    """`NAME --version`'s first line, or why it could not be read."""
    try:
        path = find_binary(name)
        out = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=10)
        return (out.stdout.strip().splitlines() or [f"exit {out.returncode}"])[0]
    except (LonglookError, OSError, subprocess.TimeoutExpired) as e:
        return f"unknown ({e})"
