"""Where a run over a trace meets the trace.

linkem replays a trace on its own clock, so without care a run meets whatever stretch of
the trace that clock has reached, and the two arms of a round are compared on different
networks (a run's network is then an unrecorded random variable, as wide as the trace's
variation). mahimahi starts a trace with each shell; here every run over a trace starts at
a defined phase instead: linkem re-anchors the trace at the run's first packet (its
`--phase-file` and SIGUSR2, crates/linkem/README.md).

- `trace_phase = "start"` (the default): every run at the trace's start, as mahimahi does.
- `trace_phase = "random"`: a phase drawn per round from the scenario's seed, uniform over
  the trace's period and shared by every arm (and every retry) of that round, so arms stay
  paired over one stretch of the trace while rounds sample the trace.

The phase is recorded per run (`trace_phase_ms` in the run's details), and the cells whose
runs all carry one are compared as pairs by round (core.stats.compare_cells, `paired_cells`):
the trace's variation then cancels within a pair instead of widening the interval.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from ..linkprofile import LinkProfile
from ..traces import load_mahimahi

TracePhase = Literal["start", "random"]

# the run detail that records the phase, and so marks a run as phase-aligned
DETAIL = "trace_phase_ms"
# a stream of the scenario's seed of its own, so drawing phases moves no other random choice
_STREAM = 0x7ACE


def trace_files(link: LinkProfile, base_dir: Path) -> list[Path]:
    """The trace files a link replays (each direction's; both segments' of a proxied path; a
    handover's second path's)."""
    links = list(link.segments) if link.segments else [link]
    if link.handover is not None:
        links.append(link.handover.path)
    files = []
    for lk in links:
        for which in ("up", "down"):
            trace = lk.resolved(which).trace
            if trace is not None:
                files.append((base_dir / trace).resolve())
    return list(dict.fromkeys(files))


def period_ms(files: list[Path]) -> float:
    """The longest period of the traces (a phase is drawn over it; shorter ones wrap)."""
    return float(max(_period_of(f, f.stat().st_mtime_ns) for f in files))


@functools.lru_cache(maxsize=64)
def _period_of(path: Path, mtime_ns: int) -> int:
    # read once per file and version: a run asks for it, and a trace can be long
    return int(load_mahimahi(path)[-1])


def phase_ms(mode: TracePhase, seed: int, round_index: int, period: float) -> float:
    """The phase of one round: 0 at the start; else uniform over the period, from the seed and
    the round alone (the same on a resume, a retry and every arm of the round)."""
    if mode == "start":
        return 0.0
    u = np.random.default_rng([seed, round_index, _STREAM]).random()
    return float(np.floor(u * period))


def run_phase_ms(mode: TracePhase, link: LinkProfile, base_dir: Path, seed: int, round_index: int) -> float | None:
    """The phase a run over `link` starts at; None when the link replays no trace."""
    files = trace_files(link, base_dir)
    if not files:
        return None
    return phase_ms(mode, seed, round_index, period_ms(files) if mode == "random" else 0.0)


def paired_cells(runs: pd.DataFrame) -> set[str]:
    """Cells whose every run recorded its trace phase: their arms met the same stretch of the
    trace in each round, a paired design."""
    if runs.empty or DETAIL not in runs:
        return set()
    recorded = runs[DETAIL].notna().groupby(runs["cell_id"]).all()
    return {str(c) for c, ok in recorded.items() if ok}
