"""Congestion-control parameters of one connection, each against its specification: pure
functions of a sender's log (trace.py), one module per family, each returning a
`ParamResult` (measured, reference, unit, verdict in conforms / deviates / not measurable,
with its tolerance). The conformance kind runs them on every run's logs at measure time
(so they live in the kind: the floors forbid a kind to import an analysis)."""

from __future__ import annotations

import math
from pathlib import Path

from . import acks, datagram, decrease, growth
from . import initial_window as initial_window_module
from . import pacing as pacing_module
from . import slow_start
from .acks import ack_frequency
from .datagram import datagram_size
from .decrease import multiplicative_decrease
from .growth import cubic_growth
from .initial_window import initial_window
from .pacing import pacing
from .result import CONFORMS, DEVIATES, NOT_MEASURABLE, VERDICTS, ParamResult, within
from .slow_start import slow_start_exit
from .trace import ConnTrace, from_qlog, read_trace

PARAMETERS = (
    "initial_window",
    "multiplicative_decrease",
    "cubic_c",
    "slow_start_exit_rtt_rise",
    "pacing_burst_p95",
    "packets_per_ack",
    "max_datagram",
)
# each parameter's conforming region from its reference: the one definition the per-run
# verdicts and the verdict across runs (kinds/conformance/judge.py) share
BOUNDS = {
    initial_window_module.PARAMETER: initial_window_module.bound,
    decrease.PARAMETER: decrease.bound,
    growth.PARAMETER: growth.bound,
    slow_start.PARAMETER: slow_start.bound,
    pacing_module.PARAMETER: pacing_module.bound,
    acks.PARAMETER: acks.bound,
    datagram.PARAMETER: datagram.bound,
}


def bound_of(parameter: str, reference: float | None, tcp: bool = False) -> tuple[float, float]:
    """(low, high) of what conforms for `parameter` with this reference (a TCP sender's
    where `tcp`); (nan, nan) for a parameter or reference unknown."""
    fn = BOUNDS.get(parameter)
    if fn is None or reference is None or not math.isfinite(reference):
        return math.nan, math.nan
    return fn(float(reference), tcp)


def all_parameters(tr: ConnTrace, cc: str) -> list[ParamResult]:
    """Every parameter of one connection whose congestion control is `cc` (our names:
    cubic, reno/newreno, bbr...)."""
    return [
        initial_window(tr),
        multiplicative_decrease(tr, cc),
        cubic_growth(tr, cc),
        slow_start_exit(tr, cc),
        pacing(tr),
        ack_frequency(tr),
        datagram_size(tr),
    ]


def parameters_of(path: str | Path, cc: str) -> list[ParamResult]:
    return all_parameters(read_trace(path), cc)


__all__ = [
    "BOUNDS",
    "CONFORMS",
    "DEVIATES",
    "NOT_MEASURABLE",
    "PARAMETERS",
    "VERDICTS",
    "ConnTrace",
    "ParamResult",
    "ack_frequency",
    "all_parameters",
    "bound_of",
    "cubic_growth",
    "datagram_size",
    "from_qlog",
    "initial_window",
    "multiplicative_decrease",
    "pacing",
    "parameters_of",
    "read_trace",
    "slow_start_exit",
    "within",
]
