"""Congestion-control parameters of one connection, each against its specification: pure
functions of a sender's log (trace.py), one module per family, each returning a
`ParamResult` (measured, reference, unit, verdict in conforms / deviates / not measurable,
with its tolerance). The conformance kind runs them on every run's logs at measure time
(so they live in the kind: the floors forbid a kind to import an analysis)."""

from __future__ import annotations

from pathlib import Path

from .acks import ack_frequency
from .datagram import datagram_size
from .decrease import multiplicative_decrease
from .growth import cubic_growth
from .initial_window import initial_window
from .pacing import pacing
from .result import CONFORMS, DEVIATES, NOT_MEASURABLE, VERDICTS, ParamResult
from .slow_start import slow_start_exit
from .trace import ConnTrace, from_qlog, read_trace

PARAMETERS = ("initial_window", "multiplicative_decrease", "cubic_c", "slow_start_exit_rtt_rise",
              "pacing_burst_p95", "packets_per_ack", "max_datagram")


def all_parameters(tr: ConnTrace, cc: str) -> list[ParamResult]:
    """Every parameter of one connection whose congestion control is `cc` (our names:
    cubic, reno/newreno, bbr...)."""
    return [initial_window(tr), multiplicative_decrease(tr, cc), cubic_growth(tr, cc), slow_start_exit(tr, cc),
            pacing(tr), ack_frequency(tr), datagram_size(tr)]


def parameters_of(path: str | Path, cc: str) -> list[ParamResult]:
    return all_parameters(read_trace(path), cc)


__all__ = ["CONFORMS", "DEVIATES", "NOT_MEASURABLE", "PARAMETERS", "VERDICTS", "ConnTrace", "ParamResult",
           "ack_frequency", "all_parameters", "cubic_growth", "datagram_size", "from_qlog",
           "initial_window", "multiplicative_decrease", "pacing", "parameters_of", "read_trace",
           "slow_start_exit"]
