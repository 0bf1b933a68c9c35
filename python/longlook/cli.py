"""The `longlook` command: thin; every command calls a library function a notebook can call."""

from __future__ import annotations

import errno
import inspect
import sys

import typer

from .commands import again as again_cmds
from .commands import analyze as analyze_cmds
from .commands import bench as bench_cmds
from .commands import bisect as bisect_cmds
from .commands import calibrate as calibrate_cmds
from .commands import compare as compare_cmds
from .commands import export as export_cmds
from .commands import fairness as fairness_cmds
from .commands import link as link_cmds
from .commands import matrix as matrix_cmds
from .commands import report as report_cmds
from .commands import reproduce as reproduce_cmds
from .commands import run as run_cmds
from .commands import scenario as scenario_cmds
from .commands import stacks as stacks_cmds
from .commands import states as states_cmds
from .commands import trace as trace_cmds
from .errors import LonglookError

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    help="QUIC (HTTP/3) vs TCP (HTTP/2) head-to-head under emulated networks.",
)


@app.callback()
def _root() -> None:
    """QUIC (HTTP/3) vs TCP (HTTP/2) head-to-head under emulated networks."""


@app.command()
def version() -> None:
    """Print longlook's version."""
    from .versions import __version__

    print(__version__)


link_cmds.register(app)
trace_cmds.register(app)
bench_cmds.register(app)
report_cmds.register(app)
scenario_cmds.register(app)
states_cmds.register(app)
fairness_cmds.register(app)
run_cmds.register(app)
again_cmds.register(app)
compare_cmds.register(app)
analyze_cmds.register(app)
calibrate_cmds.register(app)
reproduce_cmds.register(app)
export_cmds.register(app)
stacks_cmds.register(app)
bisect_cmds.register(app)
matrix_cmds.register(app)


def paragraphs(text: str) -> str:
    """A hard-wrapped docstring as whole paragraphs, one line each: typer's rich help keeps a
    docstring's single line breaks, which then break sentences mid-line. A line that starts a
    list item keeps its own line; a paragraph starting with \\b is left as written (click's
    no-rewrap marker)."""
    out = []
    for para in inspect.cleandoc(text).split("\n\n"):
        if para.startswith("\b"):
            out.append(para)
            continue
        lines: list[str] = []
        for line in para.split("\n"):
            if lines and not line.lstrip().startswith(("- ", "* ")):
                lines[-1] += " " + line.strip()
            else:
                lines.append(line.rstrip())
        out.append("\n".join(lines))
    return "\n\n".join(out)


def _literal_brackets(callback) -> None:
    """Option and argument help shown as written: rich reads `[default: X]` as a markup tag
    and drops it, so brackets are escaped."""
    from rich.markup import escape

    for p in inspect.signature(callback).parameters.values():
        info = p.default
        if isinstance(info, typer.models.ParameterInfo) and isinstance(info.help, str) and "[" in info.help:
            info.help = escape(info.help)


def _whole_paragraphs(t: typer.Typer) -> None:
    """Every command's help (its docstring unless given) as paragraphs, in every group."""
    for c in t.registered_commands:
        text = c.help if isinstance(c.help, str) else inspect.getdoc(c.callback)
        if text:
            c.help = paragraphs(text)
        if c.callback is not None:
            _literal_brackets(c.callback)
    for g in t.registered_groups:
        if isinstance(g.help, str):
            g.help = paragraphs(g.help)
        if isinstance(g.typer_instance.info.help, str):
            g.typer_instance.info.help = paragraphs(g.typer_instance.info.help)
        _whole_paragraphs(g.typer_instance)


_whole_paragraphs(app)


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
            print(
                f"longlook: error: {e.strerror}{where}\n  hint: free space (or remount), then "
                f"rerun with --resume: finished runs are kept",
                file=sys.stderr,
            )
            sys.exit(2)
        raise
    except Exception as e:
        if not type(e).__module__.lstrip("_").startswith("duckdb"):
            raise
        # the store's engine: a damaged or truncated file, or a full disk met mid-query (a
        # shared experiment directory is untrusted input: reading it fails with one error)
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        full = "space left" in first.lower()
        hint = (
            "free space, then rerun with --resume: finished runs are kept"
            if full
            else "use an undamaged copy of the experiment directory, or run the scenario again into a new one"
        )
        print(
            f"longlook: error: the experiment store {'could not be written' if full else 'is damaged or unreadable'}: "
            f"{first}\n  hint: {hint}",
            file=sys.stderr,
        )
        sys.exit(2)


if __name__ == "__main__":
    main()
