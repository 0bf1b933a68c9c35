"""Conformance in depth: our endpoint's own qlog (transport parameters, ACK
frames), the fingerprint's stream scheduling and 0-RTT, and the "pacing-limited" reason,
on recorded, trimmed logs of real runs (tests/data/conformance, made by its trim.py) and
on synthetic logs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from longlook.kinds.conformance.params import ack_frequency, from_qlog, read_trace
from longlook.kinds.conformance.params.fingerprint import fingerprint
from longlook.kinds.conformance.params.scheduling import concurrency, scheduling, scheduling_label
from longlook.kinds.conformance.params.send_clock import pacing_limited, send_clock
from longlook.kinds.conformance.params.zero_rtt import CLIENT_CANNOT_RESUME, zero_rtt
from longlook.qlog import qlog_from_events
import repo_paths

DATA = repo_paths.DATA / "conformance"


def fixture(name: str):
    return read_trace(DATA / f"{name}.sqlog.gz")


# ---- our endpoint's qlog: transport parameters and ACK frames ----------------------------


def test_our_ack_frequency_counts_ack_frames_not_received_packets():
    old = ack_frequency(fixture("ours-cubic"))  # recorded before: no frames, every packet counted
    new = ack_frequency(fixture("ours-cubic-acks"))  # frames_processed after each ACK frame
    assert "no frames" in old.note
    assert "packets with an ACK frame" in new.note
    tr = fixture("ours-cubic-acks")
    rx = tr.received[tr.received["packet_type"] == "1rtt"]
    acks = int(rx["has_ack"].fillna(False).astype(bool).sum())
    assert 0 < acks < len(rx)  # some packets carried no (new) ACK: they are not counted


def test_our_fingerprint_has_both_sides_parameters_and_quinns_frame_counts():
    rows = fingerprint(fixture("ours-cubic-acks"), fixture("ours-client-parameters"))
    got = {(r["side"], r["field"]): r["value"] for r in rows}
    for side in ("server", "client"):
        assert got[(side, "initial_max_data")] == 15 * 2**20  # the endpoint's --conn-window
        assert got[(side, "initial_max_stream_data_bidi_local")] == 6 * 2**20
        assert got[(side, "max_udp_payload_size")] == 1472
        assert got[(side, "max_ack_delay")] == 25
    assert got[("client", "ack_frames")] == 1061  # quinn's count at close
    assert got[("client", "max_data_updates")] == 2
    # without the client's own log our server's log says nothing of the client's side
    alone = {(r["side"], r["field"]) for r in fingerprint(fixture("ours-cubic-acks"))}
    assert ("client", "initial_max_data") not in alone and ("server", "initial_max_data") in alone


def test_frames_processed_belong_to_the_packet_received_before_them():
    ev = [
        {"time": 1.0, "name": "transport:packet_received", "data": {"header": {"packet_type": "1RTT"}}},
        {"time": 1.0, "name": "transport:frames_processed", "data": {"frames": [{"frame_type": "ack"}]}},
        {"time": 2.0, "name": "transport:packet_received", "data": {"header": {"packet_type": "1RTT"}}},
    ]
    tr = from_qlog(qlog_from_events(ev, "QUIC"))
    assert tr.received["has_ack"].tolist() == [True, None]


# ---- flow-control growth, stream scheduling, 0-RTT ----------------------------------------


def test_quic_go_window_growth_from_max_data_and_max_stream_data():
    got = {(r["side"], r["field"]): r["value"] for r in fingerprint(fixture("quic-go-windows"))}
    # quic-go's client doubles its 768 KiB connection window (and 512 KiB stream window) as it
    # auto-tunes: 4 and 6 raises in the first second, about every 3 RTTs
    assert (got[("client", "max_data_updates")], got[("client", "max_data_final")]) == (4, 1608436)
    assert got[("client", "max_data_growth")] == pytest.approx(1608436 / 786432)
    assert got[("client", "max_stream_data_updates")] == 6
    assert got[("client", "max_stream_data_growth")] == pytest.approx(1346282 / 524288)
    assert 100 <= got[("client", "max_data_interval_median")] <= 130


def test_scheduling_of_quic_gos_page_from_its_stream_frames():
    s = scheduling(fixture("quic-go-page").stream_sent, None)
    assert s["source"].startswith("server log") and s["objects"] == 9  # the page and its 8 objects
    assert s["label"] == "round-robin" and s["value"] > 4.5


def test_scheduling_of_our_page_from_the_clients_object_timings():
    doc = json.loads((DATA / "ours-page-fetch.json").read_text())
    s = scheduling(fixture("ours-cubic-acks").stream_sent, doc)  # quinn logs no STREAM frames
    assert s["source"].startswith("client") and s["objects"] == 8
    assert s["label"] == "round-robin"


def test_scheduling_labels_sequential_and_interleaved_pages():
    sequential = [(i * 10.0, i * 10.0 + 9.0) for i in range(8)]
    side_by_side = [(0.0, 80.0 + i) for i in range(8)]
    assert scheduling_label(concurrency(sequential), 8) == "sequential"
    assert scheduling_label(concurrency(side_by_side), 8) == "round-robin"
    pairs = [(k * 20.0, k * 20.0 + 20.0) for k in range(4) for _ in range(2)]  # two at a time
    assert concurrency(pairs) == pytest.approx(2.0)
    assert scheduling_label(concurrency(pairs), 8) == "partly interleaved"
    assert scheduling([], {"objects": []}) is None


def test_zero_rtt_outcomes():
    doc = json.loads((DATA / "ours-page-fetch.json").read_text())
    assert zero_rtt({"zero_rtt": doc["zero_rtt_resumed"]}, True)["label"] == "sent, accepted"
    assert zero_rtt({"zero_rtt": {"attempted": True, "accepted": False}}, True)["value"] == 0.0
    assert zero_rtt({"zero_rtt": {"attempted": False}}, True)["label"].startswith("not sent")
    assert zero_rtt(None, False)["label"] == CLIENT_CANNOT_RESUME
    resumed = {"zero_rtt": {"attempted": True, "accepted": True}, "handshake_ms": 40.0}
    assert zero_rtt({**resumed, "objects": [{"start_ms": 0.4}]}, True)["label"] == "sent, accepted"
    late = zero_rtt({**resumed, "objects": [{"start_ms": 41.0}]}, True)
    assert late["value"] == 1.0 and late["label"].endswith("after the handshake")


# ---- pacing-limited --------------------------------------------------------------------------


def _log(send_times, cwnd=200_000, srtt=40.0, in_flight=40_000, size=1250):
    ev = [
        {
            "time": 0.0,
            "name": "recovery:metrics_updated",
            "data": {
                "congestion_window": cwnd,
                "smoothed_rtt": srtt,
                "min_rtt": srtt,
                "latest_rtt": srtt,
                "bytes_in_flight": in_flight,
            },
        }
    ]
    ev += [
        {
            "time": float(t),
            "name": "transport:packet_sent",
            "data": {"header": {"packet_type": "1RTT"}, "raw": {"length": size}, "frames": [{"frame_type": "stream"}]},
        }
        for t in send_times
    ]
    return from_qlog(qlog_from_events(ev, "QUIC"))


def test_a_sender_paced_below_the_link_with_room_in_its_window_is_pacing_limited():
    # one 1250-byte packet every 1.25 ms: 8 Mbit/s on a 20 Mbit/s link; cwnd/srtt allows 40
    tr = _log(np.arange(0, 2000, 1.25))
    c = send_clock(tr)
    assert c["send_mbit"] == pytest.approx(8.0, rel=0.02)
    assert c["gap_regularity"] == pytest.approx(1.0, abs=0.01)
    assert c["window_mbit"] == pytest.approx(40.0, rel=0.01)
    assert pacing_limited(c["send_mbit"], c["gap_regularity"], c["window_mbit"], 0.2, 20.0, 0.9)


def test_lumps_a_full_window_or_a_small_window_are_not_pacing_limited():
    # about the same rate in lumps of 8 packets at irregular times (ACKs or flow-control
    # credit handing data over); lumps on a fixed period would look like a pacer's releases
    starts = np.cumsum(np.random.default_rng(1).exponential(10.0, 200))
    lumps = [t + j * 0.01 for t in starts for j in range(8)]
    c = send_clock(_log(lumps))
    assert c["send_mbit"] < 18 and c["gap_regularity"] < 0.5
    assert not pacing_limited(c["send_mbit"], c["gap_regularity"], c["window_mbit"], 0.2, 20.0, 0.9)
    even = send_clock(_log(np.arange(0, 2000, 1.25), cwnd=40_000))  # cwnd/srtt allows 8 Mbit/s
    assert not pacing_limited(even["send_mbit"], even["gap_regularity"], even["window_mbit"], 0.2, 20.0, 0.9)
    assert not pacing_limited(8.0, 1.0, 40.0, 0.97, 20.0, 0.9)  # the window is full: it limits
    assert not pacing_limited(19.5, 1.0, 40.0, 0.2, 20.0, 0.9)  # not slow


def test_the_kernel_log_has_no_send_clock():
    assert all(v != v for v in send_clock(fixture("kernel-cubic.tcp")).values())
