//! HTTP/2 over TLS 1.3 on kernel TCP (hyper client).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio_rustls::TlsConnector;

use super::output::{FetchReport, ObjectTiming};
use super::FetchArgs;
use super::{
    enter, failed, handshake_failed, ms_since, page, Conn, FetchError, Fetched, Goodput, Phase, Settings, Target,
};
use crate::run::RUN_HEADER;
use crate::tls::{self, Trust};

#[derive(Clone)]
pub struct H2Requester {
    send: hyper::client::conn::http2::SendRequest<Empty<Bytes>>,
}

impl H2Requester {
    pub async fn get(
        &mut self,
        target: &Target,
        path: &str,
        run_id: Option<&str>,
        t0: Instant,
        collect: bool,
        mut goodput: Option<&mut Goodput>,
    ) -> Result<Fetched, FetchError> {
        let mut req = hyper::Request::get(target.uri(path));
        if let Some(id) = run_id {
            req = req.header(RUN_HEADER, id);
        }
        let req = req.body(Empty::<Bytes>::new()).map_err(failed(Phase::Setup, "building request"))?;
        let ctx = format!("h2 GET {path}");
        self.send.ready().await.map_err(failed(Phase::Request, &ctx))?;
        let start_ms = ms_since(t0);
        let resp = self.send.send_request(req).await.map_err(failed(Phase::Request, &ctx))?;
        let first_byte_ms = ms_since(t0);
        enter(Phase::Transfer);
        let status = resp.status().as_u16();
        let mut body_in = resp.into_body();
        let mut bytes = 0u64;
        let mut body = collect.then(BytesMut::new);
        while let Some(next) = super::until_deadline(&mut goodput, body_in.frame()).await {
            let Some(frame) = next else { break };
            let frame = frame.map_err(failed(Phase::Transfer, &ctx))?;
            if let Ok(data) = frame.into_data() {
                bytes += data.len() as u64;
                if let Some(g) = goodput.as_deref_mut() {
                    g.add(data.len());
                }
                if let Some(b) = body.as_mut() {
                    b.extend_from_slice(&data);
                }
            }
        }
        Ok(Fetched {
            timing: ObjectTiming {
                path: path.to_string(),
                status,
                bytes,
                start_ms,
                first_byte_ms,
                end_ms: ms_since(t0),
                protocol: None,
            },
            body: body.map(|b| b.freeze()),
        })
    }
}

pub(super) struct H2Connection {
    pub(super) requester: H2Requester,
    pub(super) local_addr: SocketAddr,
    pub(super) alpn: Option<String>,
    resumed: bool,
}

pub(super) async fn connect(
    cfg: Arc<rustls::ClientConfig>,
    addr: SocketAddr,
    target: &Target,
    args: &FetchArgs,
    t0: Instant,
    handshake_ms: &mut f64,
) -> Result<H2Connection, FetchError> {
    let hs_timeout = Duration::from_secs_f64((args.timeout_s / 2.0).clamp(0.001, 10.0));
    enter(Phase::Connect);
    let tcp = tokio::time::timeout(hs_timeout, tokio::net::TcpStream::connect(addr))
        .await
        .map_err(|_| {
            FetchError::Failed(Phase::Connect, format!("h2: TCP connect to {addr} timed out after {hs_timeout:?}"))
        })?
        .map_err(failed(Phase::Connect, &format!("h2: TCP connect to {addr} failed")))?;
    tcp.set_nodelay(true).ok();
    let local_addr = tcp.local_addr().map_err(failed(Phase::Connect, "local address"))?;
    let name = tls::server_name(&target.host).map_err(|e| FetchError::Failed(Phase::Setup, format!("{e:#}")))?;
    enter(Phase::Handshake);
    let tls = tokio::time::timeout(hs_timeout, TlsConnector::from(cfg).connect(name, tcp))
        .await
        .map_err(|_| {
            FetchError::Failed(
                Phase::Handshake,
                format!("h2: TLS handshake with {addr} timed out after {hs_timeout:?}"),
            )
        })?
        .map_err(|e| handshake_failed(format!("h2: TLS handshake with {addr} failed"), &e))?;
    *handshake_ms = ms_since(t0);
    let session = tls.get_ref().1;
    let alpn = session.alpn_protocol().map(|p| String::from_utf8_lossy(p).into_owned());
    let resumed = session.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
    if alpn.as_deref() != Some("h2") {
        return Err(FetchError::Protocol(format!("server did not negotiate h2 (ALPN {alpn:?})")));
    }
    let (send, driver) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
        .initial_stream_window_size(args.flow.stream_window.min(u32::MAX as u64 >> 1) as u32)
        .initial_connection_window_size(args.flow.conn_window.min(u32::MAX as u64 >> 1) as u32)
        .max_concurrent_reset_streams(1024)
        .handshake(TokioIo::new(tls))
        .await
        .map_err(failed(Phase::Handshake, "h2 session setup failed"))?;
    enter(Phase::Request);
    tokio::spawn(async move {
        let _ = driver.await;
    });
    Ok(H2Connection { requester: H2Requester { send }, local_addr, alpn, resumed })
}

pub async fn run(
    args: &FetchArgs,
    target: &Target,
    addr: SocketAddr,
    trust: &Trust,
    s: &Settings,
    report: &mut FetchReport,
) -> Result<(), FetchError> {
    let cfg = Arc::new(tls::client_config(trust, b"h2").map_err(failed(Phase::Setup, "TLS config"))?);
    // a TCP connection is its 4-tuple: it stays where it is (and dies with its path)
    report.migration = super::migrate::not_possible(&args.migrate, "a TCP connection cannot change its address");
    if args.zero_rtt {
        // TCP has no 0-RTT here (no TLS early data on the server); the warm-up gives the
        // measured connection a TLS 1.3 resumption, which is what the runner compares.
        let mut ignored = 0.0;
        let mut c = connect(cfg.clone(), addr, target, args, Instant::now(), &mut ignored).await?;
        let run_id = s.run_id.as_ref().map(|r| format!("{r}-warmup"));
        c.requester.get(target, "/", run_id.as_deref(), Instant::now(), false, None).await?;
    }
    let t0 = Instant::now();
    let c = connect(cfg, addr, target, args, t0, &mut report.handshake_ms).await?;
    report.protocol = c.alpn.clone();
    report.local_addr = Some(c.local_addr.to_string());
    if args.zero_rtt && !c.resumed {
        eprintln!("warning: h2 session was not resumed");
    }
    page::load(Conn::H2(c.requester), target, t0, s, report).await
}
