"""`longlook link check` and `longlook clean`: the testbed's link self-check and its leftovers."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from ..render.console import make_console

link_app = typer.Typer(no_args_is_help=True, help="Check an emulated link.")


@link_app.callback()
def _link() -> None:
    """Check an emulated link."""


def _num(x) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:.4g}" if isinstance(x, float) else str(x)


@link_app.command("check")
def link_check(
    profile: Path = typer.Argument(..., help="link profile TOML"),
    as_json: bool = typer.Option(False, "--json", help="print the result as JSON"),
    quick: bool = typer.Option(False, "--quick", help="the quick check: 1 s measurements, 500 RTT probes, no iperf3"),
    duration: Optional[float] = typer.Option(None, "--duration", help="seconds per rate/loss measurement"),
    no_iperf: bool = typer.Option(False, "--no-iperf", help="skip the iperf3 measurement"),
) -> None:
    """Measure a link profile end to end; exit 1 when it is outside tolerance."""
    from ..errors import LonglookError
    from ..linkprofile import linkem_refusal, load_link_profile
    from ..testbed import Testbed
    from ..testbed.queue_check import self_check

    prof = load_link_profile(profile)
    # linkem's own parser first (ranges, trace contents): a profile it refuses starts no testbed
    if refusal := linkem_refusal(prof, profile.resolve().parent):
        raise LonglookError(f"{profile}: {refusal}", hint="linkem's ranges: crates/linkem/README.md")
    secs = duration if duration is not None else (1.0 if quick else 3.0)
    with Testbed(prof, base_dir=profile.resolve().parent) as tb:
        depth = "quick" if quick else "full"
        result = self_check(tb, prof, duration_s=secs, depth=depth, **({"iperf": False} if no_iperf else {}))
    if as_json:
        print(json.dumps(result.to_dict(), indent=1))
    else:
        table = Table(title=f"link check: {result.profile}")
        for col in ("dir", "quantity", "expected", "measured", "band", "ok"):
            table.add_column(col, no_wrap=True)
        table.add_column("note", overflow="fold")
        for r in result.rows:
            ok = {True: "[green]ok[/]", False: "[red]FAIL[/]", None: "[dim]info[/]"}[r.ok]
            band = "" if r.low is None and r.high is None else f"{_num(r.low)}..{_num(r.high)}"
            table.add_row(r.direction, f"{r.quantity} ({r.unit})", _num(r.expected), _num(r.measured), band, ok, r.note)
        console = make_console()
        console.print(table)
        if others := result.raw.get("other_testbeds_running"):
            console.print(f"[yellow]note: other testbeds were running ({', '.join(others)}); timings may be distorted")
        console.print(("[green]" if result.ok else "[red]") + result.summary())
    raise typer.Exit(0 if result.ok else 1)


def clean_command(
    all_: bool = typer.Option(False, "--all", help="also testbeds whose owner is still running"),
    ids: Optional[list[str]] = typer.Option(None, "--id", help="only this testbed id (repeatable)"),
) -> None:
    """Remove leftovers of crashed runs: ll-* namespaces, linkem and probe processes, client CPU cgroups."""
    from ..testbed import clean
    from ..testbed.host import preflight

    preflight()
    c = clean(include_live=all_, ids=set(ids) if ids else None)
    for ns in c.namespaces:
        print(f"removed namespace {ns}")
    for pid in c.pids:
        print(f"ended process {pid}")
    for rid in c.records:
        print(f"removed record of testbed {rid}")
    for inst in c.trace_instances:
        print(f"removed trace instance {inst} (its endpoint is gone)")
    for group in c.cgroups:
        print(f"removed client CPU cgroup {group}")
    for rid in c.skipped_live:
        print(f"kept testbed {rid}: its owner is running (use --all to remove it)")
    if c.is_empty():
        print("nothing to clean")


def register(app: typer.Typer) -> None:
    app.add_typer(link_app, name="link")
    app.command("clean")(clean_command)
