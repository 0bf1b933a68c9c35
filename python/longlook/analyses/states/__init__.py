"""Root cause from the protocols' inner states (Kakhki et al. IMC'17 §4.2, §5, Fig. 3, 5).

qlog/TCP logs -> StateTrace (per run) -> TransitionGraph (states, transitions, probabilities,
dwell, entries per run) + Synoptic-style Invariants -> DOT/SVG; StateDiff between two sets
of runs (Fisher / Mann-Whitney, Holm); LossAccounting (declared vs spurious losses, by
trigger); cwnd timelines (Fig. 5).
"""

from .analysis import MachineReport, StatesAnalysis, analyse_runs
from .diff import StateDiff, compare, per_run_counts
from .dot import to_dot, to_svg
from .invariants import Invariant, holds, mine_invariants
from .losses import LossAccounting, loss_accounting
from .machine import TransitionGraph
from ...qlog import QlogFile, qlog_from_events, read_qlog
from .runs import RunLogs, load_runs, parse_source
from .timeline import cwnd_figure_svg
from .trace import StateTrace

__all__ = [
    "Invariant",
    "LossAccounting",
    "MachineReport",
    "QlogFile",
    "RunLogs",
    "StateDiff",
    "StateTrace",
    "StatesAnalysis",
    "TransitionGraph",
    "analyse_runs",
    "compare",
    "cwnd_figure_svg",
    "holds",
    "load_runs",
    "loss_accounting",
    "mine_invariants",
    "parse_source",
    "per_run_counts",
    "qlog_from_events",
    "read_qlog",
    "to_dot",
    "to_svg",
]
