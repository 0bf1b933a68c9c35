"""`longlook fairness SCENARIO --out DIR [--resume]`: `longlook run` then `longlook report` for
a fairness scenario (QUIC and TCP flows sharing one bottleneck, Kakhki §5.1)."""

from __future__ import annotations

from pathlib import Path

import typer


def fairness(
    scenario: Path = typer.Argument(..., help="fairness scenario TOML (e.g. scenarios/fairness-quick.toml)"),
    out: Path = typer.Option(..., "--out", "-o", help="experiment directory (DIR/longlook.duckdb + runs/)"),
    resume: bool = typer.Option(False, "--resume", help="continue an interrupted experiment in --out"),
    link_check: bool = typer.Option(
        True, "--link-check/--no-link-check", help="self-check the link profile before its cells"
    ),
) -> None:
    """Fairness (Kakhki Table 4, Fig. 4-5): run a fairness SCENARIO, then write its report.

    The same as `longlook run SCENARIO --out DIR` then `longlook report DIR`; the report is
    written also when cells came up short (the exit status stays 1)."""
    from ..core.spec import load_scenario
    from ..errors import LonglookError
    from ..report import build_report
    from .run import run_scenario

    if load_scenario(scenario).kind != "fairness":
        raise LonglookError(
            f'{scenario}: not a fairness scenario (kind = "fairness")',
            hint="run other kinds with `longlook run FILE --out DIR`",
        )
    short = None
    try:
        run_scenario(scenario, out, resume=resume, link_check=link_check, command="longlook fairness")
    except typer.Exit as e:
        if e.exit_code != 1:
            raise
        short = e  # cells without the runs a comparison needs: the report shows what did complete
    typer.echo(build_report(out))
    if short is not None:
        raise short


def register(app: typer.Typer) -> None:
    app.command("fairness")(fairness)
