"""linkem's flow log as Python reads it (`longlook.flowlog`): the ECN columns, which say per
interval what each flow's packets carried on the wire, and a log from an older linkem."""

from __future__ import annotations

import json
from pathlib import Path

from longlook.flowlog import COLUMNS, ECN_COLUMNS, read_flow_log


def _line(t: float, **counters) -> dict:
    base = {"t": t, "direction": "up", "proto": "udp", "src": "c:1", "dst": "s:1", "packets": 3, "bytes": 3000}
    base |= {"dropped_loss": 0, "dropped_buffer": 0, "sojourn_packets": 0, "sojourn_ms_mean": None}
    return base | {"sojourn_ms_max": None} | counters


def test_the_ecn_columns_are_read_per_line(tmp_path: Path):
    path = tmp_path / "flows.jsonl"
    lines = [
        _line(0.025, ect0_seen=3, ect1_seen=0, ce_seen=1, ecn_rewritten=3),
        _line(0.05, ect0_seen=7, ect1_seen=0, ce_seen=1, ecn_rewritten=7),
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    log = read_flow_log(path)
    assert list(log.columns) == COLUMNS and set(ECN_COLUMNS) <= set(COLUMNS)
    assert list(log["ect0_seen"]) == [3, 7] and list(log["ce_seen"]) == [1, 1]
    assert list(log["ecn_rewritten"]) == [3, 7] and list(log["ect1_seen"]) == [0, 0]


def test_a_log_from_a_linkem_without_ecn_counters_reads_zero(tmp_path: Path):
    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps(_line(0.025)) + "\n")
    log = read_flow_log(path)
    for c in ECN_COLUMNS:
        assert list(log[c]) == [0], c
