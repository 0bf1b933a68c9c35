"""A grid's size, known before it is expanded: each kind names the lists its `cells()`
crosses (`grid_axes()`), so a grid of 10^12 runs is refused with its size in microseconds
instead of hanging `scenario validate`, and an empty list (`proxy = []`) is an error
instead of an experiment of 0 runs."""

from __future__ import annotations

import math
from typing import Any

MAX_RUNS = 1_000_000  # about a year of one-second runs on one testbed
MAX_SWEEP = 1_000_000  # combinations one [[links]] or [[workloads]] entry may sweep


def check_size(scenario: Any) -> None:
    """ValueError (a validation error of the scenario) when the grid is empty or too large."""
    axes: dict[str, int] = dict(scenario.grid_axes())
    if scenario.client_cpu:
        axes["client_cpu"] = len(scenario.client_cpu)
    empty = [name for name, n in axes.items() if n == 0]
    if empty:
        raise ValueError(f"{empty[0]}: empty, so the grid has no cell; give at least one value")
    cells = math.prod(axes.values())
    arms = len(scenario.arm_list())
    runs = cells * scenario.rounds * arms
    if runs > MAX_RUNS:
        shape = " x ".join(f"{n:,} {name}" for name, n in axes.items() if n > 1) or "1 cell"
        raise ValueError(
            f"the grid has {cells:,} cells ({shape}) x {scenario.rounds} rounds x {arms} arms = "
            f"{runs:,} runs, more than the {MAX_RUNS:,} one experiment may plan; split it"
        )


def check_sweep(where: str, lengths: list[int]) -> None:
    """Before one table's list fields are crossed (core.validation.expand_sweep)."""
    n = math.prod(lengths)
    if n > MAX_SWEEP:
        raise ValueError(f"{where}: its lists sweep {n:,} combinations, more than {MAX_SWEEP:,}")


def duration_text(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"
