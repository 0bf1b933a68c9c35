"""`longlook fairness SCENARIO --out DIR [--resume]`, `longlook fairness report DIR` and
`longlook fairness show SCENARIO`: QUIC and TCP flows sharing one bottleneck (Kakhki §5.1)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from typer.core import TyperGroup


class _RunByDefault(TyperGroup):
    """`longlook fairness FILE ...` means `longlook fairness run FILE ...`: the first word is
    a subcommand only when it names one."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


fairness_app = typer.Typer(cls=_RunByDefault, no_args_is_help=True, add_completion=False,
                           help="Fairness: QUIC and TCP flows sharing one bottleneck (Kakhki Table 4, Fig. 4-5).")


@fairness_app.command("run")
def run(
    scenario: Path = typer.Argument(..., help="fairness scenario TOML (e.g. scenarios/fairness-quick.toml)"),
    out: Path = typer.Option(..., "--out", "-o", help="experiment directory (DIR/longlook.duckdb + runs/)"),
    resume: bool = typer.Option(False, "--resume", help="continue an interrupted experiment in --out"),
    link_check: bool = typer.Option(True, "--link-check/--no-link-check",
                                    help="self-check the link profile before its cells"),
    report: bool = typer.Option(True, "--report/--no-report", help="write DIR/report.html at the end"),
) -> None:
    """Run every cell of SCENARIO (default when the first word is a file): `longlook run`
    for a fairness scenario, then the report."""
    from ..core.spec import load_scenario
    from ..errors import LonglookError
    from ..report import build_report
    from .run import run_scenario

    if load_scenario(scenario).kind != "fairness":
        raise LonglookError(f"{scenario}: not a fairness scenario (kind = \"fairness\")",
                            hint="run other kinds with `longlook run FILE --out DIR`")
    code = 0
    try:
        run_scenario(scenario, out, resume=resume, link_check=link_check, command="longlook fairness")
    except typer.Exit as e:
        if e.exit_code != 1:
            raise
        code = 1  # short cells: the report still shows what did complete
    if report:
        typer.echo(build_report(out))
    if code:
        raise typer.Exit(code)


@fairness_app.command("report")
def report(
    directory: Path = typer.Argument(..., help="experiment directory"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="output file [default: DIR/report.html]"),
) -> None:
    """Write the experiment's report (the same as `longlook report DIR`)."""
    from ..report import build_report

    typer.echo(build_report(directory, out))


@fairness_app.command("show")
def show(scenario: Path = typer.Argument(..., help="fairness scenario TOML")) -> None:
    """Validate SCENARIO and list its cells and flows in run order."""
    from ..core.spec import load_scenario

    sc = load_scenario(scenario)
    cells = sc.cells()
    typer.echo(f"{sc.name}: {len(cells)} cells x {sc.runs} runs x {sc.duration_s:g} s "
               f"= {sc.total_runs()} runs, about {sc.total_runs() * (sc.duration_s + 3) / 60:.0f} min")
    for c in cells:
        flows = ", ".join(f"{f.label}@{f.start_s:g}s" + (f" (N={f.weight})" if f.weight > 1 else "")
                          for f in c.flows())
        typer.echo(f"  {c.index:3d} {c.id}: {flows}")


def register(app: typer.Typer) -> None:
    app.add_typer(fairness_app, name="fairness")
