"""`longlook calibrate fig2` (Kakhki Fig. 2: what an untuned MACW costs) and `longlook
calibrate search` (our server's knob values, MACW by default, that match a reference
experiment). The library
behind them is `longlook.analyses.calibrate`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import List, Optional

import typer

from ..errors import check_output

calibrate_app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    help="Calibrate our QUIC server (Kakhki §4.1): Fig. 2, and a knob search against a reference.",
)


def _progress(event: str, **info) -> None:
    """One line per finished run or trial, on stderr (stdout carries the results)."""
    if event == "run" and info.get("final"):
        extra = f" ({info['error']})" if info.get("error") else ""
        print(
            f"  {info['arm']} round {info['round']}: {info['status']} {info.get('text') or ''}{extra}", file=sys.stderr
        )
    elif event == "link_checked":
        print(f"  link self-check: {info['summary']}", file=sys.stderr)
    elif event == "trial":
        pairs = ", ".join(f"{v}: {o:.4f}" for v, o in zip(info["values"], info["objectives"]))
        print(f"  measured {pairs}", file=sys.stderr)


@calibrate_app.command("fig2")
def fig2(
    out: Path = typer.Option(..., "--out", "-o", help="output folder: experiment/, fig2.svg, fig2.json"),
    rounds: int = typer.Option(10, "--rounds", min=2, help="rounds (each: every MACW once, back to back)"),
    macw: Optional[List[int]] = typer.Option(
        None, "--macw", min=1, help="MACW values in packets [default: 107 and 430]"
    ),
    size: str = typer.Option("10m", "--size", help="the bulk object's size (the paper: 10 MB)"),
    rate_mbit: float = typer.Option(100.0, "--rate-mbit", help="bottleneck rate"),
    rtt_ms: float = typer.Option(36.0, "--rtt-ms", help="base RTT"),
    buffer_bytes: int = typer.Option(30000, "--buffer-bytes", help="drop-tail buffer (the paper's 30 KB)"),
    seed: int = typer.Option(1, "--seed"),
    tolerance: float = typer.Option(
        5.0, "--tolerance", help="calibrated: every cell's interval of the % difference within +- this"
    ),
    confirm_rounds: Optional[int] = typer.Option(
        None, "--confirm-rounds", help="rounds of the closest point measured again for the verdict [default: --rounds]"
    ),
    link_check: bool = typer.Option(True, "--link-check/--no-link-check", help="self-check the path first"),
    as_json: bool = typer.Option(False, "--json", help="print the figures as JSON (what fig2.json holds)"),
) -> None:
    """Kakhki Fig. 2: a bulk download over QUIC per MACW; the handshake / wait / receive
    split per configuration and the ratio of mean PLTs with its interval (Fieller)."""
    from ..analyses.calibrate.fig2 import run_fig2

    check_output(out, "--out", directory=True)
    result = run_fig2(
        out,
        rounds=rounds,
        macws=macw or (107, 430),
        size=size,
        rate_mbit=rate_mbit,
        rtt_ms=rtt_ms,
        buffer_bytes=buffer_bytes,
        seed=seed,
        link_check=link_check,
        progress=_progress,
    )
    if as_json:
        typer.echo(json.dumps(result.as_dict(), indent=1, default=str))
        return
    typer.echo(result.table())
    for f in result.files:
        typer.echo(f)


@calibrate_app.command("search")
def search(
    reference: str = typer.Option(
        ...,
        "--reference",
        "-r",
        help="experiment directory to match (its grid is searched), or a QUIC stack measured here on --grid",
    ),
    grid: Optional[Path] = typer.Option(
        None, "--grid", help="with a stack reference: the page-load scenario whose cells to match"
    ),
    out: Path = typer.Option(..., "--out", "-o", help="output folder: trials/, search.json, calibrated.toml"),
    reference_arm: Optional[str] = typer.Option(
        None, "--reference-arm", help="the reference's arm to match [default: its first h3 arm]"
    ),
    knob: Optional[List[str]] = typer.Option(
        None,
        "--knob",
        "-k",
        help="a knob to search: macw, iw (initial window), nconn (Cubic's N-connection emulation, 1..4); "
        "repeat for several [default: macw]. Pacing is not one: quinn always paces",
    ),
    knob_range: Optional[List[str]] = typer.Option(
        None, "--range", help="NAME=LOW..HIGH for a searched knob [defaults: iw 2..100, nconn 1..4; macw: --low/--high]"
    ),
    trials: int = typer.Option(8, "--trials", min=2, help="points (knob values) to measure (two per experiment)"),
    rounds: int = typer.Option(3, "--rounds", min=2, help="rounds per measured value"),
    start: int = typer.Option(
        107, "--start", min=1, help="the first MACW tried (the untuned default); iw starts at 10, nconn at 1"
    ),
    low: Optional[int] = typer.Option(None, "--low", min=1, help="smallest MACW [default: start / 4]"),
    high: Optional[int] = typer.Option(None, "--high", min=1, help="largest MACW [default: start x 8]"),
    seed: int = typer.Option(1, "--seed"),
    tolerance: float = typer.Option(
        5.0, "--tolerance", help="calibrated: every cell's interval of the % difference within +- this"
    ),
    confirm_rounds: Optional[int] = typer.Option(
        None, "--confirm-rounds", help="rounds of the closest point measured again for the verdict [default: --rounds]"
    ),
    link_check: bool = typer.Option(
        True, "--link-check/--no-link-check", help="self-check the path before the first trial"
    ),
    as_json: bool = typer.Option(False, "--json", help="print the result as JSON (what search.json holds)"),
) -> None:
    """Find our endpoint's knob values whose page load times match a reference's.

    The knobs: MACW, and with --knob the initial window and Cubic's N-connection
    emulation; the values chosen are those whose PLT is closest to the reference's on the
    reference's own grid (optuna; every evaluation a testbed measurement). Pacing is not a
    knob: quinn always paces, so it is the same in every trial. The reference is an
    experiment directory (its first h3 arm, or --reference-arm), or a QUIC stack whose
    server is measured first on --grid. The closest point is measured again in fresh
    rounds; it is calibrated when every cell's interval of the difference lies within
    +- --tolerance %. Prints the knobs, the verdict, the residual difference per cell with
    its interval and Welch's p, and a scenario fragment to paste."""
    from ..analyses.calibrate.knobs import knob_set, parse_range, start_point
    from ..analyses.calibrate.reference import REFERENCE_DIR, reference_from
    from ..analyses.calibrate.search import search as run_search, write

    check_output(out, "--out", directory=True)
    knobs = knob_set(
        knob or ["macw"], start=start, low=low, high=high, ranges=dict(parse_range(r) for r in knob_range or [])
    )
    ref = reference_from(
        reference,
        out,
        arm=reference_arm,
        grid=grid,
        start=start_point(knobs),
        rounds=rounds,
        seed=seed,
        link_check=link_check,
        progress=_progress,
    )
    # a stack reference measured our start value beside it: the search's first trial
    first = out / REFERENCE_DIR if ref.directory == out / REFERENCE_DIR else None
    result = run_search(
        ref,
        out,
        trials=trials,
        rounds=rounds,
        start=start,
        low=low,
        high=high,
        seed=seed,
        link_check=link_check and first is None,
        progress=_progress,
        measured_start=first,
        knobs=knobs,
        tolerance_pct=tolerance,
        confirm_rounds=confirm_rounds,
    )
    write(result, out)
    if as_json:
        typer.echo(json.dumps(result.as_dict(), indent=1, default=str))
        return
    typer.echo(result.table())
    for f in result.files:
        typer.echo(f)


def register(app: typer.Typer) -> None:
    app.add_typer(calibrate_app, name="calibrate")
