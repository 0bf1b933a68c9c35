"""The one rule for a name that comes from outside (a scenario, the command line, the
environment, a store, a registry's listing): it is checked against an allow-list before it
becomes a path component, an SQL identifier or a command-line word.

- `release_token`: a version as a registry writes one (`v0.65.0`, `0.11.15`, `1.2.0-rc.1`,
  `0.0.0-20240101-abcdef`): letters, digits and `._+~-`, starting and ending with a letter or
  digit, no `..`, at most 64 characters. So it can name a folder (`quiche-0.22.0`), go into
  `go get` or Maven as one word, and never climb out of a folder or pass for an option.
- `path_inside`: a path joined from parts, resolved (symlinks too), required to stay inside
  its root.
- `sql_identifier`: a table or column name as a quoted SQL identifier. Callers take names
  from the schema's own list first; quoting is the second wall, not the first.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

from .errors import LonglookError

_RELEASE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._+~-]{0,62}[A-Za-z0-9])?")


def release_token(value: object, what: str) -> str:
    """`value` if it is a well-formed release string, else one error naming `what`."""
    text = value if isinstance(value, str) else ""
    if not _RELEASE.fullmatch(text) or ".." in text:
        shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "..."
        raise LonglookError(
            f"{what}: {shown} is not a release name",
            hint="a release is letters, digits and . _ + ~ - (e.g. v0.65.0 or 0.11.15), "
            "starting and ending with a letter or digit, without '..'",
        )
    return text


def path_inside(root: str | Path, *parts: str) -> Path:
    """root / parts..., resolved, or one error when it would leave `root` (an absolute part,
    '..', or a symlink out)."""
    base = Path(root).resolve()
    path = base.joinpath(*parts).resolve()
    if path != base and base not in path.parents:
        raise LonglookError(
            f"{'/'.join(parts)!r} would leave {base}",
            hint="a name from a scenario, a store or the command line names something "
            "inside its folder; use a plain name",
        )
    return path


def sql_identifier(name: str) -> str:
    """`name` as a double-quoted SQL identifier (an embedded quote doubled)."""
    if not isinstance(name, str) or not name or "\x00" in name:
        raise LonglookError(f"{name!r} is not a table or column name")
    return '"' + name.replace('"', '""') + '"'


def env_number(name: str, default: float, *, low: float, high: float) -> float:
    """The environment variable `name` as a finite number in [low, high] (`default` when it
    is unset or empty), or one error naming it."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and low <= value <= high):
        raise LonglookError(
            f"{name}={raw!r} is not a number from {low:g} to {high:g}",
            hint=f"unset it (default {default:g}) or give e.g. {name}={default:g}",
        )
    return value


def env_dir(name: str, default: Path) -> Path:
    """The environment variable `name` as a folder (`default` when unset): it must be a
    folder or not exist yet (it is then made when needed), never a file."""
    raw = os.environ.get(name, "")
    path = Path(raw) if raw else default
    if path.exists() and not path.is_dir():
        raise LonglookError(
            f"{name}={str(path)!r} is not a folder" if raw else f"{path} is not a folder",
            hint=f"point {name} at a folder (made when missing), or unset it",
        )
    return path
