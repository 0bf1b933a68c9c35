//! The server: files under --root over HTTP/3, one task per connection and per request
//! (`page/<N>x<S>.html`, `obj/<S>/<i>.jpg`, `bulk/<S>`, as `endpoint serve`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use h3_util::s2n::s2n_quic_h3;
use longlook_h3_harness::server;

use crate::config::{self, Flags};

pub async fn serve(f: &Flags) -> Result<(), String> {
    let tls = s2n_quic::provider::tls::rustls::Server::builder()
        .with_certificate(Path::new(f.get("cert")?), Path::new(f.get("key")?))
        .map_err(|e| format!("--cert/--key: {e}"))?
        .with_application_protocols(["h3"].iter())
        .map_err(|e| e.to_string())?
        .build()
        .map_err(|e| e.to_string())?;
    let builder = s2n_quic::Server::builder()
        .with_tls(tls)
        .map_err(|e| e.to_string())?
        .with_io(f.get_or("listen", "0.0.0.0:4433"))
        .map_err(|e| format!("--listen: {e}"))?
        .with_limits(config::limits()?)
        .map_err(|e| e.to_string())?
        .with_endpoint_limits(endpoint_limits(f.has("retry")))
        .map_err(|e| e.to_string())?
        .with_event(config::subscriber(f, "server"))
        .map_err(|e| e.to_string())?;
    let server = match f.get_or("cc", "cubic") {
        "cubic" => builder.with_congestion_controller(config::cubic()).map_err(|e| e.to_string())?.start(),
        "bbr" => builder.with_congestion_controller(config::bbr()).map_err(|e| e.to_string())?.start(),
        other => return Err(format!("unknown --cc {other} (cubic, bbr)")),
    };
    let mut server = server.map_err(|e| e.to_string())?;
    println!("ready");
    let root = Arc::new(PathBuf::from(f.get_or("root", ".")));
    while let Some(conn) = server.accept().await {
        let root = root.clone();
        tokio::spawn(async move {
            if let Err(e) = server::connection(s2n_quic_h3::Connection::new(conn), root).await {
                eprintln!("connection: {e}");
            }
        });
    }
    Ok(())
}

/// s2n-quic's own endpoint limits; with `retry` no handshake may start before a Retry (an
/// in-flight limit of 0), so every client's first Initial gets one and its second, with the
/// token, is let through (s2n-quic asks the limits only of Initials without a token).
fn endpoint_limits(retry: bool) -> s2n_quic::provider::endpoint_limits::Default {
    let limits = s2n_quic::provider::endpoint_limits::Default::builder();
    let limits = if retry { limits.with_inflight_handshake_limit(0).unwrap_or_else(|e| match e {}) } else { limits };
    limits.build().unwrap_or_else(|e| match e {})
}
