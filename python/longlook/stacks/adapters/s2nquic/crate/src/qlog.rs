//! qlog from s2n-quic's event `Subscriber` (s2n-quic writes none): one JSON-SEQ file per
//! connection (RFC 7464 records, qlog 0.3 names), with the events longlook's readers need:
//! packets sent and received (type, number, size, frames), `recovery:metrics_updated`
//! (cwnd, bytes in flight, RTTs), `recovery:packet_lost`, the peer's transport parameters,
//! and BBR's state changes as `recovery:congestion_state_updated`. s2n-quic has no event for
//! Cubic's recovery or congestion-avoidance state: those are derived by the reader from the
//! metrics (qlog/dialects.py), as for ngtcp2 and tquic.
//!
//! A packet's frames are published as events of their own: a sent packet's before it
//! (collected and attached when the packet is sent), a received packet's after it (the
//! packet's record is held until the next packet event and written with them).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use s2n_quic::provider::event::{events, ConnectionInfo, ConnectionMeta, Subscriber};
use serde_json::{json, Map, Value};

/// Connections whose log was closed and flushed (the client waits for its one before exiting).
pub static CLOSED_LOGS: AtomicUsize = AtomicUsize::new(0);

/// Our transport parameters as configured (s2n-quic publishes only the peer's).
#[derive(Clone)]
pub struct LocalParameters(pub Value);

pub struct QlogSubscriber {
    pub dir: Option<PathBuf>,
    pub side: &'static str, // "server" | "client"
    pub cc: String,
    pub local: LocalParameters,
}

pub struct Qlog {
    out: Option<BufWriter<File>>,
    t0: Instant,
    sent_frames: Vec<Value>, // frames of the packet being built
    received: Option<Value>, // the last received packet, gathering its frames
    bbr_state: Option<&'static str>,
    last_metrics: Option<Value>,
    flushed_at: Instant,
}

const FLUSH_EVERY: Duration = Duration::from_millis(100);

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn header(h: &events::PacketHeader) -> Value {
    use events::PacketHeader::*;
    let (ty, number) = match h {
        Initial { number, .. } => ("initial", Some(*number)),
        Handshake { number, .. } => ("handshake", Some(*number)),
        ZeroRtt { number, .. } => ("0RTT", Some(*number)),
        OneRtt { number, .. } => ("1RTT", Some(*number)),
        Retry { .. } => ("retry", None),
        VersionNegotiation { .. } => ("version_negotiation", None),
        _ => ("unknown", None),
    };
    json!({"packet_type": ty, "packet_number": number})
}

fn frame(f: &events::Frame) -> Value {
    use events::Frame::*;
    match f {
        Padding { len, .. } => json!({"frame_type": "padding", "length": len}),
        Ping { .. } => json!({"frame_type": "ping"}),
        Ack { largest_acknowledged, ack_range_count, .. } => {
            json!({"frame_type": "ack", "largest_acknowledged": largest_acknowledged, "ack_range_count": ack_range_count})
        }
        Crypto { offset, len, .. } => json!({"frame_type": "crypto", "offset": offset, "length": len}),
        Stream { id, offset, len, is_fin, .. } => {
            json!({"frame_type": "stream", "stream_id": id, "offset": offset, "length": len, "fin": is_fin})
        }
        MaxData { value, .. } => json!({"frame_type": "max_data", "maximum": value}),
        MaxStreamData { id, value, .. } => json!({"frame_type": "max_stream_data", "stream_id": id, "maximum": value}),
        DataBlocked { data_limit, .. } => json!({"frame_type": "data_blocked", "limit": data_limit}),
        StreamDataBlocked { stream_id, stream_data_limit, .. } => {
            json!({"frame_type": "stream_data_blocked", "stream_id": stream_id, "limit": stream_data_limit})
        }
        HandshakeDone { .. } => json!({"frame_type": "handshake_done"}),
        ConnectionClose { .. } => json!({"frame_type": "connection_close"}),
        other => {
            // the remaining frames by their event name, e.g. NewConnectionId -> new_connection_id
            let name = format!("{other:?}");
            let name = name.split([' ', '{', '(']).next().unwrap_or("unknown");
            let mut snake = String::new();
            for (i, c) in name.chars().enumerate() {
                if c.is_uppercase() && i > 0 {
                    snake.push('_');
                }
                snake.extend(c.to_lowercase());
            }
            json!({"frame_type": snake})
        }
    }
}

fn same_packet(a: &Value, h: &Value) -> bool {
    a["header"]["packet_type"] == h["packet_type"] && a["header"]["packet_number"] == h["packet_number"]
}

impl Qlog {
    fn write(&mut self, name: &str, data: Value) {
        let t = ms(self.t0.elapsed());
        self.record(json!({"time": t, "name": name, "data": data}));
    }

    /// One whole record per write: the buffer reaches the file in whole records only (the
    /// testbed may take a log while its connection lives), and at least every 100 ms.
    fn record(&mut self, rec: Value) {
        if let Some(out) = self.out.as_mut() {
            let mut bytes = Vec::with_capacity(256);
            bytes.push(0x1e);
            let _ = serde_json::to_writer(&mut bytes, &rec);
            bytes.push(b'\n');
            let _ = out.write_all(&bytes);
            if self.flushed_at.elapsed() >= FLUSH_EVERY {
                let _ = out.flush();
                self.flushed_at = Instant::now();
            }
        }
    }

    fn flush_received(&mut self) {
        if let Some(rec) = self.received.take() {
            self.record(rec);
        }
    }

    fn close(&mut self) {
        self.flush_received();
        if let Some(mut out) = self.out.take() {
            let _ = out.flush();
            CLOSED_LOGS.fetch_add(1, Ordering::SeqCst);
        }
    }
}

impl Drop for Qlog {
    fn drop(&mut self) {
        self.close();
    }
}

impl Subscriber for QlogSubscriber {
    type ConnectionContext = Qlog;

    fn create_connection_context(&mut self, meta: &ConnectionMeta, _info: &ConnectionInfo) -> Qlog {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        let out = self.dir.as_ref().and_then(|dir| {
            // unique across server restarts and processes: wall clock, pid, s2n's connection id
            let name = format!("{}-{}-{}_{}.sqlog", now.as_micros(), std::process::id(), meta.id, self.side);
            File::create(dir.join(name)).ok().map(|f| BufWriter::with_capacity(1 << 20, f))
        });
        let mut q = Qlog { out, t0: Instant::now(), sent_frames: vec![], received: None,
                           bbr_state: None, last_metrics: None, flushed_at: Instant::now() };
        q.record(json!({"qlog_version": "0.3", "qlog_format": "JSON-SEQ",
            "title": format!("longlook-s2n-quic {}", self.side),
            "trace": {"vantage_point": {"type": self.side},
                      "common_fields": {"protocol_type": ["QUIC"], "time_format": "relative",
                                        "reference_time": ms(now)},
                      "configuration": {"congestion_control": self.cc}}}));
        let mut local = self.local.0.clone();
        if let Some(m) = local.as_object_mut() {
            m.insert("owner".into(), json!("local"));
        }
        q.write("transport:parameters_set", local);
        if self.cc == "bbr" {
            q.bbr_state = Some("startup"); // s2n-quic's BBR starts in Startup without an event
        }
        q
    }

    fn on_packet_sent(&mut self, q: &mut Qlog, _m: &ConnectionMeta, e: &events::PacketSent) {
        q.flush_received();
        let frames = std::mem::take(&mut q.sent_frames);
        let h = header(&e.packet_header);
        // frames of this packet only (a packet given up while being built left none behind)
        let frames: Vec<Value> = frames.into_iter().filter(|f| f["_packet"] == h).map(|mut f| {
            f.as_object_mut().map(|o| o.remove("_packet"));
            f
        }).collect();
        q.write("transport:packet_sent", json!({"header": h, "raw": {"length": e.packet_len}, "frames": frames}));
    }

    fn on_frame_sent(&mut self, q: &mut Qlog, _m: &ConnectionMeta, e: &events::FrameSent) {
        let mut f = frame(&e.frame);
        f["_packet"] = header(&e.packet_header);
        q.sent_frames.push(f);
    }

    fn on_packet_received(&mut self, q: &mut Qlog, _m: &ConnectionMeta, e: &events::PacketReceived) {
        q.flush_received();
        let t = ms(q.t0.elapsed());
        q.received = Some(json!({"time": t, "name": "transport:packet_received",
            "data": {"header": header(&e.packet_header), "raw": {"length": e.packet_len}, "frames": []}}));
    }

    fn on_frame_received(&mut self, q: &mut Qlog, _m: &ConnectionMeta, e: &events::FrameReceived) {
        let h = header(&e.packet_header);
        if let Some(rec) = q.received.as_mut() {
            if same_packet(&rec["data"], &h) {
                if let Some(frames) = rec["data"]["frames"].as_array_mut() {
                    frames.push(frame(&e.frame));
                }
            }
        }
    }

    fn on_recovery_metrics(&mut self, q: &mut Qlog, _m: &ConnectionMeta, e: &events::RecoveryMetrics) {
        let data = json!({"congestion_window": e.congestion_window, "bytes_in_flight": e.bytes_in_flight,
            "smoothed_rtt": ms(e.smoothed_rtt), "latest_rtt": ms(e.latest_rtt), "min_rtt": ms(e.min_rtt),
            "rtt_variance": ms(e.rtt_variance), "pto_count": e.pto_count,
            "congestion_limited": e.congestion_limited});
        if q.last_metrics.as_ref() == Some(&data) {
            return; // s2n-quic publishes the metrics with every ack, changed or not
        }
        q.last_metrics = Some(data.clone());
        q.write("recovery:metrics_updated", data);
    }

    fn on_packet_lost(&mut self, q: &mut Qlog, _m: &ConnectionMeta, e: &events::PacketLost) {
        q.write("recovery:packet_lost", json!({"header": header(&e.packet_header), "bytes_lost": e.bytes_lost,
                                              "is_mtu_probe": e.is_mtu_probe}));
    }

    fn on_bbr_state_changed(&mut self, q: &mut Qlog, _m: &ConnectionMeta, e: &events::BbrStateChanged) {
        use events::BbrState::*;
        // BBRv2's four ProbeBW phases are one state, the phase kept beside it
        let (new, phase) = match e.state {
            Startup { .. } => ("startup", None),
            Drain { .. } => ("drain", None),
            ProbeBwDown { .. } => ("probe_bw", Some("down")),
            ProbeBwCruise { .. } => ("probe_bw", Some("cruise")),
            ProbeBwRefill { .. } => ("probe_bw", Some("refill")),
            ProbeBwUp { .. } => ("probe_bw", Some("up")),
            ProbeRtt { .. } => ("probe_rtt", None),
            _ => ("unknown", None),
        };
        let old = q.bbr_state.replace(new);
        q.write("recovery:congestion_state_updated", json!({"old": old, "new": new, "phase": phase}));
    }

    fn on_slow_start_exited(&mut self, q: &mut Qlog, _m: &ConnectionMeta, e: &events::SlowStartExited) {
        let cause = format!("{:?}", e.cause).to_lowercase();
        q.write("recovery:slow_start_exited", json!({"cause": cause.split([' ', '{']).next().unwrap_or(""),
                                                    "congestion_window": e.congestion_window}));
    }

    fn on_mtu_updated(&mut self, q: &mut Qlog, _m: &ConnectionMeta, e: &events::MtuUpdated) {
        q.write("connectivity:mtu_updated", json!({"mtu": e.mtu, "search_complete": e.search_complete}));
    }

    fn on_transport_parameters_received(&mut self, q: &mut Qlog, _m: &ConnectionMeta,
                                        e: &events::TransportParametersReceived) {
        let p = &e.transport_parameters;
        let mut m = Map::new();
        m.insert("owner".into(), json!("remote"));
        m.insert("max_idle_timeout".into(), json!(ms(p.max_idle_timeout)));
        m.insert("ack_delay_exponent".into(), json!(p.ack_delay_exponent));
        m.insert("max_ack_delay".into(), json!(ms(p.max_ack_delay)));
        m.insert("max_udp_payload_size".into(), json!(p.max_udp_payload_size));
        m.insert("initial_max_stream_data_bidi_local".into(), json!(p.initial_max_stream_data_bidi_local));
        m.insert("initial_max_stream_data_bidi_remote".into(), json!(p.initial_max_stream_data_bidi_remote));
        m.insert("initial_max_stream_data_uni".into(), json!(p.initial_max_stream_data_uni));
        m.insert("initial_max_streams_bidi".into(), json!(p.initial_max_streams_bidi));
        m.insert("initial_max_streams_uni".into(), json!(p.initial_max_streams_uni));
        q.write("transport:parameters_set", Value::Object(m));
    }

    fn on_connection_closed(&mut self, q: &mut Qlog, _m: &ConnectionMeta, e: &events::ConnectionClosed) {
        q.write("connectivity:connection_closed", json!({"reason": format!("{:?}", e.error)}));
        q.close();
    }
}
