//! The client's side: one page load (the HTML, then every `src="..."` in it at once) or one
//! bulk download over an h3 connection, timed per object, and the fetch JSON of
//! `endpoint fetch` (docs/interfaces.md) it is written as.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::{Buf, Bytes};
use h3::client::SendRequest;
use h3::quic::OpenStreams;
use serde_json::{json, Value};

use crate::Flags;

/// The exit status of a client whose server offers no h3 (the harness falls back or says so).
pub const EXIT_PROTOCOL_UNAVAILABLE: i32 = 3;
/// HTTP/3's "no error", for closing the connection when done.
pub const H3_NO_ERROR: u32 = 0x100;

pub struct Transfer {
    pub path: String,
    pub status: Option<u16>,
    pub bytes: u64,
    pub start_ms: f64,
    pub first_byte_ms: Option<f64>,
    pub end_ms: Option<f64>,
    pub body: Vec<u8>,
    pub goodput: Vec<(f64, u64)>,
}

pub fn ms(t0: Instant) -> f64 {
    t0.elapsed().as_secs_f64() * 1000.0
}

/// Milliseconds since the epoch: the fetch's `started_unix_ms`.
pub fn unix_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// Where `--url` points: its authority (as the request's), host (brackets off an IPv6
/// address), port and path.
pub struct Target {
    pub authority: String,
    pub host: String,
    pub port: u16,
    pub path: String,
}

pub fn target(url: &str) -> Result<Target, String> {
    let rest = url.strip_prefix("https://").ok_or("--url must be https://")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].to_string()),
        None => (rest, "/".to_string()),
    };
    // a bracketed IPv6 address without a port ends in its bracket
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !authority.ends_with(']') => (h, p.parse::<u16>().map_err(|e| format!("port: {e}"))?),
        _ => (authority, 443),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']').to_string();
    Ok(Target { authority: authority.to_string(), host, port, path })
}

/// The fetch JSON before anything happened, and how long the fetch may take (`--timeout-s`).
pub fn new_doc(f: &Flags) -> (Value, Duration) {
    let doc = json!({"run_id": f.get_or("run-id", ""), "url": f.get_or("url", ""), "mode": f.get_or("mode", "page"),
        "protocol_requested": "h3", "protocol": null, "ok": false, "error": null, "started_unix_ms": null,
        "plt_ms": null, "handshake_ms": null, "ttfb_ms": null, "bytes": 0, "objects": [],
        "zero_rtt": {"attempted": false, "accepted": false}, "local_addr": null, "goodput": [],
        "goodput_mbit": null, "stopped_early": false});
    let timeout = Duration::from_secs_f64(f.get_or("timeout-s", "60").parse::<f64>().unwrap_or(60.0));
    (doc, timeout)
}

/// What a fetch that ran out of time says.
pub fn timed_out(timeout: Duration) -> String {
    format!("no result within {:.0} s", timeout.as_secs_f64())
}

/// The fetch JSON to `--out` (or stdout); false when it could not be written.
pub fn write(f: &Flags, doc: &Value) -> bool {
    let text = doc.to_string();
    match f.get("out") {
        Ok(out) => match std::fs::write(out, text) {
            Ok(()) => true,
            Err(e) => {
                eprintln!("fetch: {e}");
                false
            }
        },
        Err(_) => {
            println!("{text}");
            true
        }
    }
}

#[derive(Clone)]
pub struct Request {
    pub authority: String,
    pub run_id: String,
    pub t0: Instant,
    pub bulk: bool,
}

impl Request {
    pub fn new(f: &Flags, target: &Target, t0: Instant) -> Request {
        Request {
            authority: target.authority.clone(),
            run_id: f.get_or("run-id", "").to_string(),
            t0,
            bulk: f.get_or("mode", "page") == "bulk",
        }
    }

    /// GET `path`, timed from the request to the end of its body; the body is kept if asked.
    pub async fn get<O>(&self, mut send: SendRequest<O, Bytes>, path: String, keep: bool) -> Result<Transfer, String>
    where
        O: OpenStreams<Bytes>,
    {
        let mut t = Transfer {
            path,
            status: None,
            bytes: 0,
            start_ms: ms(self.t0),
            first_byte_ms: None,
            end_ms: None,
            body: vec![],
            goodput: vec![],
        };
        let req = http::Request::get(format!("https://{}{}", self.authority, t.path))
            .header("x-longlook-run", &self.run_id)
            .body(())
            .map_err(|e| e.to_string())?;
        let mut stream = send.send_request(req).await.map_err(|e| format!("request {}: {e}", t.path))?;
        stream.finish().await.map_err(|e| format!("request {}: {e}", t.path))?;
        let resp = stream.recv_response().await.map_err(|e| format!("response {}: {e}", t.path))?;
        t.first_byte_ms = Some(ms(self.t0));
        t.status = Some(resp.status().as_u16());
        while let Some(mut chunk) = stream.recv_data().await.map_err(|e| format!("body {}: {e}", t.path))? {
            t.bytes += chunk.remaining() as u64;
            if keep {
                while chunk.has_remaining() {
                    let c = chunk.chunk();
                    t.body.extend_from_slice(c);
                    let len = c.len();
                    chunk.advance(len);
                }
            }
            if self.bulk {
                let now = ms(self.t0);
                if t.goodput.last().is_none_or(|(at, _)| now - at >= 10.0) {
                    t.goodput.push((now, t.bytes));
                }
            }
        }
        t.end_ms = Some(ms(self.t0));
        Ok(t)
    }

    /// The page (its HTML, then every `src="..."` in it, all at once) or the one bulk object
    /// at `first_path`, in the order they were asked for.
    pub async fn load<O>(&self, send: SendRequest<O, Bytes>, first_path: String) -> Result<Vec<Transfer>, String>
    where
        O: OpenStreams<Bytes> + Clone + Send + Sync + 'static,
        O::BidiStream: Send,
    {
        let page = !self.bulk;
        let first = self.get(send.clone(), first_path, page).await?;
        if !page {
            return Ok(vec![first]);
        }
        let html = String::from_utf8_lossy(&first.body).into_owned();
        let srcs: Vec<String> =
            html.split("src=\"").skip(1).filter_map(|s| s.split('"').next()).map(String::from).collect();
        let tasks: Vec<_> = srcs
            .into_iter()
            .map(|path| {
                let (ctx, send) = (self.clone(), send.clone());
                tokio::spawn(async move { ctx.get(send, path, false).await })
            })
            .collect();
        let mut transfers = vec![first];
        for t in tasks {
            transfers.push(t.await.map_err(|e| e.to_string())??);
        }
        Ok(transfers)
    }
}

/// The transfers' timings into the fetch JSON: objects, time to first byte, load time (now),
/// bytes, and the first transfer's goodput series.
pub fn record(doc: &mut Value, transfers: &[Transfer], t0: Instant) {
    let plt = ms(t0);
    let total: u64 = transfers.iter().map(|t| t.bytes).sum();
    doc["objects"] = json!(transfers
        .iter()
        .map(|t| json!({"path": t.path, "status": t.status, "bytes": t.bytes,
            "start_ms": t.start_ms, "first_byte_ms": t.first_byte_ms, "end_ms": t.end_ms}))
        .collect::<Vec<_>>());
    doc["ttfb_ms"] = json!(transfers.first().and_then(|t| t.first_byte_ms));
    doc["plt_ms"] = json!(plt);
    doc["bytes"] = json!(total);
    doc["goodput"] =
        json!(transfers.first().map_or(vec![], |t| t.goodput.iter().map(|(t, b)| json!([t, b])).collect::<Vec<_>>()));
    doc["goodput_mbit"] = json!(total as f64 * 8.0 / 1000.0 / plt);
}

/// The fetch's error when some object's status was not 200; None when every one was.
pub fn bad_statuses(transfers: &[Transfer]) -> Option<String> {
    let bad: Vec<&str> = transfers.iter().filter(|t| t.status != Some(200)).map(|t| t.path.as_str()).collect();
    (!bad.is_empty()).then(|| format!("status other than 200 for {}", bad.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::target;

    #[test]
    fn urls() {
        let t = target("https://198.18.2.2:4433/page/1x1k.html").unwrap();
        assert_eq!(
            (t.authority.as_str(), t.host.as_str(), t.port, t.path.as_str()),
            ("198.18.2.2:4433", "198.18.2.2", 4433, "/page/1x1k.html")
        );
        let t = target("https://[fd00::2]:443").unwrap();
        assert_eq!((t.host.as_str(), t.port, t.path.as_str()), ("fd00::2", 443, "/"));
        let t = target("https://example.org/x").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("example.org", 443));
        let t = target("https://[fd00::2]/x").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("fd00::2", 443));
        assert!(target("http://a/").is_err());
    }
}
