"""The one rich Console factory of the CLI. On a terminal it is the terminal's width. Written
to a file or a pipe, rich would assume 80 columns, cutting wide tables and eliding their
numbers to "0.0…"; this console prints each table at the width it needs and never wraps a
line of text, so what lands in the file is whole.

    from longlook.render.console import make_console
    make_console().print(table)           # stdout
    make_console(stderr=True).log("...")  # progress and logs

Make it where it prints, not at import: the stream is looked at when it is made (a test's
CliRunner swaps stdout).
"""

from __future__ import annotations

import sys
from datetime import datetime
from typing import Any

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table


class _WholeConsole(Console):
    """A Console that, off a terminal, widens itself for a table wider than it."""

    def print(self, *objects: Any, **kwargs: Any) -> None:
        tables = [o for o in objects if isinstance(o, Table)]
        needed = max((Measurement.get(self, self.options.update_width(1 << 20), t).maximum for t in tables), default=0)
        if self.is_terminal or needed <= self.width:
            super().print(*objects, **kwargs)
            return
        before = self.width
        self.width = needed
        try:
            super().print(*objects, **kwargs)
        finally:
            self.width = before

    def log(self, *objects: Any, **kwargs: Any) -> None:
        """Off a terminal, one line per message with its time, never wrapped or padded (rich
        lays a log line out as wide as the console)."""
        if self.is_terminal:
            super().log(*objects, **kwargs)
            return
        keep = {k: v for k, v in kwargs.items() if k in ("sep", "end", "style", "emoji", "markup", "highlight")}
        super().print(f"[{datetime.now():%H:%M:%S}]", *objects, soft_wrap=True, **keep)


def make_console(*, stderr: bool = False) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):  # a closed or odd stream: treat it as a file
        terminal = False
    # log_path: the file:line rich puts beside each log line means nothing to a user
    return _WholeConsole(stderr=stderr, soft_wrap=not terminal, log_path=False)
