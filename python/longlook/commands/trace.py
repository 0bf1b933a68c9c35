"""`longlook trace generate`: bandwidth traces (mahimahi format)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

trace_app = typer.Typer(no_args_is_help=True, help="Bandwidth traces (mahimahi format).")


@trace_app.callback()
def _trace() -> None:
    """Bandwidth traces (mahimahi format)."""


@trace_app.command("generate")
def trace_generate(
    pattern: str = typer.Argument(..., help="incr, decr, dh, dl or dvl (Chaudhary et al., Table 3)"),
    out: Path = typer.Option(..., "--out", help="trace file to write"),
    duration: Optional[float] = typer.Option(None, "--duration", help="seconds (default: one cycle)"),
    hold: Optional[float] = typer.Option(None, "--hold", help="seconds per level (default: the paper's)"),
) -> None:
    """Write a mahimahi trace of one of the paper's bandwidth patterns."""
    from ..errors import check_output
    from ..traces import generate, pattern as find_pattern

    check_output(out, "--out")
    p = find_pattern(pattern)
    lines = generate(pattern, out, duration, hold)
    print(f"{out}: {p.name}, {lines} delivery opportunities")


def register(app: typer.Typer) -> None:
    app.add_typer(trace_app, name="trace")
