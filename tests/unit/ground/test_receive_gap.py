"""The longest silence a QUIC receiver met, from its qlog."""

from __future__ import annotations

from longlook.qlog import qlog_from_events
from longlook.qlog.gaps import longest_receive_gap, longest_receive_gap_in


def _received(times):
    return [{"time": t, "name": "transport:packet_received", "data": {}} for t in times]


def test_the_longest_gap_between_packets_received_and_where_it_began():
    events = _received([0.0, 1.0, 2.0, 2.5, 310.0, 311.0]) + [{"time": 900.0, "name": "transport:packet_sent"}]
    gap = longest_receive_gap(qlog_from_events(events))
    assert (gap.ms, gap.from_ms, gap.packets) == (307.5, 2.5, 6)
    assert longest_receive_gap(qlog_from_events(_received([5.0]))) is None


def test_the_file_reader_finds_the_same_gap_without_parsing_every_record(tmp_path):
    import json

    events = _received([0.0, 1.0, 2.0, 2.5, 310.0, 311.0]) + [{"time": 900.0, "name": "transport:packet_sent"}]
    head = {"qlog_version": "0.3", "qlog_format": "JSON-SEQ"}
    path = tmp_path / "client.sqlog"
    path.write_bytes(b"".join(b"\x1e" + json.dumps(r, separators=(",", ":")).encode() + b"\n" for r in [head, *events]))
    path.write_bytes(path.read_bytes() + b'\x1e{"time":999.0,"name":"transport:packet_rec')  # cut short
    assert longest_receive_gap_in(path) == longest_receive_gap(qlog_from_events(events))
