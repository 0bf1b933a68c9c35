//! HTTP/2 over TLS 1.3 on kernel TCP (hyper client).

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU32, Ordering};
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

type Sender = hyper::client::conn::http2::SendRequest<Empty<Bytes>>;

#[derive(Clone)]
pub struct H2Requester {
    send: Sender,
    /// A client that moves (client/migrate.rs): the connection from its new address, once
    /// made, on which a request cut by the move resumes.
    moved: Option<Arc<Moved>>,
}

struct Moved {
    next: tokio::sync::watch::Receiver<Option<Sender>>,
    range_requests: AtomicU32,
}

/// One request's response head, or why it failed.
async fn send(
    send: &mut Sender,
    target: &Target,
    path: &str,
    run_id: Option<&str>,
    from: u64,
) -> Result<hyper::Response<hyper::body::Incoming>, FetchError> {
    let mut req = hyper::Request::get(target.uri(path));
    if let Some(id) = run_id {
        req = req.header(RUN_HEADER, id);
    }
    if from > 0 {
        req = req.header("range", format!("bytes={from}-"));
    }
    let req = req.body(Empty::<Bytes>::new()).map_err(failed(Phase::Setup, "building request"))?;
    let ctx = format!("h2 GET {path}");
    send.ready().await.map_err(failed(Phase::Request, &ctx))?;
    send.send_request(req).await.map_err(failed(Phase::Request, &ctx))
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
        let ctx = format!("h2 GET {path}");
        let start_ms = ms_since(t0);
        let (mut first_byte_ms, mut status) = (None, 0u16);
        let mut bytes = 0u64;
        let mut body = collect.then(BytesMut::new);
        let mut may_move = self.moved.is_some();
        loop {
            // a request, or the rest of one after the move (a range request from `bytes`)
            let cut = match send(&mut self.send, target, path, run_id, bytes).await {
                Err(e) => e,
                Ok(resp) => {
                    let got = resp.status().as_u16();
                    if bytes > 0 && got != 206 {
                        return Err(FetchError::Failed(
                            Phase::Transfer,
                            format!("{ctx}: resuming from byte {bytes}, the server answered {got}, not 206"),
                        ));
                    }
                    if first_byte_ms.is_none() {
                        first_byte_ms = Some(ms_since(t0));
                        status = got;
                        enter(Phase::Transfer);
                    }
                    // where this response's body ends: a connection that closes under it can
                    // end the stream early without an error
                    let length =
                        resp.headers().get("content-length").and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
                    let end = length.map(|n| bytes + n);
                    let mut body_in = resp.into_body();
                    let mut cut = None;
                    while let Some(next) = super::until_deadline(&mut goodput, body_in.frame()).await {
                        let Some(frame) = next else { break };
                        let frame = match frame {
                            Ok(f) => f,
                            Err(e) => {
                                cut = Some(failed(Phase::Transfer, &ctx)(e));
                                break;
                            }
                        };
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
                    let stopped = goodput.as_deref().is_some_and(|g| g.stopped_early);
                    match cut {
                        None if end.is_some_and(|e| bytes < e) && !stopped => FetchError::Failed(
                            Phase::Transfer,
                            format!("{ctx}: the connection closed after {bytes} of {} bytes", end.unwrap_or(0)),
                        ),
                        None => break,
                        Some(e) => e,
                    }
                }
            };
            // the connection died under the request: once, when the client moves, go on over
            // the connection it makes from its new address
            let Some(moved) = self.moved.clone().filter(|_| may_move) else { return Err(cut) };
            may_move = false;
            let mut next = moved.next.clone();
            let Ok(sender) = next.wait_for(|s| s.is_some()).await.map(|s| s.clone()) else { return Err(cut) };
            self.send = sender.expect("waited for it");
            if bytes > 0 {
                moved.range_requests.fetch_add(1, Ordering::Relaxed);
            }
        }
        let first_byte_ms = first_byte_ms.unwrap_or(start_ms);
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
    /// Its socket, to end the connection as the OS does when its interface goes (hyper runs
    /// the connection in a task of its own, which only the socket's end reaches).
    socket: Arc<std::os::fd::OwnedFd>,
}

pub(super) async fn connect(
    cfg: Arc<rustls::ClientConfig>,
    addr: SocketAddr,
    target: &Target,
    args: &FetchArgs,
    t0: Instant,
    handshake_ms: &mut f64,
    local: Option<IpAddr>,
) -> Result<H2Connection, FetchError> {
    let hs_timeout = Duration::from_secs_f64((args.timeout_s / 2.0).clamp(0.001, 10.0));
    enter(Phase::Connect);
    let tcp = tokio::time::timeout(hs_timeout, tcp_connect(addr, local))
        .await
        .map_err(|_| {
            FetchError::Failed(Phase::Connect, format!("h2: TCP connect to {addr} timed out after {hs_timeout:?}"))
        })?
        .map_err(failed(Phase::Connect, &format!("h2: TCP connect to {addr} failed")))?;
    tcp.set_nodelay(true).ok();
    let local_addr = tcp.local_addr().map_err(failed(Phase::Connect, "local address"))?;
    let socket = {
        use std::os::fd::AsFd;
        Arc::new(tcp.as_fd().try_clone_to_owned().map_err(failed(Phase::Connect, "duplicating the socket"))?)
    };
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
    Ok(H2Connection { requester: H2Requester { send, moved: None }, local_addr, alpn, resumed, socket })
}

/// A TCP connection to `addr`, from `local` when given (a client's second address).
async fn tcp_connect(addr: SocketAddr, local: Option<IpAddr>) -> std::io::Result<tokio::net::TcpStream> {
    let Some(ip) = local else { return tokio::net::TcpStream::connect(addr).await };
    let socket = if ip.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
    socket.bind(SocketAddr::new(ip, 0))?;
    socket.connect(addr).await
}

/// The move of a TCP client (client/migrate.rs): at its time, end the connection and make a
/// new one from the new address; the requests it cut resume there (`H2Requester::get`).
fn schedule_move(
    c: &mut H2Connection,
    cfg: Arc<rustls::ClientConfig>,
    addr: SocketAddr,
    target: &Target,
    args: &FetchArgs,
    t0: Instant,
) -> Option<tokio::task::JoinHandle<super::migrate::Migration>> {
    let (at, to) = args.migrate.planned()?;
    let (tx, rx) = tokio::sync::watch::channel(None);
    c.requester.moved = Some(Arc::new(Moved { next: rx, range_requests: AtomicU32::new(0) }));
    let (old, target, args) = (c.socket.clone(), target.clone(), args.clone());
    Some(tokio::spawn(async move {
        tokio::time::sleep_until((t0 + at).into()).await;
        {
            use std::os::fd::AsRawFd;
            // SAFETY: shutdown(2) on a descriptor this process owns (a duplicate of the socket)
            unsafe { libc::shutdown(old.as_raw_fd(), libc::SHUT_RDWR) };
        }
        let mut m = super::migrate::Migration::planned(at);
        m.at_ms = Some(ms_since(t0));
        let mut ignored = 0.0;
        match connect(cfg, addr, &target, &args, t0, &mut ignored, Some(to)).await {
            Ok(new) => {
                m.reconnected_ms = Some(ms_since(t0));
                m.to = Some(new.local_addr.to_string());
                let _ = tx.send(Some(new.requester.send));
                // the new connection lives as long as the fetch: its driver is not ended here
            }
            Err(e) => m.not_moved = Some(format!("reconnecting from {to}: {}", e.message())),
        }
        m // what resumed is counted when the fetch ends (`finish_move`)
    }))
}

/// The move's report once the fetch ended, with the range requests it took.
async fn finish_move(
    task: Option<tokio::task::JoinHandle<super::migrate::Migration>>,
    requester: &H2Requester,
    args: &FetchArgs,
) -> Option<super::migrate::Migration> {
    let mut m = super::migrate::outcome(task, &args.migrate).await?;
    if let Some(moved) = &requester.moved {
        m.range_requests = Some(moved.range_requests.load(Ordering::Relaxed));
    }
    Some(m)
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
    if args.zero_rtt {
        // TCP has no 0-RTT here (no TLS early data on the server); the warm-up gives the
        // measured connection a TLS 1.3 resumption, which is what the runner compares.
        let mut ignored = 0.0;
        let mut c = connect(cfg.clone(), addr, target, args, Instant::now(), &mut ignored, None).await?;
        let run_id = s.run_id.as_ref().map(|r| format!("{r}-warmup"));
        c.requester.get(target, "/", run_id.as_deref(), Instant::now(), false, None).await?;
    }
    let t0 = Instant::now();
    let mut c = connect(cfg.clone(), addr, target, args, t0, &mut report.handshake_ms, None).await?;
    report.protocol = c.alpn.clone();
    report.local_addr = Some(c.local_addr.to_string());
    if args.zero_rtt && !c.resumed {
        eprintln!("warning: h2 session was not resumed");
    }
    // a client that moves: a TCP connection cannot, so it reconnects from the new address
    let moving = schedule_move(&mut c, cfg, addr, target, args, t0);
    let requester = c.requester.clone();
    let result = page::load(Conn::H2(c.requester), target, t0, s, report).await;
    report.migration = finish_move(moving, &requester, args).await;
    result
}
