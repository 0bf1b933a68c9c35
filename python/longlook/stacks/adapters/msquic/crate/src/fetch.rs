//! The client: one page load (the HTML, then every `src="..."` in it at once) or one bulk
//! download over HTTP/3, written as the fetch JSON of `endpoint fetch` (docs/interfaces.md).

use std::fs::OpenOptions;
use std::time::{Duration, Instant};

use h3_msquic_async::{msquic, msquic_async};
use longlook_h3_harness::client::{self, Request, EXIT_PROTOCOL_UNAVAILABLE, H3_NO_ERROR};
use serde_json::{json, Value};

use crate::config::{self, Flags};

// how long the client waits for msquic to finish closing (its CONNECTION_CLOSE sent and
// answered) before it exits: the fetch's timings are taken before
const CLOSE_WAIT: Duration = Duration::from_secs(1);

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

async fn run(f: &Flags, doc: &mut Value) -> Result<i32, String> {
    let target = client::target(f.get_or("url", ""))?;

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
    doc["started_unix_ms"] = json!(client::unix_ms());
    if let Err(e) = conn.start(configuration, &target.host, target.port).await {
        if alpn_refused(&e) {
            doc["error"] = json!(format!("handshake: the server offers no h3 ({e:?})"));
            return Ok(EXIT_PROTOCOL_UNAVAILABLE);
        }
        return Err(format!("handshake: {e:?}"));
    }
    doc["handshake_ms"] = json!(client::ms(t0));
    doc["local_addr"] = json!(conn.get_local_addr().map(|a| a.to_string()).ok());
    // msquic completes a handshake only on an ALPN both offered, and ours is h3 alone
    doc["protocol"] = json!(config::ALPN);
    let (mut driver, send) =
        h3::client::new(h3_msquic_async::Connection::new(conn.clone())).await.map_err(|e| e.to_string())?;
    let drive = tokio::spawn(async move { std::future::poll_fn(|cx| driver.poll_close(cx)).await });

    let transfers = Request::new(f, &target, t0).load(send, target.path.clone()).await?;
    client::record(doc, &transfers, t0);
    // close with H3_NO_ERROR and wait (briefly) until msquic has done so on the wire
    let close = std::future::poll_fn(|cx| conn.poll_shutdown(cx, H3_NO_ERROR.into()));
    let _ = tokio::time::timeout(CLOSE_WAIT, close).await;
    drive.abort();
    if let Some(e) = client::bad_statuses(&transfers) {
        doc["error"] = json!(e);
        return Ok(1);
    }
    doc["ok"] = json!(true);
    Ok(0)
}
