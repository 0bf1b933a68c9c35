"""A run's server congestion window across its path change, from the server's qlog
(qlog.window_across), for the servers that do not say when they make a controller (ours does:
the run's `server_controllers`). Kept beside the run's files, as the wire verdicts are, so a
report reads a long log once (until the qlog package's reader changes: analyses.kept)."""

from __future__ import annotations

from pathlib import Path

from ... import qlog
from ...qlog.reader import read_qlog
from ...qlog.window_across import window_across
from ..kept import keep, read_kept, source_version
from ..wire_runs import run_field

CACHE = "server-window.json"


def window_of_run(experiment: Path, run: dict) -> dict | None:
    """The server's window across the change (qlog.window_across.WindowAcross as a dict); None
    when the run kept no server qlog or the log shows no change (no PATH_CHALLENGE sent)."""
    name = run_field(run.get("artifacts")).get("qlog")
    if not name:
        return None
    path = Path(experiment) / name
    cache = path.parent / CACHE
    version = source_version(qlog)
    if (found := read_kept(cache, version)) is not None:
        return found.get("window") or None
    if not path.is_file():
        return None
    try:
        result = window_across(read_qlog(path))
    except (OSError, ValueError):
        return None
    found = result.as_dict() if result is not None else None
    keep(cache, {"window": found}, version)
    return found
