//! The server: files under --root over HTTP/3, one task per connection and per request
//! (`page/<N>x<S>.html`, `obj/<S>/<i>.jpg`, `bulk/<S>`, as `endpoint serve`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use h3_util::s2n::s2n_quic_h3;

use crate::config::{self, Flags};

// a body goes out in pieces this large (one DATA frame each; the file is read once)
const CHUNK: usize = 256 * 1024;

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
            if let Err(e) = connection(conn, root).await {
                eprintln!("connection: {e}");
            }
        });
    }
    Ok(())
}

async fn connection(conn: s2n_quic::Connection, root: Arc<PathBuf>) -> Result<(), String> {
    let mut h3 = h3::server::Connection::<_, Bytes>::new(s2n_quic_h3::Connection::new(conn))
        .await
        .map_err(|e| e.to_string())?;
    loop {
        match h3.accept().await {
            Ok(Some(resolver)) => {
                let root = root.clone();
                tokio::spawn(async move {
                    let Ok((req, mut stream)) = resolver.resolve_request().await else { return };
                    let (status, body) = read_file(&root, req.uri().path());
                    let resp = http::Response::builder().status(status)
                        .header("content-length", body.len()).body(()).expect("response");
                    if stream.send_response(resp).await.is_err() {
                        return;
                    }
                    let mut at = 0;
                    while at < body.len() {
                        let end = (at + CHUNK).min(body.len());
                        if stream.send_data(body.slice(at..end)).await.is_err() {
                            return;
                        }
                        at = end;
                    }
                    let _ = stream.finish().await;
                });
            }
            Ok(None) => return Ok(()),
            Err(e) if e.is_h3_no_error() => return Ok(()),
            Err(e) => return Err(e.to_string()),
        }
    }
}

fn read_file(root: &Path, url_path: &str) -> (u16, Bytes) {
    let rel = url_path.trim_start_matches('/');
    let rel = if rel.is_empty() { "index.html" } else { rel };
    if rel.split('/').any(|c| c == ".." || c.is_empty()) {
        return (404, Bytes::from_static(b"not found\n"));
    }
    match std::fs::read(root.join(rel)) {
        Ok(b) => (200, Bytes::from(b)),
        Err(_) => (404, Bytes::from_static(b"not found\n")),
    }
}
