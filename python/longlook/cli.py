"""The `longlook` command: thin; every command calls a library function a notebook can call."""

from __future__ import annotations

import errno
import sys

import typer

from .commands import analyze as analyze_cmds
from .commands import bench as bench_cmds
from .commands import calibrate as calibrate_cmds
from .commands import compare as compare_cmds
from .commands import fairness as fairness_cmds
from .commands import link as link_cmds
from .commands import report as report_cmds
from .commands import reproduce as reproduce_cmds
from .commands import run as run_cmds
from .commands import scenario as scenario_cmds
from .commands import states as states_cmds
from .commands import trace as trace_cmds
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
trace_cmds.register(app)
bench_cmds.register(app)
report_cmds.register(app)
scenario_cmds.register(app)
states_cmds.register(app)
fairness_cmds.register(app)
run_cmds.register(app)
compare_cmds.register(app)
analyze_cmds.register(app)
calibrate_cmds.register(app)
reproduce_cmds.register(app)


def main() -> None:
    try:
        app()
    except LonglookError as e:
        print(f"longlook: error: {e}", file=sys.stderr)
        sys.exit(2)
    except OSError as e:
        # the machine, not longlook: a full disk, a read-only mount (every finished run was
        # committed before; --resume continues once there is room)
        if e.errno in (errno.ENOSPC, errno.EROFS, errno.EDQUOT):
            where = f" writing {e.filename}" if e.filename else ""
            print(f"longlook: error: {e.strerror}{where}\n  hint: free space (or remount), then "
                  f"rerun with --resume: finished runs are kept", file=sys.stderr)
            sys.exit(2)
        raise


if __name__ == "__main__":
    main()
