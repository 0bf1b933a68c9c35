"""This machine: no executor object; the Runner's own per-cell loop runs the grid on the
local testbed (core.execute.Runner.run_cells)."""

from __future__ import annotations


def local(address: str | None = None) -> None:
    """The local executor is the Runner's default: None."""
    return None
