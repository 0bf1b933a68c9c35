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


def _down(t: float, packets: int, *, src="198.18.2.2:4433", dst="198.18.1.2:5000", dropped=0) -> dict:
    return _line(t, direction="down", src=src, dst=dst, packets=packets, bytes=packets * 1200, dropped_buffer=dropped)


def test_the_longest_delivery_gap_follows_the_server_to_a_new_client_address(tmp_path: Path):
    """Releases of the server's packets every 5 ms, then none from 1.005 s to 1.060 s (a NAT
    rebinding), then again toward the client's new port; another server's flow and a line
    that only counted a drop do not fill the gap."""
    from longlook.flowlog import longest_delivery_gap

    lines = [_down(round(0.9 + i * 0.005, 3), 10 * (i + 1)) for i in range(22)]  # up to 1.005
    lines += [_down(1.03, 220, dropped=3)]  # a drop only: no release
    lines += [_down(1.02, 5, src="198.18.2.2:4434")]  # another server
    lines += [_down(round(1.06 + i * 0.005, 3), 5 * (i + 1), dst="198.18.1.2:6000") for i in range(10)]
    path = tmp_path / "flows.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in sorted(lines, key=lambda x: x["t"])) + "\n")
    log = read_flow_log(path)
    gap, began = longest_delivery_gap(log, "198.18.2.2", 4433, start_s=0.5, end_s=2.0)
    assert (gap, began) == (55.0, 505.0)
    # within a window that ends before the move, the gaps are the 5 ms intervals
    assert longest_delivery_gap(log, "198.18.2.2", 4433, start_s=0.5, end_s=1.0)[0] == 5.0
    assert longest_delivery_gap(log, "198.18.2.9", None, start_s=0.5, end_s=2.0) is None


def test_a_run_reads_its_own_lines_from_where_the_log_stood(tmp_path: Path):
    path = tmp_path / "flows.jsonl"
    first = json.dumps(_line(0.025)) + "\n"
    path.write_text(first + json.dumps(_line(0.05, packets=9)) + "\n")
    log = read_flow_log(path, from_byte=len(first.encode()))
    assert list(log["packets"]) == [9]


def test_a_video_players_idle_gap_is_no_stall_but_a_wait_on_a_request_is(tmp_path: Path):
    """Releases at 1.0-1.2 s (a segment), none while the player idles with a full buffer
    until its next request at 4.0 s, then none until 4.9 s (the path changed), then the
    segment: over the requests only, the stall is the 0.9 s the request waited, from 4.0 s."""
    from longlook.flowlog import longest_delivery_gap

    lines = [_down(round(1.0 + i * 0.005, 3), 10 * (i + 1)) for i in range(41)]  # 1.0-1.2
    lines += [_down(round(4.9 + i * 0.005, 3), 500 + 10 * i, dst="198.18.1.2:6000") for i in range(41)]
    path = tmp_path / "flows.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    log = read_flow_log(path)
    everything = longest_delivery_gap(log, "198.18.2.2", None, start_s=0.9, end_s=5.2)
    assert everything == (3700.0, 300.0)  # the idle gap, 1.2 -> 4.9
    waiting = [(0.95, 1.2), (4.0, 5.1)]
    assert longest_delivery_gap(log, "198.18.2.2", None, start_s=0.9, end_s=5.2, waiting=waiting) == (900.0, 3100.0)
    # a request served while it waited met only the log's interval; none waiting, nothing said
    assert longest_delivery_gap(log, "198.18.2.2", None, start_s=0.9, end_s=5.2, waiting=[(1.0, 1.1)])[0] == 5.0
    assert longest_delivery_gap(log, "198.18.2.2", None, start_s=0.9, end_s=5.2, waiting=[]) is None


def test_a_players_request_times_go_on_linkems_clock():
    from longlook.kinds.video.delivery_gap import waiting_spans

    requests = [{"start_s": 0.5, "end_s": 0.75}, {"start_s": 2.0, "end_s": None}]
    assert waiting_spans(requests, t0_mono_s=1000.0, linkem_zero_s=990.0) == [(10.5, 10.75)]
