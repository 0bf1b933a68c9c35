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
    if f.has("retry") {
        retry_always()?;
    }
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

/// A Retry to every Initial without a valid token: msquic sends Retry once its handshakes
/// use more than this share of memory, and at 0 they always do (as msquic's own interop
/// server does for the Retry case). A global setting; the crate has a getter only.
fn retry_always() -> Result<(), String> {
    let percent: u16 = 0;
    // SAFETY: the library is loaded (a registration exists), and the buffer is the u16 this
    // parameter takes, alive for the call
    unsafe {
        msquic::Api::set_param(
            std::ptr::null_mut(),
            msquic::PARAM_GLOBAL_RETRY_MEMORY_PERCENT,
            std::mem::size_of::<u16>() as u32,
            (&percent as *const u16).cast(),
        )
    }
    .map_err(|e| format!("--retry: msquic's retry memory limit: {e}"))
}
