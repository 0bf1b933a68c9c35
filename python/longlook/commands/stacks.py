"""`longlook stacks install|list`: other QUIC stacks, built once per version and cached
(longlook.stacks.builds.install). A scenario that names a stack installs it before its grid starts;
this installs ahead of time, e.g. all of them for the tests."""

from __future__ import annotations

from typing import List, Optional

import typer

stacks_app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    help="Other QUIC stacks: install ahead of time, or list what is installed.",
)


@stacks_app.command("install")
def install(
    specs: Optional[List[str]] = typer.Argument(
        None, metavar="SPEC", show_default=False, help="NAME or NAME@VERSION (quic-go@v0.64.1); with none, --all"
    ),
    all_: bool = typer.Option(False, "--all", help="Every stack at its default version."),
    all_versions: bool = typer.Option(False, "--all-versions", help="Every version each adapter lists."),
) -> None:
    """Install or build QUIC stacks (each once per version, cached): one line per stack with
    the seconds it took; exit 1 when any failed.

    Set-up (scripts/setup.sh) installs none of them unless given --all-stacks: a scenario
    that names a stack has it installed before its first run."""
    from ..errors import LonglookError
    from ..stacks.builds.install import all_specs, check_installable, install_all
    from ..stacks.base import stacks_dir
    from ..stacks.builds.cache import limit_bytes

    if not specs and not (all_ or all_versions):
        raise LonglookError(
            "stacks install: name the stacks (NAME or NAME@VERSION), or give --all",
            hint="`longlook stacks list` shows them",
        )
    chosen = list(specs or []) + (all_specs(all_versions) if (all_ or all_versions) else [])
    for s in chosen:
        check_installable(s)  # an unknown name or release: one error before anything is built
    stacks_dir(), limit_bytes()  # and the environment that says where, and how much
    if install_all(list(dict.fromkeys(chosen)), typer.echo):
        raise typer.Exit(1)


@stacks_app.command("list")
def list_stacks(
    all_versions: bool = typer.Option(False, "--all-versions", help="Every version each adapter lists."),
) -> None:
    """Each stack, its congestion controls, and whether it is installed."""
    from ..stacks.builds.install import all_specs, list_lines

    for line in list_lines(all_specs(all_versions)):
        typer.echo(line)


def register(app: typer.Typer) -> None:
    app.add_typer(stacks_app, name="stacks")
