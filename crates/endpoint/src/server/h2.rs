//! HTTP/2 over TLS 1.3 on kernel TCP: TCP_CONGESTION per connection, TCP_INFO sampling.

use std::convert::Infallible;
use std::os::fd::AsRawFd;
use std::sync::Arc;

use anyhow::{anyhow, Result};
use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, StreamBody};
use hyper::body::Frame;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio_rustls::TlsAcceptor;

use super::{ConnRecord, ServerState};
use crate::content::{self, BodySource};
use crate::run::RUN_HEADER;
use crate::tcpinfo::{self, SamplerConfig};
use crate::tls::{self, Identity};

pub struct Server {
    state: Arc<ServerState>,
    listener: tokio::net::TcpListener,
    acceptor: TlsAcceptor,
}

type Body = BoxBody<Bytes, std::io::Error>;

impl Server {
    pub fn new(state: Arc<ServerState>, id: &Identity, listener: tokio::net::TcpListener) -> Result<Self> {
        let acceptor = TlsAcceptor::from(Arc::new(tls::h2_server_config(id)?));
        Ok(Server { state, listener, acceptor })
    }

    pub async fn run(self) -> Result<()> {
        loop {
            let (tcp, peer) = match self.listener.accept().await {
                Ok(x) => x,
                Err(e) => {
                    eprintln!("endpoint: tcp accept: {e}");
                    continue;
                }
            };
            let state = self.state.clone();
            let acceptor = self.acceptor.clone();
            tokio::spawn(async move {
                let stem = state.next_stem("h2", peer);
                let record = ConnRecord::new(state.clone(), stem.clone(), "h2", peer);
                if let Err(e) = handle_connection(state, acceptor, tcp, record.clone()).await {
                    eprintln!("endpoint: h2 {stem}: {e:#}");
                }
                record.write_once(None);
            });
        }
    }
}

async fn handle_connection(
    state: Arc<ServerState>,
    acceptor: TlsAcceptor,
    tcp: tokio::net::TcpStream,
    record: Arc<ConnRecord>,
) -> Result<()> {
    tcp.set_nodelay(true)?;
    let fd = tcp.as_raw_fd();
    tcpinfo::set_congestion_control(fd, &state.tcp_cc).map_err(|e| anyhow!("TCP_CONGESTION {}: {e}", state.tcp_cc))?;
    let cc = tcpinfo::get_congestion_control(fd).unwrap_or_default();
    let peer = tcp.peer_addr()?;
    let local_port = tcp.local_addr()?.port();
    let sampler = if state.qlog {
        let trace = state.tracer.as_ref().map(|t| t.subscribe(local_port, peer));
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel();
        let cfg = SamplerConfig {
            interval: state.tcp_info_interval,
            qlog_path: state.log_dir.join(format!("{}.tcp.sqlog", record.stem)),
            title: record.stem.clone(),
            congestion_control: cc,
        };
        Some((stop_tx, tcpinfo::spawn_sampler(fd, cfg, stop_rx, trace)?))
    } else {
        None
    };

    let result = serve_tls(state.clone(), acceptor, tcp, record).await;
    if let Some((stop, task)) = sampler {
        let _ = stop.send(());
        let _ = task.await;
    }
    if let Some(t) = &state.tracer {
        t.unsubscribe(local_port, peer);
    }
    result
}

async fn serve_tls(
    state: Arc<ServerState>,
    acceptor: TlsAcceptor,
    tcp: tokio::net::TcpStream,
    record: Arc<ConnRecord>,
) -> Result<()> {
    let tls = acceptor.accept(tcp).await?;
    let alpn = tls.get_ref().1.alpn_protocol().map(|p| p.to_vec());
    if alpn.as_deref() != Some(b"h2") {
        return Err(anyhow!(
            "client did not negotiate h2 (ALPN {:?})",
            alpn.map(|a| String::from_utf8_lossy(&a).into_owned())
        ));
    }
    let flow = state.flow.clone();
    let svc = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
        let state = state.clone();
        let record = record.clone();
        async move { Ok::<_, Infallible>(respond(&state, &record, req).await) }
    });
    let mut builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
    builder
        .initial_stream_window_size(flow.stream_window.min(u32::MAX as u64 >> 1) as u32)
        .initial_connection_window_size(flow.conn_window.min(u32::MAX as u64 >> 1) as u32)
        .max_concurrent_streams(flow.max_streams)
        // Large enough to never stall on our 64 KiB chunks.
        .max_send_buf_size(1024 * 1024);
    builder.serve_connection(TokioIo::new(tls), svc).await.map_err(|e| anyhow!("h2: {e}"))
}

async fn respond(
    state: &ServerState,
    record: &ConnRecord,
    req: hyper::Request<hyper::body::Incoming>,
) -> hyper::Response<Body> {
    let run_id = req.headers().get(RUN_HEADER).and_then(|v| v.to_str().ok());
    record.write_once(run_id);
    let range = content::range_start(req.headers().get("range").and_then(|v| v.to_str().ok()));
    let reply = content::reply_for(req.uri().path(), state.root.as_deref()).await.starting_at(range);
    let content_range = reply.content_range.clone();
    let body = StreamBody::new(futures_util::stream::unfold(reply.body, |mut src: BodySource| async move {
        match src.next_chunk().await {
            Ok(Some(b)) => Some((Ok(Frame::data(b)), src)),
            Ok(None) => None,
            Err(e) => Some((Err(e), BodySource::Full(None))),
        }
    }))
    .boxed();
    let mut resp = hyper::Response::builder()
        .status(reply.status)
        .header("content-type", reply.content_type)
        .header("content-length", reply.length)
        .header("cache-control", "no-store")
        .header("alt-svc", format!("h3=\":{}\"; ma=86400", state.port));
    if let Some(r) = content_range {
        resp = resp.header("content-range", r);
    }
    resp.body(body).expect("valid response")
}
