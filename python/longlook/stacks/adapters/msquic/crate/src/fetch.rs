//! The client: one page load (the HTML, then every `src="..."` in it at once) or one bulk
//! download over HTTP/3, written as the fetch JSON of `endpoint fetch` (docs/interfaces.md).

use std::fs::OpenOptions;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::{Buf, Bytes};
use h3_msquic_async::{msquic, msquic_async};
use serde_json::{json, Value};

use crate::config::{self, Flags};

pub const EXIT_PROTOCOL_UNAVAILABLE: i32 = 3;
const H3_NO_ERROR: u64 = 0x100;
// how long the client waits for msquic to finish closing (its CONNECTION_CLOSE sent and
// answered) before it exits: the fetch's timings are taken before
const CLOSE_WAIT: Duration = Duration::from_secs(1);

struct Transfer {
    path: String,
    status: Option<u16>,
    bytes: u64,
    start_ms: f64,
    first_byte_ms: Option<f64>,
    end_ms: Option<f64>,
    body: Vec<u8>,
    goodput: Vec<(f64, u64)>,
}

fn ms(t0: Instant) -> f64 {
    t0.elapsed().as_secs_f64() * 1000.0
}

pub async fn fetch(f: &Flags) -> i32 {
    let url = f.get_or("url", "").to_string();
    let mode = f.get_or("mode", "page").to_string();
    let mut doc = json!({"run_id": f.get_or("run-id", ""), "url": url, "mode": mode, "protocol_requested": "h3",
        "protocol": null, "ok": false, "error": null, "started_unix_ms": null, "plt_ms": null,
        "handshake_ms": null, "ttfb_ms": null, "bytes": 0, "objects": [],
        "zero_rtt": {"attempted": false, "accepted": false}, "local_addr": null, "goodput": [],
        "goodput_mbit": null, "stopped_early": false});
    let timeout = Duration::from_secs_f64(f.get_or("timeout-s", "60").parse::<f64>().unwrap_or(60.0));
    let code = match tokio::time::timeout(timeout, run(f, &url, &mode, &mut doc)).await {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => {
            doc["error"] = json!(e);
            1
        }
        Err(_) => {
            doc["error"] = json!(format!("no result within {:.0} s", timeout.as_secs_f64()));
            1
        }
    };
    let text = doc.to_string();
    match f.get("out") {
        Ok(out) => {
            if let Err(e) = std::fs::write(out, text) {
                eprintln!("fetch: {e}");
                return 1;
            }
        }
        Err(_) => println!("{text}"),
    }
    code
}

/// Whether the handshake failed because the server offers no h3 (msquic ends the handshake
/// with ALPN_NEG_FAILURE: it completes only on an ALPN both sides offer).
fn alpn_refused(e: &msquic_async::ConnectionStartError) -> bool {
    match e {
        msquic_async::ConnectionStartError::ConnectionLost(msquic_async::ConnectionError::ShutdownByTransport(
            status,
            _,
        )) => matches!(status.try_as_status_code(), Ok(msquic::StatusCode::QUIC_STATUS_ALPN_NEG_FAILURE)),
        _ => false,
    }
}

async fn run(f: &Flags, url: &str, mode: &str, doc: &mut Value) -> Result<i32, String> {
    let rest = url.strip_prefix("https://").ok_or("--url must be https://")?;
    let (authority, first_path) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].to_string()),
        None => (rest, "/".to_string()),
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) => {
            (h.trim_start_matches('[').trim_end_matches(']'), p.parse::<u16>().map_err(|e| format!("port: {e}"))?)
        }
        None => (authority, 443),
    };

    let registration = config::registration()?;
    let alpn = [msquic::BufferRef::from(config::ALPN)];
    let configuration =
        msquic::Configuration::open(registration, &alpn, Some(&config::settings(f.get_or("cc", "cubic"))?))
            .map_err(|e| format!("msquic configuration: {e}"))?;
    // the server's certificate is verified by OpenSSL against --ca alone (msquic's
    // CaCertificateFile); msquic's OpenSSL path checks the chain, not the name in it
    let mut credential = msquic::CredentialConfig::new_client().set_ca_certificate_file(f.get("ca")?.to_string());
    if f.has("chacha20") {
        // the one TLS 1.3 suite offered: msquic hands quictls "TLS_CHACHA20_POLY1305_SHA256" alone
        // (SSL_CTX_set_ciphersuites) instead of its three
        credential = credential.set_allowed_cipher_suites(msquic::AllowedCipherSuiteFlags::CHACHA20_POLY1305_SHA256);
    }
    configuration.load_credential(&credential).map_err(|e| format!("--ca: {e}"))?;
    let configuration: &'static msquic::Configuration = Box::leak(Box::new(configuration));

    let conn = msquic_async::Connection::new(registration).map_err(|e| e.to_string())?;
    if let Ok(path) = f.get("keylog") {
        // msquic fills QUIC_PARAM_CONN_TLS_SECRETS as the handshake goes; msquic-async sets the
        // parameter now (before the start) and appends them in NSS key log format once connected
        let file = OpenOptions::new().create(true).append(true).open(path).map_err(|e| format!("--keylog: {e}"))?;
        conn.set_sslkeylog_file(file).map_err(|e| format!("--keylog: {e}"))?;
    }

    let t0 = Instant::now();
    doc["started_unix_ms"] =
        json!(SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0));
    if let Err(e) = conn.start(configuration, host, port).await {
        if alpn_refused(&e) {
            doc["error"] = json!(format!("handshake: the server offers no h3 ({e:?})"));
            return Ok(EXIT_PROTOCOL_UNAVAILABLE);
        }
        return Err(format!("handshake: {e:?}"));
    }
    doc["handshake_ms"] = json!(ms(t0));
    doc["local_addr"] = json!(conn.get_local_addr().map(|a| a.to_string()).ok());
    // msquic completes a handshake only on an ALPN both offered, and ours is h3 alone
    doc["protocol"] = json!(config::ALPN);
    let (mut driver, send) =
        h3::client::new(h3_msquic_async::Connection::new(conn.clone())).await.map_err(|e| e.to_string())?;
    let drive = tokio::spawn(async move { std::future::poll_fn(|cx| driver.poll_close(cx)).await });

    let ctx = Request {
        authority: authority.to_string(),
        run_id: f.get_or("run-id", "").to_string(),
        t0,
        bulk: mode == "bulk",
    };
    let first = ctx.get(send.clone(), first_path, mode == "page").await?;
    let mut transfers = vec![];
    if mode == "page" {
        let html = String::from_utf8_lossy(&first.body).into_owned();
        let srcs: Vec<String> =
            html.split("src=\"").skip(1).filter_map(|s| s.split('"').next()).map(String::from).collect();
        let tasks: Vec<_> = srcs
            .into_iter()
            .map(|path| {
                let (ctx, send) = (ctx.clone(), send.clone());
                tokio::spawn(async move { ctx.get(send, path, false).await })
            })
            .collect();
        transfers.push(first);
        for t in tasks {
            transfers.push(t.await.map_err(|e| e.to_string())??);
        }
    } else {
        transfers.push(first);
    }
    let plt = ms(t0);
    let total: u64 = transfers.iter().map(|t| t.bytes).sum();
    doc["objects"] = json!(transfers
        .iter()
        .map(|t| json!({"path": t.path, "status": t.status, "bytes": t.bytes,
            "start_ms": t.start_ms, "first_byte_ms": t.first_byte_ms, "end_ms": t.end_ms}))
        .collect::<Vec<_>>());
    doc["ttfb_ms"] = json!(transfers[0].first_byte_ms);
    doc["plt_ms"] = json!(plt);
    doc["bytes"] = json!(total);
    doc["goodput"] = json!(transfers[0].goodput.iter().map(|(t, b)| json!([t, b])).collect::<Vec<_>>());
    doc["goodput_mbit"] = json!(total as f64 * 8.0 / 1000.0 / plt);
    // close with H3_NO_ERROR and wait (briefly) until msquic has done so on the wire
    let _ = tokio::time::timeout(CLOSE_WAIT, std::future::poll_fn(|cx| conn.poll_shutdown(cx, H3_NO_ERROR))).await;
    drive.abort();
    let bad: Vec<&str> = transfers.iter().filter(|t| t.status != Some(200)).map(|t| t.path.as_str()).collect();
    if !bad.is_empty() {
        doc["error"] = json!(format!("status other than 200 for {}", bad.join(", ")));
        return Ok(1);
    }
    doc["ok"] = json!(true);
    Ok(0)
}

#[derive(Clone)]
struct Request {
    authority: String,
    run_id: String,
    t0: Instant,
    bulk: bool,
}

type Sender = h3::client::SendRequest<h3_msquic_async::OpenStreams, Bytes>;

impl Request {
    /// GET `path`, timed from the request to the end of its body; the body is kept if asked.
    async fn get(&self, mut send: Sender, path: String, keep: bool) -> Result<Transfer, String> {
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
            let n = chunk.remaining();
            t.bytes += n as u64;
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
                if t.goodput.last().map_or(true, |(at, _)| now - at >= 10.0) {
                    t.goodput.push((now, t.bytes));
                }
            }
        }
        t.end_ms = Some(ms(self.t0));
        Ok(t)
    }
}
