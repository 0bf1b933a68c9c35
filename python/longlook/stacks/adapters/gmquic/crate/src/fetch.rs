//! The client: one page load (the HTML, then every `src="..."` in it at once) or one bulk
//! download over HTTP/3, written as the fetch JSON of `endpoint fetch` (docs/interfaces.md).

use std::net::ToSocketAddrs;
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dquic::prelude::{Connection, EndpointAddr, QuicClient};
use dquic::qinterface::bind_uri::BindUri;
use dquic::qinterface::io::IO;
use dquic::qresolve::Source;
use longlook_h3_harness::client::{self, Request, EXIT_PROTOCOL_UNAVAILABLE, H3_NO_ERROR};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use serde_json::{json, Value};

use crate::config::{self, Flags};

// how long the closed connection may take to end
const CLOSE_WAIT: Duration = Duration::from_secs(1);
// how long its qlog writer may then take to finish the file: it finishes when gm-quic drops
// the connection's last handle on the trace, after the draining period (three PTOs), which on a
// slow or loaded machine has taken over a second
const QLOG_WAIT: Duration = Duration::from_secs(10);

pub async fn fetch(f: &Flags) -> i32 {
    let (mut doc, timeout) = client::new_doc(f);
    let mut conn = None;
    let code = match tokio::time::timeout(timeout, run(f, &mut doc, &mut conn)).await {
        Ok(Ok(c)) => c,
        Ok(Err((c, e))) => {
            doc["error"] = json!(e);
            c
        }
        Err(_) => {
            doc["error"] = json!(client::timed_out(timeout));
            1
        }
    };
    if let Some(conn) = conn {
        close(conn).await;
    }
    if client::write(f, &doc) {
        code
    } else {
        1
    }
}

/// Close with H3_NO_ERROR, wait (briefly) for the connection to end, then for its qlog file to
/// be written out: the process must not exit with the file torn.
async fn close(conn: Arc<Connection>) {
    let _ = conn.close("", H3_NO_ERROR.into());
    let _ = tokio::time::timeout(CLOSE_WAIT, conn.terminated()).await;
    drop(conn);
    let t0 = Instant::now();
    if !config::qlog_written(QLOG_WAIT).await {
        eprintln!("fetch: the qlog file was not finished within {:.0} s of the close", QLOG_WAIT.as_secs_f64());
    } else if t0.elapsed() > Duration::from_millis(500) {
        eprintln!("fetch: the qlog file took {:.0} ms after the close to be finished", client::ms(t0));
    }
}

type Failure = (i32, String);

fn failed(e: impl ToString) -> Failure {
    (1, e.to_string())
}

async fn run(f: &Flags, doc: &mut Value, conn_out: &mut Option<Arc<Connection>>) -> Result<i32, Failure> {
    config::check_cc(f).map_err(failed)?;
    let target = client::target(f.get_or("url", "")).map_err(failed)?;
    let peer = target.authority.to_socket_addrs().map_err(failed)?.next().ok_or(failed("no address"))?;
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
    doc["started_unix_ms"] = json!(client::unix_ms());
    // the TLS server name: `--server-name` where given (a DNS name of the certificate, sent as
    // SNI: gm-quic's server serves no ClientHello without one), else the URL's host (an IP
    // address is verified against the certificate's IP SANs and sent as no SNI, by rustls)
    let server_name = f.get_or("server-name", target.host.as_str()).to_string();
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
    doc["handshake_ms"] = json!(client::ms(t0));
    // rustls (QUIC) completes no handshake without an ALPN it offered, and only h3 is offered
    doc["protocol"] = json!("h3");
    doc["local_addr"] = json!(local.to_string());

    let (mut driver, send) = h3::client::new(h3_shim::QuicConnection::new(conn.clone())).await.map_err(failed)?;
    let drive = tokio::spawn(async move { std::future::poll_fn(|cx| driver.poll_close(cx)).await });

    let transfers = Request::new(f, &target, t0).load(send, target.path.clone()).await.map_err(failed)?;
    client::record(doc, &transfers, t0);
    drive.abort();
    if let Some(e) = client::bad_statuses(&transfers) {
        return Err(failed(e));
    }
    doc["ok"] = json!(true);
    Ok(0)
}
