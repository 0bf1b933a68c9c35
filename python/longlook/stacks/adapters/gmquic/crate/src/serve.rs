//! The server: files under --root over HTTP/3, one task per connection and per request
//! (`page/<N>x<S>.html`, `obj/<S>/<i>.jpg`, `bulk/<S>`, as `endpoint serve`).
//!
//! gm-quic's listener is a set of virtual hosts chosen by the ClientHello's SNI: a ClientHello
//! without one is refused (CONNECTION_REFUSED, "missing SNI in client hello", qconnection's
//! tls.rs), and clients send none when the URL names an IP address. Every DNS name and IP
//! address of the certificate (and its CN) is registered as a host, so a client that sends
//! any of them as its SNI is served.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use dquic::prelude::QuicListeners;
use dquic::qinterface::io::IO;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use longlook_h3_harness::server;

use crate::config::{self, Flags};

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
            if let Err(e) = server::connection(h3_shim::QuicConnection::new(conn), root).await {
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
