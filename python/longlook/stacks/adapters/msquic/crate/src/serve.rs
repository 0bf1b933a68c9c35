//! The server: files under --root over HTTP/3, one task per connection and per request
//! (`page/<N>x<S>.html`, `obj/<S>/<i>.jpg`, `bulk/<S>`, as `endpoint serve`).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use h3_msquic_async::{msquic, msquic_async};

use crate::config::{self, Flags};

// a body goes out in pieces this large (one DATA frame each; the file is read once)
const CHUNK: usize = 256 * 1024;

pub async fn serve(f: &Flags) -> Result<(), String> {
    let listen: SocketAddr = f.get_or("listen", "0.0.0.0:4433").parse().map_err(|e| format!("--listen: {e}"))?;
    let registration = config::registration()?;
    let alpn = [msquic::BufferRef::from(config::ALPN)];
    // no resumption level: msquic's server sends a session ticket only when the application
    // calls ConnectionSendResumptionTicket on the connection, which msquic-async cannot
    let settings = config::settings(f.get_or("cc", "cubic"))?;
    let configuration = msquic::Configuration::open(registration, &alpn, Some(&settings))
        .map_err(|e| format!("msquic configuration: {e}"))?;
    // msquic on Linux (OpenSSL) reads a PEM certificate and key from files
    let credential = msquic::CredentialConfig::new().set_credential(msquic::Credential::CertificateFile(
        msquic::CertificateFile::new(f.get("key")?.to_string(), f.get("cert")?.to_string()),
    ));
    configuration.load_credential(&credential).map_err(|e| format!("--cert/--key: {e}"))?;
    let listener = msquic_async::Listener::new(registration, configuration).map_err(|e| e.to_string())?;
    listener.start(&alpn, Some(listen)).map_err(|e| format!("--listen {listen}: {e}"))?;
    println!("ready");
    let root = Arc::new(PathBuf::from(f.get_or("root", ".")));
    loop {
        let conn = listener.accept().await.map_err(|e| e.to_string())?;
        let root = root.clone();
        tokio::spawn(async move {
            if let Err(e) = connection(conn, root).await {
                eprintln!("connection: {e}");
            }
        });
    }
}

async fn connection(conn: msquic_async::Connection, root: Arc<PathBuf>) -> Result<(), String> {
    let mut h3 = h3::server::Connection::<_, Bytes>::new(h3_msquic_async::Connection::new(conn))
        .await
        .map_err(|e| e.to_string())?;
    loop {
        match h3.accept().await {
            Ok(Some(resolver)) => {
                let root = root.clone();
                tokio::spawn(async move {
                    let Ok((req, mut stream)) = resolver.resolve_request().await else { return };
                    let (status, body) = read_file(&root, req.uri().path());
                    let resp = http::Response::builder()
                        .status(status)
                        .header("content-length", body.len())
                        .body(())
                        .expect("response");
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
