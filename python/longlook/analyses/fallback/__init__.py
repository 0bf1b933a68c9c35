"""Fallback causality (Chaudhary et al.): does traffic falling back to TCP within a
QUIC-enabled session drive quality drops B(t) and stalls S(t)?

Per session: cross-correlation of F with B and S and the lag of its maximum (`crosscorr`),
KPSS stationarity with first then second differencing (`stationarity`), Granger causality
F -> B and F -> S with the lag chosen by an information criterion (`granger`), all in
`session`. Per pattern: QUIC-enabled vs TCP-only QoE (`qoe`). F(t) from linkem's flow log
(`flowlog`): bytes over TCP per step, or the paper's share T/(T+Q) of bytes over TCP so far
(`session.CAUSES`), figures like the paper's Fig. 12 (`figures`), a store's runs (`store`).
"""

from .crosscorr import CrossCorrelation, cross_correlation
from ...flowlog import bytes_per_second, linkem_start_mono_ms, series_rows
from .granger import GrangerResult, granger_test
from .grid import on_grid
from .qoe import compare_patterns, pair_verdicts
from .session import SessionResult, analyze_session, analyze_sessions, summarize
from .stationarity import Stationarity, make_stationary

__all__ = [
    "CrossCorrelation",
    "GrangerResult",
    "SessionResult",
    "Stationarity",
    "analyze_session",
    "analyze_sessions",
    "bytes_per_second",
    "compare_patterns",
    "cross_correlation",
    "granger_test",
    "linkem_start_mono_ms",
    "make_stationary",
    "on_grid",
    "pair_verdicts",
    "series_rows",
    "summarize",
]
