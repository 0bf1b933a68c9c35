//! The client: one page load (the HTML, then every `src="..."` in it at once) or one bulk
//! download over HTTP/3, written as the fetch JSON of `endpoint fetch` (docs/interfaces.md).

use std::net::ToSocketAddrs;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use h3_util::s2n::s2n_quic_h3;
use longlook_h3_harness::client::{self, Request, EXIT_PROTOCOL_UNAVAILABLE, H3_NO_ERROR};
use s2n_quic::provider::tls::rustls as rustls_tls;
use serde_json::{json, Value};

use crate::config::{self, Flags};
use crate::qlog::CLOSED_LOGS;

pub async fn fetch(f: &Flags) -> i32 {
    let (mut doc, timeout) = client::new_doc(f);
    let code = match tokio::time::timeout(timeout, run(f, &mut doc)).await {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => {
            doc["error"] = json!(e);
            1
        }
        Err(_) => {
            doc["error"] = json!(client::timed_out(timeout));
            1
        }
    };
    if client::write(f, &doc) {
        code
    } else {
        1
    }
}

async fn run(f: &Flags, doc: &mut Value) -> Result<i32, String> {
    let target = client::target(f.get_or("url", ""))?;
    let peer = target.authority.to_socket_addrs().map_err(|e| e.to_string())?.next().ok_or("no address")?;
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
    doc["started_unix_ms"] = json!(client::unix_ms());
    let connect = s2n_quic::client::Connect::new(peer).with_server_name(target.host.as_str());
    let conn = client.connect(connect).await.map_err(|e| format!("handshake: {e}"))?;
    doc["handshake_ms"] = json!(client::ms(t0));
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

    let transfers = Request::new(f, &target, t0).load(send, target.path.clone()).await?;
    client::record(doc, &transfers, t0);
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
    if let Some(e) = client::bad_statuses(&transfers) {
        doc["error"] = json!(e);
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
