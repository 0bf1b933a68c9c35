"""A CPU ratio states the load it was measured at; the CPU budget curve reads each budget's
load time and CPU per MB of both clients with h3 vs h2's interval."""

from __future__ import annotations

import numpy as np
import pandas as pd

from longlook.analyses.reproduce import Ratio
from longlook.analyses.reproduce.cpu_curve import curve_markdown
from longlook.analyses.reproduce.measured import Measured
from longlook.core.spec import Statistics


def _measured(cells: dict[str, dict], per_cell) -> Measured:
    rows = []
    for cell_id in cells:
        for arm, metrics in per_cell(cell_id).items():
            # 8 rounds, the first measured twice: its flagged attempt (100x) is never counted
            for i in range(9):
                rows.append(
                    {
                        "run_id": f"{cell_id}-{arm}-{i}",
                        "cell_id": cell_id,
                        "round": max(i - 1, 0),
                        "arm": arm,
                        "status": "ok",
                        "protocol_requested": None,
                        "protocol_negotiated": None,
                        "audit_flagged": i == 0,
                        **{k: (v * 100 if i == 0 else v * (1 + 0.02 * (i - 4))) for k, v in metrics.items()},
                    }
                )
    return Measured(
        cells=pd.DataFrame({"cell_id": list(cells), "dims": list(cells.values())}),
        runs=pd.DataFrame(rows),
        statistics=Statistics(alpha=0.01),
    )


def test_a_cpu_ratio_names_the_load_it_was_measured_at():
    m = _measured(
        {"c": {"rate_mbit": 1000}},
        lambda c: {
            "h3": {"client_cpu_s_per_mb": 0.004, "client_cpu_share": 0.40},
            "h2": {"client_cpu_s_per_mb": 0.002, "client_cpu_share": 0.20},
        },
    )
    out = Ratio("h3", "h2", at_least=1.0, metric="client_cpu_s_per_mb", unit="s/MB", load="client").evaluate(m)
    assert "cores busy" in out.number and "no CPU budget" in out.number, out.number
    # medians of the counted runs: the flagged run (100x) moves nothing
    assert "0.40 vs" in out.number and "0.20 cores busy" in out.number, out.number
    bare = Ratio("h3", "h2", at_least=1.0, metric="client_cpu_s_per_mb", unit="s/MB").evaluate(m)
    assert "cores busy" not in bare.number
    unrecorded = Ratio("h3", "h2", at_least=1.0, metric="client_cpu_s_per_mb", load="server").evaluate(m)
    assert "the server's load not recorded" in unrecorded.number


def test_the_curve_reads_each_budget_in_order_with_h3_against_h2():
    budgets = {"u": {"client_cpu": "unlimited"}, "p1": {"client_cpu": "core-1pct"}}
    slow = {"u": 1.0, "p1": 4.0}

    def per_cell(c):
        return {
            "h3": {"plt_ms": 1000 * slow[c], "client_cpu_s_per_mb": 0.03, "client_cpu_share": 0.05},
            "h2": {"plt_ms": 1000 * (1 + (slow[c] - 1) / 3), "client_cpu_s_per_mb": 0.01, "client_cpu_share": 0.01},
        }

    lines = curve_markdown(_measured(budgets, per_cell))
    assert lines[0].startswith("| client CPU budget")
    unlimited, one = lines[2], lines[3]
    assert unlimited.startswith("| unlimited |") and one.startswith("| core-1pct |")
    assert "+0.0%" in unlimited or "-0.0%" in unlimited, unlimited
    # h3 4000 ms vs h2 2000 ms: h3 100% slower, and shown so
    assert "-100.0%" in one and "TCP faster" in one, one
    assert "| 4040 | 2020 |" in one and "| 30.3 | 10.1 |" in one and "| 8/8 |" in one, one
    assert np.isfinite(float(one.split("|")[2]))
