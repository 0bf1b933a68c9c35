//! The client: one page load (the HTML, then every `src="..."` in it at once) or one bulk
//! download over HTTP/3, written as the fetch JSON of `endpoint fetch` (docs/interfaces.md).

use std::net::ToSocketAddrs;
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::{Buf, Bytes};
use dquic::prelude::{Connection, EndpointAddr, QuicClient};
use dquic::qinterface::bind_uri::BindUri;
use dquic::qinterface::io::IO;
use dquic::qresolve::Source;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use serde_json::{json, Value};

use crate::config::{self, Flags};

pub const EXIT_PROTOCOL_UNAVAILABLE: i32 = 3;
const H3_NO_ERROR: u64 = 0x100;
// how long the closed connection may take to end
const CLOSE_WAIT: Duration = Duration::from_secs(1);
// how long its qlog writer may then take to finish the file: it finishes when gm-quic drops
// the connection's last handle on the trace, after the draining period (three PTOs), which on a
// slow or loaded machine has taken over a second
const QLOG_WAIT: Duration = Duration::from_secs(10);

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
    let mut conn = None;
    let code = match tokio::time::timeout(timeout, run(f, &url, &mode, &mut doc, &mut conn)).await {
        Ok(Ok(c)) => c,
        Ok(Err((c, e))) => {
            doc["error"] = json!(e);
            c
        }
        Err(_) => {
            doc["error"] = json!(format!("no result within {:.0} s", timeout.as_secs_f64()));
            1
        }
    };
    if let Some(conn) = conn {
        close(conn).await;
    }
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

/// Close with H3_NO_ERROR, wait (briefly) for the connection to end, then for its qlog file to
/// be written out: the process must not exit with the file torn.
async fn close(conn: Arc<Connection>) {
    let _ = conn.close("", H3_NO_ERROR);
    let _ = tokio::time::timeout(CLOSE_WAIT, conn.terminated()).await;
    drop(conn);
    let t0 = Instant::now();
    if !config::qlog_written(QLOG_WAIT).await {
        eprintln!("fetch: the qlog file was not finished within {:.0} s of the close", QLOG_WAIT.as_secs_f64());
    } else if t0.elapsed() > Duration::from_millis(500) {
        eprintln!("fetch: the qlog file took {:.0} ms after the close to be finished", ms(t0));
    }
}

type Failure = (i32, String);

fn failed(e: impl ToString) -> Failure {
    (1, e.to_string())
}

async fn run(
    f: &Flags,
    url: &str,
    mode: &str,
    doc: &mut Value,
    conn_out: &mut Option<Arc<Connection>>,
) -> Result<i32, Failure> {
    config::check_cc(f).map_err(failed)?;
    let rest = url.strip_prefix("https://").ok_or(failed("--url must be https://"))?;
    let (authority, first_path) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].to_string()),
        None => (rest, "/".to_string()),
    };
    let host = authority.rsplit_once(':').map(|(h, _)| h).unwrap_or(authority);
    let host = host.trim_start_matches('[').trim_end_matches(']').to_string();
    let peer = authority.to_socket_addrs().map_err(failed)?.next().ok_or(failed("no address"))?;
    let ca = f.get("ca").map_err(failed)?;
    let mut roots = rustls::RootCertStore::empty();
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_file_iter(ca).and_then(|it| it.collect()).map_err(|e| failed(format!("--ca {ca}: {e}")))?;
    let (added, _) = roots.add_parsable_certificates(certs);
    if added == 0 {
        return Err(failed(format!("--ca {ca}: no usable certificate")));
    }
    let mut builder = QuicClient::builder()
        .with_root_certificates(roots)
        .without_cert()
        .with_parameters(config::client_parameters().map_err(failed)?)
        .with_alpns([b"h3".to_vec()])
        .with_qlog(config::qlog(f));
    if f.has("keylog") {
        builder = builder.enable_sslkeylog(); // to $SSLKEYLOGFILE, set in main
    }
    let client = Arc::new(builder.build());
    // the socket, bound before the clock starts (an unbound client binds on connecting, and
    // then does not say where)
    let any = if peer.is_ipv4() { "inet://0.0.0.0:0" } else { "inet://[::]:0" };
    let iface = client.bind(BindUri::from_str(any).map_err(failed)?.alloc_port()).await;
    let local = iface.borrow().bound_addr().map_err(|e| failed(format!("bind {any}: {e}")))?;

    let t0 = Instant::now();
    doc["started_unix_ms"] =
        json!(SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0));
    // the TLS server name: `--server-name` where given (a DNS name of the certificate, sent as
    // SNI: gm-quic's server serves no ClientHello without one), else the URL's host (an IP
    // address is verified against the certificate's IP SANs and sent as no SNI, by rustls)
    let server_name = f.get_or("server-name", host.as_str()).to_string();
    let conn = client
        .connected_to_with_source(server_name.as_str(), [(Source::System, EndpointAddr::from(peer))])
        .await
        .map_err(|e| failed(format!("connect: {e}")))?;
    *conn_out = Some(conn.clone());
    if let Err(e) = conn.handshaked().await {
        let e = e.to_string();
        // rustls ends a handshake whose ALPN is not h3 with no_application_protocol (0x178)
        let code = if e.contains("NoApplicationProtocol") || e.contains("0x178") || e.contains("376") {
            EXIT_PROTOCOL_UNAVAILABLE
        } else {
            1
        };
        return Err((code, format!("handshake: {e}")));
    }
    doc["handshake_ms"] = json!(ms(t0));
    // rustls (QUIC) completes no handshake without an ALPN it offered, and only h3 is offered
    doc["protocol"] = json!("h3");
    doc["local_addr"] = json!(local.to_string());

    let (mut driver, send) = h3::client::new(h3_shim::QuicConnection::new(conn.clone())).await.map_err(failed)?;
    let drive = tokio::spawn(async move { std::future::poll_fn(|cx| driver.poll_close(cx)).await });

    let ctx = Request {
        authority: authority.to_string(),
        run_id: f.get_or("run-id", "").to_string(),
        t0,
        bulk: mode == "bulk",
    };
    let first = ctx.get(send.clone(), first_path, mode == "page").await.map_err(failed)?;
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
            transfers.push(t.await.map_err(failed)?.map_err(failed)?);
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
    drive.abort();
    let bad: Vec<&str> = transfers.iter().filter(|t| t.status != Some(200)).map(|t| t.path.as_str()).collect();
    if !bad.is_empty() {
        return Err(failed(format!("status other than 200 for {}", bad.join(", "))));
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

type Sender = h3::client::SendRequest<h3_shim::OpenStreams, Bytes>;

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
                if t.goodput.last().is_none_or(|(at, _)| now - at >= 10.0) {
                    t.goodput.push((now, t.bytes));
                }
            }
        }
        t.end_ms = Some(ms(self.t0));
        Ok(t)
    }
}
