//! The client: one page load (the HTML, then every `src="..."` in it at once) or one bulk
//! download over HTTP/3, written as the fetch JSON of `endpoint fetch` (docs/interfaces.md).

use std::net::ToSocketAddrs;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::{Buf, Bytes};
use h3_util::s2n::s2n_quic_h3;
use s2n_quic::provider::tls::rustls as rustls_tls;
use serde_json::{json, Value};

use crate::config::{self, Flags};
use crate::qlog::CLOSED_LOGS;

pub const EXIT_PROTOCOL_UNAVAILABLE: i32 = 3;
const H3_NO_ERROR: u32 = 0x100;

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

async fn run(f: &Flags, url: &str, mode: &str, doc: &mut Value) -> Result<i32, String> {
    let rest = url.strip_prefix("https://").ok_or("--url must be https://")?;
    let (authority, first_path) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].to_string()),
        None => (rest, "/".to_string()),
    };
    let host = authority.rsplit_once(':').map(|(h, _)| h).unwrap_or(authority).to_string();
    let peer = authority.to_socket_addrs().map_err(|e| e.to_string())?.next().ok_or("no address")?;
    let tls = tls(f)?;
    let builder = s2n_quic::Client::builder()
        .with_tls(tls)
        .map_err(|e| e.to_string())?
        .with_io("0.0.0.0:0")
        .map_err(|e| e.to_string())?
        .with_limits(config::limits()?)
        .map_err(|e| e.to_string())?
        .with_event(config::subscriber(f, "client"))
        .map_err(|e| e.to_string())?;
    let client = match f.get_or("cc", "cubic") {
        "cubic" => builder.with_congestion_controller(config::cubic()).map_err(|e| e.to_string())?.start(),
        "bbr" => builder.with_congestion_controller(config::bbr()).map_err(|e| e.to_string())?.start(),
        other => return Err(format!("unknown --cc {other} (cubic, bbr)")),
    }
    .map_err(|e| e.to_string())?;

    let t0 = Instant::now();
    doc["started_unix_ms"] =
        json!(SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0));
    let connect = s2n_quic::client::Connect::new(peer).with_server_name(host.as_str());
    let conn = client.connect(connect).await.map_err(|e| format!("handshake: {e}"))?;
    doc["handshake_ms"] = json!(ms(t0));
    doc["local_addr"] = json!(conn.local_addr().map(|a| a.to_string()).ok());
    let alpn = conn.application_protocol().map(|p| String::from_utf8_lossy(&p).into_owned()).unwrap_or_default();
    doc["protocol"] = json!(alpn);
    if alpn != "h3" {
        doc["error"] = json!(format!("negotiated {alpn:?}, not h3"));
        return Ok(EXIT_PROTOCOL_UNAVAILABLE);
    }
    let handle = conn.handle();
    let (mut driver, send) = h3::client::new(s2n_quic_h3::Connection::new(conn)).await.map_err(|e| e.to_string())?;
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
    // close, and wait (briefly) for the qlog to be closed and flushed by the subscriber
    let closed_before = CLOSED_LOGS.load(Ordering::SeqCst);
    handle.close(H3_NO_ERROR.into());
    for _ in 0..200 {
        if CLOSED_LOGS.load(Ordering::SeqCst) > closed_before {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    drive.abort();
    let bad: Vec<&str> = transfers.iter().filter(|t| t.status != Some(200)).map(|t| t.path.as_str()).collect();
    if !bad.is_empty() {
        doc["error"] = json!(format!("status other than 200 for {}", bad.join(", ")));
        return Ok(1);
    }
    doc["ok"] = json!(true);
    Ok(0)
}

/// s2n-quic's rustls client: the server verified against --ca alone, ALPN h3; with --chacha20
/// it offers TLS_CHACHA20_POLY1305_SHA256 alone.
fn tls(f: &Flags) -> Result<rustls_tls::Client, String> {
    if f.has("chacha20") {
        return chacha20_only(f);
    }
    let mut tls = rustls_tls::Client::builder()
        .with_certificate(Path::new(f.get("ca")?))
        .map_err(|e| format!("--ca: {e}"))?
        .with_application_protocols(["h3"].iter())
        .map_err(|e| e.to_string())?;
    if f.has("keylog") {
        tls = tls.with_key_logging().map_err(|e| e.to_string())?; // to $SSLKEYLOGFILE, set in main
    }
    tls.build().map_err(|e| e.to_string())
}

/// The client s2n-quic-rustls' `client::Builder::build` makes (TLS 1.3 only, the --ca roots, no
/// client certificate, no fragment limit, ALPN h3, the key log to $SSLKEYLOGFILE), but with a
/// crypto provider whose one cipher suite is TLS_CHACHA20_POLY1305_SHA256: the builder has no
/// setting for the suites (its provider's are DEFAULT_CIPHERSUITES, AES-128-GCM, AES-256-GCM
/// and ChaCha20, all offered), so the rustls config is made here and handed over whole
/// (`Client::from`). s2n-quic-rustls re-exports rustls as deprecated (rustls' API is not
/// stable): through it the config's types are those of the rustls s2n-quic is built with.
#[allow(deprecated)]
fn chacha20_only(f: &Flags) -> Result<rustls_tls::Client, String> {
    use rustls_tls::rustls::crypto::{aws_lc_rs, CryptoProvider};
    use rustls_tls::rustls::pki_types::{pem::PemObject, CertificateDer};
    use rustls_tls::rustls::{version, ClientConfig, KeyLogFile, RootCertStore};

    let ca = f.get("ca")?;
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_file_iter(ca).and_then(|it| it.collect()).map_err(|e| format!("--ca {ca}: {e}"))?;
    let mut roots = RootCertStore::empty();
    if roots.add_parsable_certificates(certs).0 == 0 {
        return Err(format!("--ca {ca}: no usable certificate"));
    }
    let provider = CryptoProvider {
        cipher_suites: vec![aws_lc_rs::cipher_suite::TLS13_CHACHA20_POLY1305_SHA256],
        ..aws_lc_rs::default_provider()
    };
    let mut config = ClientConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(&[&version::TLS13])
        .map_err(|e| format!("TLS: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.max_fragment_size = None;
    config.alpn_protocols = vec![b"h3".to_vec()];
    if f.has("keylog") {
        config.key_log = Arc::new(KeyLogFile::new()); // to $SSLKEYLOGFILE, set in main
    }
    Ok(rustls_tls::Client::from(config))
}

#[derive(Clone)]
struct Request {
    authority: String,
    run_id: String,
    t0: Instant,
    bulk: bool,
}

type Sender = h3::client::SendRequest<s2n_quic_h3::OpenStreams, Bytes>;

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
