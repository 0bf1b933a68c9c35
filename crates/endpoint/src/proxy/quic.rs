//! The HTTP/3 reverse proxy: QUIC from the client ends here (the proxy's own certificate);
//! each request is fetched from the origin over the proxy's own QUIC connection and the
//! response streamed back chunk by chunk. Unoptimised on purpose, as in the paper: the
//! upstream connection is opened at the client connection's first request, with a full
//! handshake (no 0-RTT, no resumption), and the client gets no session tickets.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{anyhow, Context, Result};
use bytes::{Buf, Bytes};
use quinn::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::PrivateKeyDer;
use tokio::sync::OnceCell;

use super::log::{ms, ProxyLog};
use super::ProxyArgs;
use crate::run::{unix_ms, RUN_HEADER};
use crate::tls::{self, Trust};
use crate::transport::transport_config;

type Upstream = h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>;

pub struct Proxy {
    endpoint: quinn::Endpoint,
    upstream: quinn::Endpoint,
    origin: SocketAddr,
    origin_name: String,
    log: ProxyLog,
}

/// The proxy's identity: `cert.pem`/`key.pem` in `dir`, generated (self-signed) for the
/// listen address when absent. The client is given this certificate to trust.
fn identity(dir: &Path, listen: SocketAddr) -> Result<tls::Identity> {
    let (cert_path, key_path) = (dir.join("cert.pem"), dir.join("key.pem"));
    if !cert_path.exists() || !key_path.exists() {
        std::fs::create_dir_all(dir)?;
        let sans = vec![listen.ip().to_string(), "localhost".into(), "127.0.0.1".into()];
        let ck = rcgen::generate_simple_self_signed(sans).context("generating the proxy's certificate")?;
        std::fs::write(&cert_path, ck.cert.pem())?;
        std::fs::write(&key_path, ck.signing_key.serialize_pem())?;
    }
    let certs = tls::load_certs(&cert_path)?;
    let key = PrivateKeyDer::from_pem_file(&key_path).with_context(|| format!("reading {}", key_path.display()))?;
    Ok(tls::Identity { certs, key })
}

impl Proxy {
    pub fn new(args: &ProxyArgs, origin: SocketAddr, origin_ca: &Path, cert_dir: &Path, log: ProxyLog) -> Result<Self> {
        let id = identity(cert_dir, args.listen)?;
        let mut server_tls = rustls::ServerConfig::builder_with_protocol_versions(&[&rustls::version::TLS13])
            .with_no_client_auth()
            .with_single_cert(id.certs, id.key)?;
        server_tls.alpn_protocols = vec![b"h3".to_vec()];
        server_tls.max_early_data_size = 0; // no 0-RTT through the proxy
        server_tls.send_tls13_tickets = 0;
        let mut server_cfg = quinn::ServerConfig::with_crypto(Arc::new(QuicServerConfig::try_from(server_tls)?));
        server_cfg.transport_config(Arc::new(transport_config(&args.flow)));
        server_cfg.validation_token_config(no_address_validation_tokens());
        let listen = std::net::UdpSocket::bind(args.listen).with_context(|| format!("binding UDP {}", args.listen))?;
        let endpoint =
            crate::ecn_switch::endpoint(quinn::EndpointConfig::default(), Some(server_cfg), listen, !args.flow.no_ecn)
                .with_context(|| format!("binding UDP {}", args.listen))?;

        let mut client_tls = tls::client_config(&Trust::Roots(tls::load_certs(origin_ca)?), b"h3")?;
        client_tls.enable_early_data = false;
        client_tls.resumption = rustls::client::Resumption::disabled();
        let mut client_cfg = quinn::ClientConfig::new(Arc::new(QuicClientConfig::try_from(client_tls)?));
        client_cfg.transport_config(Arc::new(transport_config(&args.flow)));
        client_cfg.token_store(Arc::new(quinn::NoneTokenStore)); // nothing kept across upstream connections
        let bind: SocketAddr = if origin.is_ipv6() { "[::]:0".parse()? } else { "0.0.0.0:0".parse()? };
        let mut upstream = crate::ecn_switch::endpoint(
            quinn::EndpointConfig::default(),
            None,
            std::net::UdpSocket::bind(bind)?,
            !args.flow.no_ecn,
        )?;
        upstream.set_default_client_config(client_cfg);
        let origin_name = args.origin_name.clone().unwrap_or_else(|| origin.ip().to_string());
        Ok(Proxy { endpoint, upstream, origin, origin_name, log })
    }

    pub async fn serve(self) -> Result<()> {
        let shared = Arc::new(Shared {
            upstream: self.upstream,
            origin: self.origin,
            origin_name: self.origin_name,
            log: self.log,
        });
        while let Some(incoming) = self.endpoint.accept().await {
            let shared = shared.clone();
            tokio::spawn(async move { shared.connection(incoming).await });
        }
        Ok(())
    }
}

/// Neither NEW_TOKEN frames to clients nor tokens accepted from them (quinn's `bloom` feature,
/// on for our server, would do both): every connection through the proxy starts unvalidated.
fn no_address_validation_tokens() -> quinn::ValidationTokenConfig {
    let mut v = quinn::ValidationTokenConfig::default();
    v.log(Arc::new(quinn::NoneTokenLog)).sent(0);
    v
}

struct Shared {
    upstream: quinn::Endpoint,
    origin: SocketAddr,
    origin_name: String,
    log: ProxyLog,
}

/// One client connection's log line, filled as it goes.
struct ConnLog {
    t0: Instant,
    line: Mutex<serde_json::Value>,
    requests: Mutex<Vec<serde_json::Value>>,
}

impl Shared {
    async fn connection(self: Arc<Self>, incoming: quinn::Incoming) {
        let peer = incoming.remote_address();
        let log = Arc::new(ConnLog {
            t0: Instant::now(),
            line: Mutex::new(serde_json::json!({"mode": "quic", "client": peer.to_string(),
                "origin": self.origin.to_string(), "accept_unix_ms": unix_ms()})),
            requests: Mutex::new(Vec::new()),
        });
        let result = self.clone().serve_client(incoming, log.clone()).await;
        let mut line = log.line.lock().unwrap().clone();
        line["duration_ms"] = ms(log.t0.elapsed()).into();
        line["requests"] = std::mem::take(&mut *log.requests.lock().unwrap()).into();
        line["error"] = result.err().map(|e| format!("{e:#}")).into();
        self.log.write(line);
    }

    async fn serve_client(self: Arc<Self>, incoming: quinn::Incoming, log: Arc<ConnLog>) -> Result<()> {
        let conn = incoming.accept()?.await.context("client handshake")?;
        log.line.lock().unwrap()["handshake_ms"] = ms(log.t0.elapsed()).into();
        let mut h3conn: h3::server::Connection<h3_quinn::Connection, Bytes> =
            h3::server::builder().build(h3_quinn::Connection::new(conn.clone())).await?;
        let upstream: Arc<OnceCell<Upstream>> = Arc::new(OnceCell::new());
        let mut tasks = tokio::task::JoinSet::new();
        loop {
            match h3conn.accept().await {
                Ok(Some(resolver)) => {
                    let (me, upstream, log) = (self.clone(), upstream.clone(), log.clone());
                    tasks.spawn(async move {
                        if let Err(e) = me.request(resolver, upstream, log).await {
                            eprintln!("endpoint proxy: h3 request: {e:#}");
                        }
                    });
                }
                Ok(None) => break,
                Err(e) => {
                    if !e.is_h3_no_error() {
                        eprintln!("endpoint proxy: client connection ended: {e}");
                    }
                    break;
                }
            }
        }
        while tasks.join_next().await.is_some() {}
        Ok(())
    }

    /// The proxy's own QUIC connection to the origin (full handshake) and its h3 session.
    async fn connect_origin(&self, log: &ConnLog) -> Result<Upstream> {
        let started = ms(log.t0.elapsed());
        let conn = self.upstream.connect(self.origin, &self.origin_name)?.await.context("origin handshake")?;
        let (mut driver, send) = h3::client::builder().build::<_, _, Bytes>(h3_quinn::Connection::new(conn)).await?;
        tokio::spawn(async move { futures_util::future::poll_fn(|cx| driver.poll_close(cx)).await });
        let mut line = log.line.lock().unwrap();
        line["upstream_connect_start_ms"] = started.into();
        line["upstream_ready_ms"] = ms(log.t0.elapsed()).into();
        Ok(send)
    }

    async fn request(
        &self,
        resolver: h3::server::RequestResolver<h3_quinn::Connection, Bytes>,
        upstream: Arc<OnceCell<Upstream>>,
        log: Arc<ConnLog>,
    ) -> Result<()> {
        let (req, mut stream) = resolver.resolve_request().await?;
        let start_ms = ms(log.t0.elapsed());
        let path = req.uri().path_and_query().map(|p| p.to_string()).unwrap_or_else(|| "/".into());
        let mut send = upstream.get_or_try_init(|| self.connect_origin(&log)).await?.clone();
        let authority = match self.origin {
            SocketAddr::V6(a) => format!("[{}]:{}", self.origin_name, a.port()),
            SocketAddr::V4(a) => format!("{}:{}", self.origin_name, a.port()),
        };
        let mut up_req =
            http::Request::builder().method(req.method().clone()).uri(format!("https://{authority}{path}"));
        for (k, v) in req.headers() {
            up_req = up_req.header(k, v); // x-longlook-run goes on, so the origin's logs name the run
        }
        let mut up = send.send_request(up_req.body(())?).await.context("origin request")?;
        crate::request_end::finish_request(&mut up).await?;
        let resp = up.recv_response().await.context("origin response")?;
        let first_byte_ms = ms(log.t0.elapsed());
        let mut out = http::Response::builder().status(resp.status());
        for (k, v) in resp.headers() {
            out = out.header(k, v);
        }
        stream.send_response(out.body(())?).await?;
        let mut bytes = 0u64;
        while let Some(mut chunk) = up.recv_data().await.context("origin body")? {
            let data = chunk.copy_to_bytes(chunk.remaining());
            bytes += data.len() as u64;
            stream.send_data(data).await.map_err(|e| anyhow!("client stream: {e}"))?;
        }
        stream.finish().await?;
        log.requests.lock().unwrap().push(serde_json::json!({
            "path": path, "status": resp.status().as_u16(), "bytes": bytes,
            "run_id": req.headers().get(RUN_HEADER).and_then(|v| v.to_str().ok()),
            "start_ms": start_ms, "first_byte_ms": first_byte_ms, "end_ms": ms(log.t0.elapsed()),
        }));
        crate::request_end::read_request_end(&mut stream).await;
        Ok(())
    }
}
