"""The report's Path changes section (report/sections/path_changes.py): per cell and arm,
the runs a NAT rebound, how many completed, and the longest silence beside the baseline."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pandas as pd

from longlook.report.sections.path_changes import section


def _analysis(runs: list[dict]) -> SimpleNamespace:
    cells = [
        SimpleNamespace(id="plain", link=SimpleNamespace(nat=None)),
        SimpleNamespace(id="nat", link=SimpleNamespace(nat=object())),
    ]
    return SimpleNamespace(
        scenario=SimpleNamespace(cells=lambda: cells),
        runs=pd.DataFrame(runs),
        cells=pd.DataFrame({"cell_id": ["plain", "nat"]}),
    )


def _run(cell, arm, status, rebound_ms=None, stall=math.nan, stall_from=math.nan):
    events = [{"t_ms": rebound_ms, "cause": "scheduled"}] if rebound_ms is not None else math.nan
    return {
        "cell_id": cell,
        "arm": arm,
        "status": status,
        "nat_rebindings": events,
        "receive_stall_ms": stall,
        "receive_stall_from_ms": stall_from,
    }


def test_survival_and_the_stall_read_off_one_row_per_cell_and_arm():
    runs = [
        _run("plain", "h3", "ok", stall=21.8, stall_from=3),
        _run("plain", "h2", "ok"),
        _run("nat", "h3", "ok", 1019, 41.3, 1002),
        _run("nat", "h3", "ok", 1021, 41.5, 1003),
        _run("nat", "h2", "failed", 1084),
        _run("nat", "h2", "failed", 1086),
    ]
    html = section(None, _analysis(runs)).html
    rows = [r for r in html.split("<tr>")[2:]]
    text = [" ".join(c.split("</td>")[0] for c in r.split("<td")[1:]) for r in rows]
    assert len(text) == 4, html
    nat_h2 = next(r for r in rows if ">nat<" in r and ">h2<" in r)
    nat_h3 = next(r for r in rows if ">nat<" in r and ">h3<" in r)
    assert "0 of 2" in nat_h2 and "2 of 2" in nat_h3, html
    assert "41.4" in nat_h3 and "41.5" in nat_h3 and "1020" in nat_h3, nat_h3
    assert "21.8" in next(r for r in rows if ">plain<" in r and ">h3<" in r)


def test_no_section_without_a_nat():
    a = _analysis([_run("plain", "h3", "ok")])
    a.scenario = SimpleNamespace(cells=lambda: [SimpleNamespace(id="plain", link=SimpleNamespace(nat=None))])
    assert section(None, a) is None


def test_a_handover_shows_when_the_path_went_down_and_when_the_client_moved():
    cells = [
        SimpleNamespace(id="wifi", link=SimpleNamespace(nat=None, handover=None)),
        SimpleNamespace(id="handover", link=SimpleNamespace(nat=None, handover=object())),
    ]
    down = {"at_s": 1.0, "first_path_down_t_ms": 1004.0, "dropped_path_down": {"down": 12}}

    def run(cell, arm, status, moved_ms=None):
        r = _run(cell, arm, status)
        if cell == "handover":
            r["handover"] = down
            r["migration"] = {"planned_at_ms": 1000.0, "at_ms": moved_ms, "not_moved": None if moved_ms else "TCP"}
            if moved_ms:
                r["server_controllers"] = {
                    "count": 2,
                    "changed_at_ms": 1020.0,
                    "cwnd_before": 103_070,
                    "cwnd_after": 12_000,
                }
        return r

    runs = [
        run("wifi", "h3", "ok"),
        run("handover", "h3", "ok", 1000.4),
        run("handover", "h3", "ok", 1000.8),
        run("handover", "h2", "failed"),
    ]
    a = SimpleNamespace(
        scenario=SimpleNamespace(cells=lambda: cells),
        runs=pd.DataFrame(runs),
        cells=pd.DataFrame({"cell_id": ["wifi", "handover"]}),
    )
    html = section(None, a).html
    rows = html.split("<tr>")[2:]
    h3 = next(r for r in rows if ">handover<" in r and ">h3<" in r)
    h2 = next(r for r in rows if ">handover<" in r and ">h2<" in r)
    assert "2 of 2" in h3 and "1004" in h3 and "2 of 2, median 1001" in h3, h3
    assert "reset in 2 of 2, cwnd 103,070 -&gt; 12,000 B" in h3 or "reset in 2 of 2, cwnd 103,070 -> 12,000 B" in h3, h3
    assert "0 of 1" in h2 and "median" not in h2, h2
    assert ">none<" in next(r for r in rows if ">wifi<" in r)


def test_other_servers_windows_read_per_outcome_the_commonest_first():
    from longlook.report.sections.path_changes import _controller_text

    reset = {"outcome": "reset", "before": 120_000, "lowest": 38_400, "lowest_at_ms": 50.0, "reductions": 1}
    cut = {"outcome": "reduced", "before": 130_000, "lowest": 91_000, "lowest_at_ms": 21.0, "reductions": 1}
    text = _controller_text([None, None, None], [reset, reset, cut])
    assert text.startswith("reset in 2 of 3: 120,000 -> 38,400 B 50 ms after its challenge"), text
    assert "kept in 1 of 3, cut 130,000 -> 91,000 B (x0.70, 1 cut(s))" in text and text.endswith("from its qlog")
    # our server's own account comes first; neither: nothing said
    assert _controller_text([{"count": 1}], [reset]) == "kept in 1 of 1"
    assert _controller_text([None], []) == "–"
