//! The server: files under --root over HTTP/3, one task per connection and per request
//! (`page/<N>x<S>.html`, `obj/<S>/<i>.jpg`, `bulk/<S>`, as `endpoint serve`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use h3_msquic_async::{msquic, msquic_async};
use longlook_h3_harness::server;

use crate::config::{self, Flags};

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
            if let Err(e) = server::connection(h3_msquic_async::Connection::new(conn), root).await {
                eprintln!("connection: {e}");
            }
        });
    }
}
