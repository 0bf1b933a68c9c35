"""What held each run's server back, for the performance grid's regimes (qlog.sender_limits on
the run's server qlog, the `qlog` artifact): kept beside the run's files (`sender-limits.json`,
with the version of the reader), so a second report reads a few bytes, and so the answer
travels with a carried experiment, whose qlogs lose the packets they sent (core/carry.py).

The grid's own runs keep no server logs (their cost would count as the server's CPU): a pair
that came out slow with no party's CPU saturated runs once more with them, in an experiment
beside the grid's (`perf-<rate>-why`), and `pair_regimes` reads that one."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ... import qlog
from ...core.store import DB_FILE, Store
from ...qlog import read_qlog
from ...qlog.sender_limits import sender_limits
from ..kept import keep, read_kept, source_version
from ..wire_runs import run_field
from . import pair_of
from .perf import most_common, workload_of

CACHE = "sender-limits.json"


def sender_regimes(experiment: Path, runs: pd.DataFrame) -> dict[str, str]:
    """run_id -> what held its server back (window, flow control, application, flow control or
    application), for the runs that kept a server qlog; "" where it said too little."""
    version = source_version(qlog)
    out: dict[str, str] = {}
    for run in runs.to_dict("records"):
        path = run_field(run.get("artifacts")).get("qlog")
        if not path:
            continue
        log = Path(experiment) / path
        cache = log.parent / CACHE
        kept = read_kept(cache, version)
        if kept is None:
            if not log.is_file():
                continue
            kept = sender_limits(read_qlog(log)).as_dict()
            keep(cache, kept, version)
        out[str(run["run_id"])] = kept.get("regime") or ""
    return out


def pair_regimes(experiment: Path) -> dict[tuple[str, tuple[str, str]], str]:
    """(workload, (client, server)) -> what held the server back, the most common over the
    pair's runs in `experiment` (one that ran with server logs); {} when it holds none."""
    if not (Path(experiment) / DB_FILE).exists():
        return {}
    with Store.open(experiment, read_only=True) as store:
        runs = store.runs_frame()
    if runs.empty:
        return {}
    by_run = sender_regimes(experiment, runs)
    words: dict[tuple[str, tuple[str, str]], list[str]] = {}
    for run in runs.to_dict("records"):
        words.setdefault((workload_of(run["cell_id"]), pair_of(run)), []).append(by_run.get(str(run["run_id"]), ""))
    return {k: w for k, v in words.items() if (w := most_common(v))}
