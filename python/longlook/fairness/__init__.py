"""Fairness: QUIC and TCP flows sharing one bottleneck (Kakhki et al. IMC'17 §5.1, Table 4,
Fig. 4-5), measured at the router.

    scenario = load_fairness_scenario("scenarios/fairness-quick.toml")
    run_fairness(scenario, Path("out"))          # DIR/fairness.duckdb + DIR/runs/
    write_fairness_report("out")                 # DIR/fairness-report.html
"""

from .aggregate import cell_summary, example_run, table4
from .flowlog import FlowCounters, flow_counters, read_flow_log
from .flows import FlowOutcome, run_concurrent_flows
from .measure import FlowMeasurement, RunMeasurement, measure_run
from .metrics import expected_shares, jain_index, shares, weighted_jain_index
from .report import fairness_html, write_fairness_report
from .runner import run_fairness
from .scenario import FairnessCell, FairnessScenario, FlowSpec, Matchup, Sweep, load_fairness_scenario
from .store import FairnessStore

__all__ = [
    "FairnessCell", "FairnessScenario", "FairnessStore", "FlowCounters", "FlowMeasurement",
    "FlowOutcome", "FlowSpec", "Matchup", "RunMeasurement", "Sweep", "cell_summary",
    "example_run", "expected_shares", "fairness_html", "flow_counters", "jain_index",
    "load_fairness_scenario", "measure_run", "read_flow_log", "run_concurrent_flows",
    "run_fairness", "shares", "table4", "weighted_jain_index", "write_fairness_report",
]
