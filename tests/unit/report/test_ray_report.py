"""Results by node (report/sections/nodes.py): a node slower than the others on the same
cells is flagged; nodes that agree are not; cells run on one node only compare the audit."""

from __future__ import annotations

import numpy as np
import pandas as pd

from longlook.report.sections.nodes import node_table


def _runs(slow_factor: float, shared: bool, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for node in ("a", "b"):
        for cell in ("c1", "c2", "c3"):
            if not shared and (cell == "c1") != (node == "a"):
                continue  # each cell on one node only
            for arm, base in (("h3", 400.0), ("h2", 500.0)):
                for rnd in range(8):
                    plt = base * (1 + rng.normal(0, 0.03)) * (slow_factor if node == "b" else 1)
                    rows.append(
                        {
                            "run_id": f"{node}{cell}{arm}{rnd}",
                            "node": node,
                            "cell_id": cell,
                            "arm": arm,
                            "round": rnd,
                            "status": "ok",
                            "protocol_requested": arm,
                            "protocol_negotiated": arm,
                            "audit_flagged": False,
                            "plt_ms": plt,
                        }
                    )
    return pd.DataFrame(rows)


def test_a_node_slower_on_the_same_cells_is_flagged():
    t = node_table(_runs(1.2, shared=True), "plt_ms").set_index("node")
    assert t.loc["b", "differs"] and t.loc["a", "differs"]  # each differs from the other
    assert 15 < t.loc["b", "metric_diff_pct"] < 25
    assert t.loc["b", "shared_runs"] == 48


def test_nodes_that_agree_are_consistent():
    t = node_table(_runs(1.0, shared=True), "plt_ms").set_index("node")
    assert not t["differs"].any()
    assert abs(t.loc["b", "metric_diff_pct"]) < 3


def test_cells_on_one_node_only_are_not_compared_on_the_metric():
    t = node_table(_runs(1.2, shared=False), "plt_ms").set_index("node")
    assert (t["shared_runs"] == 0).all() and not t["differs"].any()
    assert t.loc["a", "cells"] == 1 and t.loc["b", "cells"] == 2


def test_a_node_with_many_audit_flagged_runs_is_flagged():
    runs = _runs(1.0, shared=False)
    runs.loc[runs["node"] == "a", "audit_flagged"] = True
    t = node_table(runs, "plt_ms", exclude_flagged=False).set_index("node")
    assert t.loc["a", "differs"] and t.loc["a", "flagged_share"] == 1.0
