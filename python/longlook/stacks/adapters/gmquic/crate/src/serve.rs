//! The server: files under --root over HTTP/3, one task per connection and per request
//! (`page/<N>x<S>.html`, `obj/<S>/<i>.jpg`, `bulk/<S>`, as `endpoint serve`).
//!
//! gm-quic's listener is a set of virtual hosts chosen by the ClientHello's SNI: a ClientHello
//! without one is refused (CONNECTION_REFUSED, "missing SNI in client hello", qconnection's
//! tls.rs), and clients send none when the URL names an IP address. Every DNS name and IP
//! address of the certificate (and its CN) is registered as a host, so a client that sends
//! any of them as its SNI is served.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use dquic::prelude::QuicListeners;
use dquic::qinterface::io::IO;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::config::{self, Flags};

// a body goes out in pieces this large (one DATA frame each; the file is read once)
const CHUNK: usize = 256 * 1024;
// connections waiting to be accepted (gm-quic drops Initial packets beyond them)
const BACKLOG: usize = 1024;

pub async fn serve(f: &Flags) -> Result<(), String> {
    config::check_cc(f)?;
    let cert_path = f.get("cert")?;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert_path)
        .and_then(|it| it.collect())
        .map_err(|e| format!("--cert {cert_path}: {e}"))?;
    let key_path = f.get("key")?;
    let key = PrivateKeyDer::from_pem_file(key_path).map_err(|e| format!("--key {key_path}: {e}"))?;
    let names = certificate_names(certs.first().ok_or("--cert holds no certificate")?)?;
    let listen: SocketAddr = f.get_or("listen", "0.0.0.0:4433").parse().map_err(|e| format!("--listen: {e}"))?;

    let listeners = QuicListeners::builder()
        .with_qlog(config::qlog(f))
        .without_client_cert_verifier()
        .with_parameters(config::server_parameters()?)
        .with_alpns([b"h3".to_vec()])
        .enable_0rtt()
        .listen(BACKLOG)
        .map_err(|e| e.to_string())?;
    for name in &names {
        listeners
            .add_server(name.as_str(), certs.clone(), key.clone_key(), [listen], None)
            .await
            .map_err(|e| e.to_string())?;
    }
    for name in &names {
        let server = listeners.get_server(name).ok_or("a host was not added")?;
        for iface in server.bind_interfaces().values() {
            iface.borrow().bound_addr().map_err(|e| format!("--listen {listen}: {e}"))?;
        }
    }
    println!("ready");
    let root = Arc::new(PathBuf::from(f.get_or("root", ".")));
    while let Ok((conn, _name, _pathway, _link)) = listeners.accept().await {
        let root = root.clone();
        tokio::spawn(async move {
            if let Err(e) = connection(conn, root).await {
                eprintln!("connection: {e}");
            }
        });
    }
    Ok(())
}

/// The names a client may send as SNI for this certificate: its DNS and IP SANs and its CN.
fn certificate_names(cert: &CertificateDer<'_>) -> Result<Vec<String>, String> {
    use x509_parser::extensions::GeneralName;
    let (_, x509) = x509_parser::parse_x509_certificate(cert.as_ref()).map_err(|e| format!("--cert: {e}"))?;
    let mut names: Vec<String> = vec![];
    if let Ok(Some(san)) = x509.subject_alternative_name() {
        for name in &san.value.general_names {
            match name {
                GeneralName::DNSName(d) => names.push(d.to_string()),
                GeneralName::IPAddress(b) => match b.len() {
                    4 => names.push(std::net::Ipv4Addr::from(<[u8; 4]>::try_from(*b).unwrap()).to_string()),
                    16 => names.push(std::net::Ipv6Addr::from(<[u8; 16]>::try_from(*b).unwrap()).to_string()),
                    _ => {}
                },
                _ => {}
            }
        }
    }
    for cn in x509.subject().iter_common_name() {
        if let Ok(cn) = cn.as_str() {
            names.push(cn.to_string());
        }
    }
    names.sort();
    names.dedup();
    if names.is_empty() {
        return Err("--cert names no host".into());
    }
    Ok(names)
}

async fn connection(conn: Arc<dquic::prelude::Connection>, root: Arc<PathBuf>) -> Result<(), String> {
    let mut h3 =
        h3::server::Connection::<_, Bytes>::new(h3_shim::QuicConnection::new(conn)).await.map_err(|e| e.to_string())?;
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
