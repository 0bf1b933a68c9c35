"""One connection's sender-side trace as the extractors read it, from a qlog in our
vocabulary (our endpoint's QUIC log, any stack's log once normalised by qlog/dialects.py, or
our server's TCP log: TCP_INFO samples and the kernel's tracepoint transitions).

Times are ms from the log's start; windows are bytes. QUIC logs give per-packet events;
the TCP log gives samples every few ms (`interval_ms` in its `longlook:congestion_control`
event) and the exact state transitions, no packets.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ....qlog import QlogFile, parse_records, read_qlog

FIRST_PACKETS = 20
QUIC_MIN_DATAGRAM = 1200  # RFC 9000 §14: every QUIC endpoint can send and receive 1200 bytes
METRIC_COLUMNS = ["t_ms", "cwnd", "ssthresh", "srtt_ms", "latest_rtt_ms", "min_rtt_ms", "in_flight"]


@dataclass
class ConnTrace:
    protocol: str  # "QUIC" | "TCP"
    metrics: pd.DataFrame  # METRIC_COLUMNS, time order; NaN where the log has no value
    states: pd.DataFrame  # t_ms, old, new, trigger
    losses: np.ndarray  # t_ms of packet_lost events (QUIC)
    sent: pd.DataFrame  # t_ms, size, packet_type, ack_eliciting (QUIC packet_sent)
    received: pd.DataFrame  # t_ms, size, packet_type, has_ack (QUIC packet_received)
    info: dict = field(default_factory=dict)  # longlook:congestion_control / tcp_info_summary / parameters
    # from the frames of received packets where the log lists them: the peer's MAX_DATA
    # (t_ms, maximum) and the ack_delay (ms) of its ACK frames
    max_data: list = field(default_factory=list)
    ack_delays: list = field(default_factory=list)
    max_stream_data: list = field(default_factory=list)  # (t_ms, stream_id, maximum)
    stream_sent: list = field(default_factory=list)  # (t_ms, stream_id, length) of STREAM frames sent

    @property
    def is_tcp(self) -> bool:
        return self.protocol == "TCP"

    @property
    def mss(self) -> float | None:
        """TCP: the sender's MSS (the summary's, else the first window / 10)."""
        m = self.info.get("mss")
        return float(m) if m else None

    def max_datagram(self) -> float:
        """The sender's max datagram size at the start (RFC 9002's max_datagram_size for the
        initial window): TCP's MSS; QUIC: what the log says (`mtu` of our endpoint, the
        largest packet of the first round trip), never below 1200."""
        if self.is_tcp:
            return self.mss or 1448.0
        if self.info.get("mtu"):
            return float(self.info["mtu"])
        data = self.sent[self.sent["packet_type"].isin(["1rtt", "onertt"])]["size"].dropna()
        if data.empty:
            return float(QUIC_MIN_DATAGRAM)
        # the size its first data packets were cut to: the most common one (a path-MTU probe
        # is a single larger packet, and s2n-quic sends one within its first flight; the
        # largest packet would take the probe's size for the sender's)
        counts = pd.Series(self.first_datagram_sizes()).value_counts()
        if counts.empty:
            return float(QUIC_MIN_DATAGRAM)
        return float(max(size for size, n in counts.items() if n == counts.max()))

    def first_datagram_sizes(self) -> list[float]:
        """The sizes (>= 1200 B) of the sender's first 1-RTT packets, in order: its data size
        and, where it probed or raised the path MTU early, the larger ones."""
        data = self.sent[self.sent["packet_type"].isin(["1rtt", "onertt"])]["size"].dropna()
        return [float(x) for x in data.iloc[:FIRST_PACKETS] if x >= QUIC_MIN_DATAGRAM]

    def first_rtt_ms(self) -> float:
        rtt = self.metrics["latest_rtt_ms"].dropna()
        rtt = rtt[rtt > 0]
        return float(rtt.iloc[0]) if len(rtt) else 100.0

    def min_rtt_ms(self) -> float | None:
        """The smallest RTT the sender saw (its min_rtt, else latest/smoothed samples)."""
        for col in ("min_rtt_ms", "latest_rtt_ms", "srtt_ms"):
            v = self.metrics[col].dropna()
            v = v[(v > 0) & (v < 300)] if col != "min_rtt_ms" else v[v > 0]
            if col == "min_rtt_ms":
                # the initial 333 ms placeholder (RFC 9002's kInitialRtt) is not a sample
                v = v[v != 333.0]
            if len(v):
                return float(v.min())
        return None


def _num(x) -> float:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else np.nan


def _size(data: dict) -> float:
    raw = data.get("raw") or {}
    header = data.get("header") or {}
    for v in (raw.get("length"), header.get("packet_size"), header.get("length"), data.get("length")):
        if isinstance(v, (int, float)):
            return float(v)
    return np.nan


ACK_ONLY = {"ack", "padding"}


def _peer_frames(frames: list[dict], t: float, max_data: list, ack_delays: list, max_stream_data: list) -> None:
    """The peer's MAX_DATA and MAX_STREAM_DATA raises and ACK delays among a received
    packet's frames."""
    for f in frames:
        if f.get("frame_type") == "max_data" and isinstance(f.get("maximum"), (int, float)):
            max_data.append((t, float(f["maximum"])))
        elif f.get("frame_type") == "max_stream_data" and isinstance(f.get("maximum"), (int, float)):
            max_stream_data.append((t, f.get("stream_id"), float(f["maximum"])))
        elif f.get("frame_type") == "ack" and isinstance(f.get("ack_delay"), (int, float)):
            ack_delays.append(float(f["ack_delay"]))


def from_qlog(q: QlogFile) -> ConnTrace:
    metrics, states, losses, sent, received = [], [], [], [], []
    info: dict = {}
    last: dict = {}
    max_data, ack_delays, max_stream_data, stream_sent = [], [], [], []
    for e in q.events:
        name, t, data = e.get("name"), float(e.get("time", 0.0)), e.get("data") or {}
        if name == "recovery:metrics_updated":
            last.update({k: v for k, v in data.items() if v is not None})
            ss = data.get("ssthresh", last.get("ssthresh"))
            metrics.append(
                [
                    t,
                    _num(last.get("congestion_window", last.get("cwnd"))),
                    _num(ss) if ss is not None else np.nan,
                    _num(last.get("smoothed_rtt")),
                    _num(data.get("latest_rtt")),
                    _num(last.get("min_rtt")),
                    _num(last.get("bytes_in_flight")),
                ]
            )
        elif name == "recovery:congestion_state_updated":
            states.append([t, data.get("old"), data.get("new"), data.get("trigger")])
        elif name == "recovery:packet_lost":
            losses.append(t)
        elif name == "transport:packet_sent":
            frame_list = [f for f in data.get("frames") or [] if isinstance(f, dict)]
            frames = {f.get("frame_type") for f in frame_list}
            stream_sent += [
                (t, f.get("stream_id"), _num(f.get("length"))) for f in frame_list if f.get("frame_type") == "stream"
            ]
            ptype = (data.get("header") or {}).get("packet_type") or data.get("packet_type")
            sent.append([t, _size(data), str(ptype).lower(), bool(frames - ACK_ONLY) if frames else True])
        elif name == "transport:packet_received":
            frame_list = [f for f in data.get("frames") or [] if isinstance(f, dict)]
            frames = [f.get("frame_type") for f in frame_list]
            _peer_frames(frame_list, t, max_data, ack_delays, max_stream_data)
            ptype = (data.get("header") or {}).get("packet_type") or data.get("packet_type")
            received.append([t, _size(data), str(ptype).lower(), "ack" in frames if frames else None])
        elif name == "transport:frames_processed":
            # frames logged apart from their packet (our endpoint: quinn logs packets without
            # frames): they belong to the packet received last
            frame_list = [f for f in data.get("frames") or [] if isinstance(f, dict)]
            _peer_frames(frame_list, t, max_data, ack_delays, max_stream_data)
            if received and any(f.get("frame_type") == "ack" for f in frame_list):
                received[-1][3] = True
        elif name in ("longlook:congestion_control", "longlook:tcp_info_summary"):
            info.update(data)
        elif name == "longlook:connection_stats":  # our endpoint's (quinn's) counters at close
            info["connection_stats"] = data
        elif name == "transport:parameters_set":
            owner = data.get("owner") or data.get("initiator") or "local"
            info.setdefault("parameters", {}).setdefault(owner, {}).update(data)
    m = pd.DataFrame(metrics, columns=METRIC_COLUMNS)
    if q.protocol == "TCP":
        # TCP_INFO's rtt is the smoothed RTT, logged as both; only the kernel's min_rtt is separate
        m["latest_rtt_ms"] = m["srtt_ms"]
    return ConnTrace(
        protocol=q.protocol,
        metrics=m.sort_values("t_ms", kind="stable").reset_index(drop=True),
        states=pd.DataFrame(states, columns=["t_ms", "old", "new", "trigger"]),
        losses=np.array(sorted(losses), dtype=float),
        sent=pd.DataFrame(sent, columns=["t_ms", "size", "packet_type", "ack_eliciting"]),
        received=pd.DataFrame(received, columns=["t_ms", "size", "packet_type", "has_ack"]),
        info=info,
        max_data=max_data,
        ack_delays=ack_delays,
        max_stream_data=max_stream_data,
        stream_sent=stream_sent,
    )


def read_trace(path: str | Path) -> ConnTrace:
    """A log file as written (JSON-SEQ in our vocabulary), or gzip-compressed (`.gz`)."""
    path = Path(path)
    if path.suffix != ".gz":
        return from_qlog(read_qlog(path))
    records = parse_records(gzip.decompress(path.read_bytes()))
    header = records[0] if records and "qlog_format" in records[0] else {}
    return from_qlog(QlogFile(path=path, header=header, events=[r for r in records if "name" in r and "time" in r]))


def loss_events(tr: ConnTrace) -> list[tuple[float, float, float]]:
    """The sender's window reductions: (t_ms, window just before, what it was cut to).
    The cut-to value is the new ssthresh where the log has one (Linux's PRR lowers the window
    gradually to it; QUIC stacks set both at once), else the reduced window. A slow-start
    exit without loss (HyStart++: ssthresh set at the window) is not a reduction."""
    m = tr.metrics.dropna(subset=["cwnd"])
    out = []
    prev_cwnd, prev_ss = None, None
    for r in m.itertuples():
        ss = r.ssthresh if r.ssthresh == r.ssthresh else None
        if prev_cwnd is not None:
            if ss is not None and (prev_ss is None or ss < prev_ss) and ss < 0.97 * prev_cwnd:
                out.append((r.t_ms, prev_cwnd, ss))
            elif ss is None and r.cwnd < 0.97 * prev_cwnd:
                out.append((r.t_ms, prev_cwnd, r.cwnd))
        prev_cwnd = r.cwnd
        prev_ss = ss if ss is not None else prev_ss
    # one reduction per round trip (RFC 9002 §7.3.2): a further cut within a smoothed RTT of
    # the first belongs to the same episode, which is judged by its first cut
    rtt = tr.min_rtt_ms() or 0.0
    merged: list[tuple[float, float, float]] = []
    for ev in out:
        if merged and ev[0] - merged[-1][0] < rtt:
            continue
        merged.append(ev)
    return merged
