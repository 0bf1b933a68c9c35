"""Synthetic congestion logs with known answers, shared by the states tests."""

from __future__ import annotations

import json
from pathlib import Path

from longlook.analyses.states import QlogFile, qlog_from_events


def ev(t: float, name: str, **data) -> dict:
    return {"time": t, "name": name, "data": data}


def state_events(states: list[str], step_ms: float = 10.0, start_ms: float = 10.0, trigger: str = "ack") -> list[dict]:
    """Transitions Init -> states[0] -> states[1] ... one every step_ms."""
    out, prev = [], "Init"
    for i, s in enumerate(states):
        out.append(
            ev(
                start_ms + i * step_ms,
                "recovery:congestion_state_updated",
                old=prev,
                new=s,
                trigger=trigger,
                congestion_window=12000 + 1000 * i,
            )
        )
        out.append(
            ev(start_ms + i * step_ms, "recovery:metrics_updated", congestion_window=12000 + 1000 * i, total_retrans=0)
        )
        prev = s
    return out


def quic_log(
    states: list[str],
    *,
    batches: list[str] = (),
    lost_packets: int | None = None,
    lost_probes: int = 0,
    end_ms: float | None = None,
) -> QlogFile:
    events = state_events(states)
    t = events[-1]["time"] if events else 0.0
    for i, trig in enumerate(batches):
        events.append(
            ev(
                t + 1 + i,
                "recovery:packet_lost",
                trigger=trig,
                trigger_certain=True,
                lost_bytes=1200,
                lost_packets_estimate=1,
                batch=True,
            )
        )
    if lost_packets is not None:
        events.append(
            ev(
                t + 50,
                "longlook:connection_stats",
                lost_packets=lost_packets,
                lost_plpmtud_probes=lost_probes,
                sent_packets=1000,
            )
        )
    if end_ms is not None:
        events.append(ev(end_ms, "longlook:loss_summary", spurious_losses=None))
    return qlog_from_events(events, "QUIC")


def tcp_log(states: list[str], *, total_retrans: int = 0, dsack: int = 0) -> QlogFile:
    events = state_events(states, trigger="tcp_info_sample")
    events.append(
        ev(
            events[-1]["time"] + 5,
            "longlook:tcp_info_summary",
            samples=10,
            total_retrans=total_retrans,
            dsack_dups=dsack,
            reord_seen=dsack,
        )
    )
    return qlog_from_events(events, "TCP")


def linkem(drops: int = 0, reordered: int = 0) -> dict:
    return {
        "elapsed_s": 1.0,
        "directions": {
            "down": {"dropped_loss": 0, "dropped_buffer": drops, "dropped_middlebox": 0, "reordered": reordered},
            "up": {"dropped_loss": 0, "dropped_buffer": 0, "dropped_middlebox": 0, "reordered": 0},
        },
    }


def write_qlog(path: Path, log: QlogFile) -> None:
    header = {
        "qlog_format": "JSON-SEQ",
        "qlog_version": "0.3",
        "trace": {"common_fields": {"protocol_type": [log.protocol], "reference_time": 0}},
    }
    with open(path, "wb") as f:
        for rec in [header, *log.events]:
            f.write(b"\x1e" + json.dumps(rec).encode() + b"\n")
