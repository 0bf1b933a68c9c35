"""What held a sender back, from hand-made qlogs and from a real one of our server."""

from __future__ import annotations

from pathlib import Path

import pytest

from longlook.qlog import qlog_from_events, read_qlog
from longlook.qlog.sender_limits import sender_limits


def metrics(t: float, cwnd: float | None, in_flight: float | None) -> dict:
    data = {k: v for k, v in (("congestion_window", cwnd), ("bytes_in_flight", in_flight)) if v is not None}
    return {"time": t, "name": "recovery:metrics_updated", "data": data}


def sent(t: float, *frames: str) -> dict:
    data = {"header": {"packet_type": "1RTT"}}
    if frames:
        data["frames"] = [{"frame_type": f} for f in frames]
    return {"time": t, "name": "transport:packet_sent", "data": data}


def test_a_full_window_most_of_the_time_is_window_limited():
    # full (in flight at the window) from 0 to 80 ms, half full from 80 to 100: 80% full
    log = qlog_from_events(
        [metrics(0, 100_000, 99_000), metrics(40, 120_000, 118_000), metrics(80, 120_000, 60_000), sent(100, "stream")]
    )
    limits = sender_limits(log)
    assert limits.window_full_share == pytest.approx(0.8) and limits.regime == "window"


def test_a_window_never_full_with_blocked_frames_is_flow_control():
    log = qlog_from_events(
        [metrics(0, 1_000_000, 200_000), metrics(10, None, 300_000), sent(5, "stream", "stream_data_blocked"),
         metrics(20, None, 250_000), sent(30, "stream")]
    )  # fmt: skip
    limits = sender_limits(log)
    assert limits.window_full_share == 0.0 and limits.blocked_frames == 1 and limits.regime == "flow control"


def test_without_blocked_frames_it_is_the_application_or_cannot_be_told():
    events = [metrics(0, 1_000_000, 100_000), metrics(10, None, 120_000), metrics(20, None, 90_000)]
    assert sender_limits(qlog_from_events([*events, sent(30, "stream")])).regime == "application"
    # a log that lists no frames (our endpoint's) cannot show a BLOCKED frame
    assert sender_limits(qlog_from_events([*events, sent(30)])).regime == "flow control or application"


def test_too_few_metrics_say_nothing():
    assert sender_limits(qlog_from_events([metrics(0, 12_000, 1_200), sent(5)])).regime == ""
    assert sender_limits(qlog_from_events([sent(5, "stream")])).regime == ""


def test_a_small_window_is_full_within_a_few_packets():
    # ten packets' window with seven in flight: full (the pacer holds the rest back)
    log = qlog_from_events(
        [metrics(0, 12_000, 8_400), metrics(10, 12_000, 8_400), metrics(20, 12_000, 9_000), sent(30)]
    )
    assert sender_limits(log).regime == "window"


def test_our_server_s_log_of_a_download_reads(tmp_path: Path):
    # a real server qlog's shape: metrics with both fields, packets without frames
    lines = [b'{"qlog_format":"JSON-SEQ","trace":{"common_fields":{"protocol_type":["QUIC"]}}}']
    for i in range(50):
        lines.append(
            b'{"time":%d,"name":"recovery:metrics_updated","data":{"congestion_window":%d,"bytes_in_flight":%d}}'
            % (i, 50_000 + 1_000 * i, 50_000 + 1_000 * i - (20_000 if i % 3 == 0 else 0))
        )
        lines.append(b'{"time":%d.5,"name":"transport:packet_sent","data":{"header":{"packet_type":"1RTT"}}}' % i)
    path = tmp_path / "server.sqlog"
    path.write_bytes(b"".join(b"\x1e" + line + b"\n" for line in lines))
    limits = sender_limits(read_qlog(path))
    assert limits.samples == 50 and not limits.frames_logged
    assert limits.window_full_share == pytest.approx(2 / 3, abs=0.03) and limits.regime == "window"


def test_between_two_acks_the_packets_sent_fill_the_window():
    # an ACK leaves half a 10-packet window in flight; the sender fills it again packet by packet
    events = []
    for cycle in range(5):
        t0 = cycle * 10.0
        events.append(metrics(t0, 12_000, 6_000))
        events += [
            {"time": t0 + k, "name": "transport:packet_sent", "data": {"raw": {"length": 1200}}} for k in range(1, 6)
        ]
    limits = sender_limits(qlog_from_events(events))
    # full from the second packet of each cycle (8,400 bytes) to the next ACK, 8 of 10 ms, and
    # in the last cycle to its last packet, 3 of 5: 35 of 45 ms
    assert limits.window_full_share == pytest.approx(35 / 45) and limits.regime == "window"
    # an ACK-only packet adds nothing in flight
    acks = [
        {
            "time": t,
            "name": "transport:packet_sent",
            "data": {"raw": {"length": 1200}, "frames": [{"frame_type": "ack"}]},
        }
        for t in range(1, 10)
    ]
    only_acks = sender_limits(qlog_from_events([metrics(0, 12_000, 6_000), *acks, metrics(10, 12_000, 6_000)]))
    assert only_acks.window_full_share == 0.0
