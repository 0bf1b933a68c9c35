"""`longlook reproduce`: run (or read) the shipped paper scenarios and write the reproduction
report, one row per claim. The library behind it is `longlook.analyses.reproduce`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import List, Optional

import typer

from ..errors import check_output
from rich.table import Table

from ..render.console import make_console

VERDICT_STYLE = {"holds": "green", "does not hold": "bold red", "inconclusive": "yellow", "not run": "dim"}


def _progress(event: str, **info) -> None:
    """Scenario starts and ends, link checks and failed runs, on stderr."""
    if event == "scenario":
        print(f"== {info['name']} ({info['budget']} budget)", file=sys.stderr)
    elif event == "scenario_done":
        r = info["run"]
        print(f"   {r.status} in {r.wall_s:.0f} s: {r.detail}", file=sys.stderr)
    elif event == "link_checked":
        print(f"   link self-check: {info['summary']}", file=sys.stderr)
    elif event == "run" and info.get("final") and info["status"] != "ok":
        print(f"   {info['arm']} round {info['round']}: {info['status']} {info.get('error') or ''}", file=sys.stderr)


def _carrying(archive: Path):
    """The progress printer, packing each scenario into ARCHIVE as soon as it is done or
    interrupted (every scenario of the budget passes by here, measured or only read): a machine
    lost mid-budget loses at most the scenario it was measuring."""
    from ..core.carry import carry_out

    def progress(event: str, **info) -> None:
        _progress(event, **info)
        if event == "scenario_done" and not info["run"].foreign:
            for c in carry_out(archive, [info["run"].directory]):
                print(f"   packed as {c.archive} ({c.bytes / 1e6:.1f} MB)", file=sys.stderr)

    return progress


def reproduce(
    budget: str = typer.Option(
        "short",
        "--budget",
        help="short: 1-12 cells per scenario, 2-6 rounds, short "
        "transfers, quick link self-checks (a check that every claim runs); standard: the short cells with the "
        "rounds that should make >= 80% of the claims conclusive in <= 4 h on one 2-core "
        "machine, resumable (the estimate is printed before it starts; an inconclusive "
        "claim says the rounds it would need); paper: the "
        "scenarios as shipped, the papers' rounds and grids, about 5,800 runs and 23 h on "
        "a 2-core machine (the estimate per scenario is printed before it starts), resumable "
        "across sessions and machines with --archive.",
    ),
    out: Optional[Path] = typer.Option(
        None,
        "--out",
        "-o",
        help="results folder: one experiment per scenario, "
        "reproduction.html/.md/.json [default: results/reproduce-BUDGET]",
    ),
    only: Optional[List[str]] = typer.Option(
        None, "--only", help="only this claim (repeatable; a scenario name selects its claims); see --list"
    ),
    list_claims: bool = typer.Option(False, "--list", help="list the claims and exit"),
    no_run: bool = typer.Option(False, "--no-run", help="measure nothing: read what DIR holds"),
    link_check: bool = typer.Option(True, "--link-check/--no-link-check", help="self-check each link profile first"),
    as_json: bool = typer.Option(False, "--json", help="print the rows as JSON (what reproduction.json holds)"),
    include_flagged: bool = typer.Option(
        False,
        "--include-flagged",
        help="count runs their path audit flagged (a machine too busy for the [fidelity] limits); the table says so",
    ),
    allow_version_change: bool = typer.Option(
        False,
        "--allow-version-change",
        help="resume an experiment begun with other software (longlook, linkem, the endpoint, a "
        "stack); what changed is recorded with it",
    ),
    executor: str = typer.Option(
        "local",
        "--executor",
        help="local (this machine's testbed) or ray (one cell per cluster node with the testbed "
        "resource; docs/cluster.md); the results come back to --out either way",
    ),
    address: Optional[str] = typer.Option(
        None, "--address", help="Ray cluster address HOST:PORT (--executor ray; default: RAY_ADDRESS)"
    ),
    archive: Optional[Path] = typer.Option(
        None,
        "--archive",
        help="a folder that carries the measured experiments between machines: a scenario "
        "DIR does not hold is unpacked from ARCHIVE/<scenario>.tar.xz first, and each scenario "
        "measured in this session is packed there afterwards (captures left out); commit it "
        "to resume a long budget on another machine",
    ),
    publish: Optional[Path] = typer.Option(
        None,
        "--publish",
        help="also write the published form of the result "
        "here (e.g. docs/reproduction.md): dates, machine, commits, wall time "
        "over sessions, each 'does not hold' explained in words, the commands "
        "that regenerate it",
    ),
) -> None:
    """Test the papers' claims on this testbed: one row per claim, with its verdict.

    Runs (or, when DIR already holds them, reads) the shipped scenarios each claim needs,
    then writes one row per claim: the paper's statement and number, ours with n and the p of
    the claim's own test (against the paper's factor, TOST for "the same"), and holds / does
    not hold / inconclusive (not run: its scenario could not run here or its cells are not in
    the budget); an inconclusive claim says the rounds at which its test would decide it with
    80% power at the claim's resolution, or why no number would. A "does not hold" links to the
    experiment's state machines or cwnd timelines. Rerunning resumes."""
    from ..analyses.reproduce import claims, reproduce as run

    if list_claims:
        for c in claims(only):
            typer.echo(f"{c.id:26} {c.paper:22} {c.where:22} {c.scenario}")
        return
    from ..analyses.reproduce import SCENARIOS
    from ..analyses.reproduce.estimate import describe, estimate
    from ..report import build_report

    from ..core.executors import by_name

    runs_on = by_name(executor, address) if not no_run else None  # one clear error before anything runs
    directory = check_output(out or Path("results") / f"reproduce-{budget}", "--out", directory=True)
    published = check_output(publish, "--publish", suffixes=(".md",)) if publish is not None else None
    chosen = [SCENARIOS[n] for n in dict.fromkeys(c.scenario for c in claims(only))]
    if archive is not None:
        from ..analyses.reproduce.scenarios import folder_name
        from ..core.carry import carry_in

        archive = check_output(archive, "--archive", directory=True)
        for c in carry_in(archive, directory, [folder_name(s, budget) for s in chosen]):
            print(f"unpacked {c.archive} ({c.bytes / 1e6:.1f} MB) into {directory / c.name}", file=sys.stderr)
    if not no_run and budget in ("short", "standard", "paper"):
        print(describe(estimate(chosen, budget, directory)), file=sys.stderr)
    result = run(
        directory,
        budget=budget,
        only=only,
        execute=not no_run,
        link_check=link_check,
        progress=_carrying(archive) if archive is not None and not no_run else _progress,
        build_report=build_report,
        include_flagged=include_flagged,
        allow_version_change=allow_version_change,
        executor=runs_on,
    )
    if published is not None:
        from ..analyses.reproduce.publish import publish as write_published

        write_published(
            result,
            published,
            f"longlook reproduce --budget {budget} -o {directory}"
            + (f" --archive {archive}" if archive is not None else "")
            + f" --no-run --publish {publish}",
        )
        print(f"published: {published}", file=sys.stderr)
    if as_json:
        typer.echo(json.dumps(result.as_dict(), indent=1, default=str))
        if any(s.status == "interrupted" for s in result.scenarios):
            raise typer.Exit(130)
        return
    console = make_console()
    table = Table(title=f"longlook reproduce --budget {budget}")
    for col in ("claim", "paper's number", "ours", "n", "p", "verdict", "would need"):
        table.add_column(col, overflow="fold")
    for r in result.rows:
        o = r.outcome
        style = VERDICT_STYLE.get(o.verdict, "")
        ours = o.number if o.verdict != "not run" else o.detail
        table.add_row(r.claim.id, r.claim.paper_number, ours, o.n, o.p_text, f"[{style}]{o.verdict}[/]", o.needs or "")
    console.print(table)
    counts = ", ".join(f"{k}: {v}" for k, v in result.counts().items())
    console.print(
        f"{counts}; wall {result.wall_s / 60:.1f} min"
        + ("; runs flagged by their path audit counted" if include_flagged else "")
    )
    if result.drift:
        console.print(f"drift across rounds, paired: {result.drift.paired.text()}")
    for f in ("reproduction.html", "reproduction.md", "reproduction.json"):
        typer.echo(str(directory / f))

    if any(s.status == "interrupted" for s in result.scenarios):
        raise typer.Exit(130)


def register(app: typer.Typer) -> None:
    app.command("reproduce")(reproduce)
