"""The `longlook` command: thin; every command calls a library function a notebook can call."""

from __future__ import annotations

import sys

import typer

from .commands import fairness as fairness_cmds
from .commands import link as link_cmds
from .commands import report as report_cmds
from .commands import run as run_cmds
from .commands import states as states_cmds
from .errors import LonglookError

app = typer.Typer(no_args_is_help=True, add_completion=False,
                  help="QUIC (HTTP/3) vs TCP (HTTP/2) head-to-head under emulated networks.")


@app.callback()
def _root() -> None:
    """QUIC (HTTP/3) vs TCP (HTTP/2) head-to-head under emulated networks."""


@app.command()
def version() -> None:
    """Print longlook's version."""
    from . import __version__
    print(__version__)


link_cmds.register(app)
report_cmds.register(app)
states_cmds.register(app)
fairness_cmds.register(app)
run_cmds.register(app)


def main() -> None:
    try:
        app()
    except LonglookError as e:
        print(f"longlook: error: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
