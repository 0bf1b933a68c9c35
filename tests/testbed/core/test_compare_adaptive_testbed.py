"""Adaptive rounds on the real testbed through the executor (core.adaptive): a clean cell
is planned at `min` by its pilot rounds, a 1%-loss cell gets more rounds, up to `max`."""

from __future__ import annotations

from pathlib import Path

from testbed_helpers import needs_testbed

from longlook.core.adaptive import stopping_decision
from longlook.core.execute import Runner
from longlook.core.store import Store
from longlook.kinds.pageload import Scenario

SCENARIO = """
name = "adaptive-testbed"
rounds = { min = 4, max = 10, target_halfwidth_pct = 10 }
workloads = ["1x200k"]
[[arms]]              # QUIC against itself: the spread alone decides the rounds
label = "a"
protocol = "h3"
[[arms]]
label = "b"
protocol = "h3"
[[links]]
rate_mbit = 10
rtt_ms = 36
loss = [0, 0.01]
[fidelity]            # about the stopping rule: a run flagged on a busy machine still counts
exclude_flagged = false
"""


@needs_testbed("linkem", "endpoint")
def test_clean_cell_stops_early_and_lossy_cell_grows(tmp_path: Path):
    sc = Scenario.from_toml(SCENARIO)
    Runner(sc, tmp_path, link_check=False).run()
    rule = sc.adaptive_rounds
    with Store.open(tmp_path, read_only=True) as store:
        runs = store.runs_frame()
    decisions = {}
    for cell in sc.cells():
        mine = runs[runs["cell_id"] == cell.id]
        decisions[cell.link.expected_loss("down")] = stopping_decision(mine, rule, sc.comparisons(), "plt_ms")
    print({k: (d.rounds, d.reason, round(d.halfwidth_pct, 1)) for k, d in decisions.items()})
    clean, lossy = decisions[0.0], decisions[0.01]
    # PLTs at 0% loss vary by a few %: the pilot plans min rounds; at 1% loss by 40-60%: more
    assert clean.reason == "planned rounds done" and clean.rounds == rule.min == clean.planned
    assert lossy.rounds > clean.rounds and lossy.reason in ("planned rounds done", "maximum reached")
    assert lossy.planned > rule.min
