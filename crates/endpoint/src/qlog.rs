//! qlog writer in JSON-SEQ form (RFC 7464 framing, qlog "JSON-SEQ" serialisation, draft-ietf-quic-qlog-main-schema).
//!
//! Every record is `0x1E <json> \n`. The first record is the header (qlog_format, qlog_version,
//! trace with the reference time); every later record is one event with a `time` in ms
//! relative to that reference. Writes go through a `BufWriter` and are flushed on `flush()`
//! and on drop (connection close): an unbuffered file cut quinn's throughput to 88 Mbit/s.
//!
//! quinn's own qlog (its `qlog` feature) is merged into the same trace by `quinn_stream`:
//! quinn writes the packet events (`transport:packet_sent` / `packet_received`), which our
//! congestion controller cannot see; the recovery events stay ours (see `QuinnEvents`).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

pub const RECORD_SEPARATOR: u8 = 0x1E;
pub const QLOG_VERSION: &str = "0.3";

/// Which side of the connection wrote the trace (qlog `vantage_point.type`).
#[derive(Clone, Copy, Debug)]
pub enum VantagePoint {
    Server,
    Client,
}

pub struct QlogWriter<W: Write = BufWriter<File>> {
    out: W,
    reference: Instant,
}

/// A writer shared by the congestion controller (and its clones) of one connection.
pub type SharedQlog = Arc<Mutex<QlogWriter>>;

impl QlogWriter {
    pub fn create(
        path: &Path,
        title: &str,
        protocol: &str,
        vantage: VantagePoint,
        reference: Instant,
    ) -> std::io::Result<Self> {
        let file = File::create(path)?;
        Self::new(BufWriter::with_capacity(256 * 1024, file), title, protocol, vantage, reference)
    }
}

impl<W: Write> QlogWriter<W> {
    pub fn new(
        out: W,
        title: &str,
        protocol: &str,
        vantage: VantagePoint,
        reference: Instant,
    ) -> std::io::Result<Self> {
        let mut w = QlogWriter { out, reference };
        let unix_ms = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64() * 1000.0).unwrap_or(0.0)
            - reference.elapsed().as_secs_f64() * 1000.0;
        let header = serde_json::json!({
            "qlog_version": QLOG_VERSION,
            "qlog_format": "JSON-SEQ",
            "title": title,
            "trace": {
                "vantage_point": {"type": match vantage { VantagePoint::Server => "server", VantagePoint::Client => "client" }},
                "common_fields": {
                    "protocol_type": [protocol],
                    "time_format": "relative",
                    "reference_time": unix_ms,
                },
            },
        });
        w.write_record(&header.to_string())?;
        Ok(w)
    }

    fn write_record(&mut self, json: &str) -> std::io::Result<()> {
        self.out.write_all(&[RECORD_SEPARATOR])?;
        self.out.write_all(json.as_bytes())?;
        self.out.write_all(b"\n")
    }

    /// The instant event times are relative to.
    pub fn reference(&self) -> Instant {
        self.reference
    }

    /// Time of `at` in ms relative to the trace's reference time.
    pub fn rel_ms(&self, at: Instant) -> f64 {
        at.saturating_duration_since(self.reference).as_secs_f64() * 1000.0
    }

    /// One event at `t_ms` relative to the reference (for clocks other than `Instant`).
    pub fn event_at_ms(&mut self, t_ms: f64, name: &str, data: &str) {
        let line = format!("{{\"time\":{t_ms:.3},\"name\":\"{name}\",\"data\":{data}}}");
        let _ = self.write_record(&line);
    }

    /// One event; `data` must be a JSON object (already serialised, to keep the hot path cheap).
    pub fn event(&mut self, at: Instant, name: &str, data: &str) {
        let t = self.rel_ms(at);
        // Logging must never take the connection down: I/O errors are counted, not raised.
        let line = format!("{{\"time\":{t:.3},\"name\":\"{name}\",\"data\":{data}}}");
        let _ = self.write_record(&line);
    }

    pub fn flush(&mut self) {
        let _ = self.out.flush();
    }

    #[cfg(test)]
    pub fn into_inner(mut self) -> W {
        self.out.flush().unwrap();
        // Move out without running Drop's flush a second time.
        let out = unsafe { std::ptr::read(&self.out) };
        std::mem::forget(self);
        out
    }
}

impl<W: Write> Drop for QlogWriter<W> {
    fn drop(&mut self) {
        let _ = self.out.flush();
    }
}

/// A quinn qlog stream whose events land in `trace`, on the same clock (quinn gets our
/// reference instant as its start time).
pub fn quinn_stream(trace: &SharedQlog, title: &str) -> Option<quinn::QlogStream> {
    let reference = trace.lock().ok()?.reference();
    let mut cfg = quinn::QlogConfig::default();
    cfg.writer(Box::new(QuinnEvents { trace: trace.clone(), record: Vec::with_capacity(512), header_seen: false }))
        .title(Some(title.to_string()))
        .start_time(reference);
    cfg.into_stream()
}

/// The `Write` quinn's qlog streamer writes to: it cuts the byte stream into records (one
/// record ends at its `\n`; JSON escapes newlines inside strings) and appends whole records
/// to our trace, so that records of the two writers never interleave. It drops quinn's
/// header (ours is the trace's only header) and quinn's `recovery:*` events: our controller
/// writes those with ssthresh, RTTs in ms (quinn 0.11 writes seconds into the ms fields) and
/// the inferred loss trigger (quinn labels every loss `reordering_threshold`).
struct QuinnEvents {
    trace: SharedQlog,
    record: Vec<u8>,
    header_seen: bool,
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

impl QuinnEvents {
    fn keep(record: &[u8]) -> bool {
        find(record, b"\"name\":\"recovery:").is_none()
    }

    /// quinn puts a sent packet's size in `header.length`; qlog 0.3 tools (qvis) read it from
    /// `raw.length`: add that, by a splice rather than a JSON round trip (hot path).
    fn with_raw_length(record: &[u8]) -> Option<Vec<u8>> {
        find(record, b"\"name\":\"transport:packet_sent\"")?;
        let at = find(record, b"\"length\":")? + b"\"length\":".len();
        let digits = record[at..].iter().take_while(|b| b.is_ascii_digit()).count();
        let end_of_header = at + digits + find(&record[at + digits..], b"}")?;
        let mut out = Vec::with_capacity(record.len() + 24);
        out.extend_from_slice(&record[..=end_of_header]);
        out.extend_from_slice(b",\"raw\":{\"length\":");
        out.extend_from_slice(&record[at..at + digits]);
        out.push(b'}');
        out.extend_from_slice(&record[end_of_header + 1..]);
        Some(out)
    }
}

impl Write for QuinnEvents {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut rest = buf;
        while let Some(end) = rest.iter().position(|b| *b == b'\n') {
            self.record.extend_from_slice(&rest[..=end]);
            rest = &rest[end + 1..];
            if !self.header_seen {
                self.header_seen = true;
            } else if Self::keep(&self.record) {
                let patched = Self::with_raw_length(&self.record);
                if let Ok(mut t) = self.trace.lock() {
                    t.out.write_all(patched.as_deref().unwrap_or(&self.record))?;
                }
            }
            self.record.clear();
        }
        self.record.extend_from_slice(rest);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Flushes a client's trace when dropped, also on an error return: quinn's driver may hold
/// the controller (and so the writer) past the end of the fetch, and the process exits
/// without dropping it.
pub struct FlushOnDrop(pub Option<SharedQlog>);

impl Drop for FlushOnDrop {
    fn drop(&mut self) {
        if let Some(Ok(mut w)) = self.0.as_ref().map(|t| t.lock()) {
            w.flush();
        }
    }
}

/// Format an optional number as JSON (`null` when absent).
pub fn opt_num(v: Option<u64>) -> String {
    v.map(|x| x.to_string()).unwrap_or_else(|| "null".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_json_seq_with_header_first() {
        let t0 = Instant::now();
        let mut w = QlogWriter::new(Vec::new(), "t", "QUIC", VantagePoint::Server, t0).unwrap();
        w.event(t0, "recovery:congestion_state_updated", r#"{"old":"Init","new":"SlowStart"}"#);
        let bytes = w.into_inner();
        let records: Vec<&[u8]> = bytes.split(|b| *b == RECORD_SEPARATOR).skip(1).collect();
        assert_eq!(bytes[0], RECORD_SEPARATOR);
        assert_eq!(records.len(), 2);
        let header: serde_json::Value = serde_json::from_slice(records[0]).unwrap();
        assert_eq!(header["qlog_format"], "JSON-SEQ");
        assert_eq!(header["qlog_version"], QLOG_VERSION);
        assert_eq!(header["trace"]["vantage_point"]["type"], "server");
        let ev: serde_json::Value = serde_json::from_slice(records[1]).unwrap();
        assert_eq!(ev["name"], "recovery:congestion_state_updated");
        assert_eq!(ev["data"]["new"], "SlowStart");
        assert!(ev["time"].as_f64().unwrap() >= 0.0);
        assert!(records.iter().all(|r| r.ends_with(b"\n")));
    }

    #[test]
    fn quinn_records_merge_whole_without_header_or_recovery() {
        let path = std::env::temp_dir().join(format!("ll-qlog-merge-{}.sqlog", std::process::id()));
        let t0 = Instant::now();
        let trace: SharedQlog =
            Arc::new(Mutex::new(QlogWriter::create(&path, "t", "QUIC", VantagePoint::Server, t0).unwrap()));
        let mut q = QuinnEvents { trace: trace.clone(), record: Vec::new(), header_seen: false };
        // quinn's streamer writes a record in pieces: separator, JSON, newline.
        for rec in [
            r#"{"qlog_version":"0.3","trace":{}}"#,
            r#"{"time":1.5,"name":"transport:packet_sent","data":{"header":{"packet_type":"1RTT","packet_number":7,"length":1252}},"group_id":"ab"}"#,
            r#"{"time":2.0,"name":"recovery:metrics_updated","data":{"smoothed_rtt":0.036}}"#,
        ] {
            q.write_all(&[RECORD_SEPARATOR]).unwrap();
            q.write_all(&rec.as_bytes()[..10]).unwrap();
            trace.lock().unwrap().event(t0, "recovery:metrics_updated", r#"{"congestion_window":12000}"#);
            q.write_all(&rec.as_bytes()[10..]).unwrap();
            q.write_all(b"\n").unwrap();
        }
        drop(q);
        drop(trace);
        let bytes = std::fs::read(&path).unwrap();
        std::fs::remove_file(&path).ok();
        let records: Vec<serde_json::Value> =
            bytes.split(|b| *b == RECORD_SEPARATOR).skip(1).map(|r| serde_json::from_slice(r).unwrap()).collect();
        let names: Vec<&str> = records[1..].iter().map(|r| r["name"].as_str().unwrap()).collect();
        assert_eq!(records[0]["qlog_format"], "JSON-SEQ", "our header stays the only header");
        assert_eq!(names.iter().filter(|n| **n == "transport:packet_sent").count(), 1);
        let sent = records.iter().find(|r| r["name"] == "transport:packet_sent").unwrap();
        assert_eq!(sent["data"]["raw"]["length"], 1252, "{sent}");
        assert_eq!(sent["data"]["header"]["packet_number"], 7);
        assert_eq!(names.iter().filter(|n| **n == "recovery:metrics_updated").count(), 3, "ours only");
        assert!(records.iter().all(|r| r.get("qlog_version").is_none() || r["qlog_format"] == "JSON-SEQ"));
    }
}
