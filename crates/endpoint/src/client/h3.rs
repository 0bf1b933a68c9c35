//! HTTP/3 client over quinn, with optional 0-RTT after an in-process warm-up connection.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes, BytesMut};
use quinn::crypto::rustls::{HandshakeData, QuicClientConfig};

use super::output::{FetchReport, ObjectTiming};
use super::tickets::TicketLog;
use super::tokens::CountingTokenStore;
use super::FetchArgs;
use super::{
    enter, failed, handshake_failed, ms_since, page, Conn, FetchError, Fetched, Goodput, Phase, Settings, Target,
};
use crate::run::RUN_HEADER;
use crate::tls::{self, Trust};
use crate::transport::transport_config;

#[derive(Clone)]
pub struct H3Requester {
    send: h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>,
}

impl H3Requester {
    pub async fn get(
        &mut self,
        target: &Target,
        path: &str,
        run_id: Option<&str>,
        t0: Instant,
        collect: bool,
        mut goodput: Option<&mut Goodput>,
    ) -> Result<Fetched, FetchError> {
        let mut req = http::Request::get(target.uri(path));
        if let Some(id) = run_id {
            req = req.header(RUN_HEADER, id);
        }
        let req = req.body(()).map_err(failed(Phase::Setup, "building request"))?;
        let start_ms = ms_since(t0);
        let ctx = format!("h3 GET {path}");
        let mut stream = self.send.send_request(req).await.map_err(failed(Phase::Request, &ctx))?;
        crate::request_end::finish_request(&mut stream).await.map_err(failed(Phase::Request, &ctx))?;
        let resp = stream.recv_response().await.map_err(failed(Phase::Request, &ctx))?;
        let first_byte_ms = ms_since(t0);
        enter(Phase::Transfer);
        let mut bytes = 0u64;
        let mut body = collect.then(BytesMut::new);
        while let Some(next) = super::until_deadline(&mut goodput, stream.recv_data()).await {
            let Some(mut chunk) = next.map_err(failed(Phase::Transfer, &ctx))? else { break };
            let n = chunk.remaining();
            if let Some(b) = body.as_mut() {
                while chunk.has_remaining() {
                    let c = chunk.chunk();
                    let l = c.len();
                    b.extend_from_slice(c);
                    chunk.advance(l);
                }
            }
            bytes += n as u64;
            if let Some(g) = goodput.as_deref_mut() {
                g.add(n);
            }
        }
        Ok(Fetched {
            timing: ObjectTiming {
                path: path.to_string(),
                status: resp.status().as_u16(),
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

/// The source address the kernel picks for `dst` (our socket is bound to the wildcard and
/// quinn reports no local IP without packet info).
pub(super) fn source_ip_towards(dst: SocketAddr) -> Option<std::net::IpAddr> {
    let bind: SocketAddr = if dst.is_ipv6() { "[::]:0".parse().ok()? } else { "0.0.0.0:0".parse().ok()? };
    let s = std::net::UdpSocket::bind(bind).ok()?;
    s.connect(dst).ok()?;
    s.local_addr().ok().map(|a| a.ip())
}

/// HTTP/3 NO_ERROR (RFC 9114 §8.1): a graceful close, not an application error.
pub(super) const H3_NO_ERROR: u32 = 0x100;

fn handshake_timeout(args: &FetchArgs) -> Duration {
    Duration::from_secs_f64((args.timeout_s / 2.0).clamp(0.001, 10.0))
}

pub(super) async fn h3_over(conn: &quinn::Connection) -> Result<H3Requester, FetchError> {
    let (mut driver, send) = h3::client::builder()
        .build::<_, _, Bytes>(h3_quinn::Connection::new(conn.clone()))
        .await
        .map_err(failed(Phase::Handshake, "h3 session setup failed"))?;
    tokio::spawn(async move { futures_util::future::poll_fn(|cx| driver.poll_close(cx)).await });
    Ok(H3Requester { send })
}

/// Full handshake and one small request, so the client holds a session ticket.
async fn warm_up(
    endpoint: &quinn::Endpoint,
    addr: SocketAddr,
    target: &Target,
    s: &Settings,
    timeout: Duration,
) -> Result<(), FetchError> {
    enter(Phase::Handshake);
    let connecting = endpoint.connect(addr, &target.host).map_err(failed(Phase::Setup, "h3 warm-up connect"))?;
    let conn = tokio::time::timeout(timeout, connecting)
        .await
        .map_err(|_| FetchError::Failed(Phase::Handshake, format!("h3 warm-up handshake timed out after {timeout:?}")))?
        .map_err(|e| handshake_failed("h3 warm-up handshake".into(), &e))?;
    let mut r = h3_over(&conn).await?;
    let run_id = s.run_id.as_ref().map(|r| format!("{r}-warmup"));
    r.get(target, "/", run_id.as_deref(), Instant::now(), false, None).await?;
    conn.close(H3_NO_ERROR.into(), b"warm-up done");
    Ok(())
}

pub async fn run(
    args: &FetchArgs,
    target: &Target,
    addr: SocketAddr,
    trust: &Trust,
    s: &Settings,
    report: &mut FetchReport,
) -> Result<(), FetchError> {
    let only = args.chacha20.then_some(rustls::CipherSuite::TLS13_CHACHA20_POLY1305_SHA256);
    let mut rustls_cfg = tls::client_config_offering(trust, b"h3", only).map_err(failed(Phase::Setup, "TLS config"))?;
    // the warm-up's tickets, counted: "no ticket" and "no ticket allowing early data" differ
    let tickets = TicketLog::new();
    rustls_cfg.resumption = rustls::client::Resumption::store(tickets.clone());
    let crypto = Arc::new(quic_crypto(rustls_cfg).map_err(failed(Phase::Setup, "QUIC TLS config"))?);
    let mut cfg = quinn::ClientConfig::new(crypto.clone());
    cfg.transport_config(Arc::new(transport_config(&args.flow)));
    // the measured connection's own config: same TLS (and session cache), and its trace
    let title = args.run_id.clone().unwrap_or_else(|| "h3".into());
    let (mut measured, _trace) = super::quic_client_config(crypto, transport_config(&args.flow), args, &title)?;
    // and the same token store: the warm-up's NEW_TOKEN tokens validate the measured
    // connection's address from its first packet (client/tokens.rs)
    let tokens = CountingTokenStore::new();
    cfg.token_store(tokens.clone());
    measured.token_store(tokens.clone());
    let bind: SocketAddr = if addr.is_ipv6() { "[::]:0".parse().unwrap() } else { "0.0.0.0:0".parse().unwrap() };
    let socket = crate::transport::udp_socket(bind, &args.flow).map_err(failed(Phase::Setup, "binding UDP socket"))?;
    let mut endpoint = crate::ecn_switch::endpoint(quinn::EndpointConfig::default(), None, socket, !args.flow.no_ecn)
        .map_err(failed(Phase::Setup, "binding UDP socket"))?;
    endpoint.set_default_client_config(cfg);
    let hs_timeout = handshake_timeout(args);

    if args.zero_rtt {
        warm_up(&endpoint, addr, target, s, hs_timeout).await?;
        let (received, early_data) = tickets.counts();
        report.zero_rtt.tickets = Some(received);
        report.zero_rtt.early_data_tickets = Some(early_data);
        report.zero_rtt.tokens = Some(tokens.received());
    }

    // t0: just before the first packet (the Initial) is sent.
    // QUIC has no connect phase of its own: the Initial starts the handshake.
    enter(Phase::Handshake);
    let t0 = Instant::now();
    let presented_before = tokens.presented();
    let connecting = endpoint
        .connect_with(measured, addr, &target.host)
        .map_err(failed(Phase::Setup, &format!("h3 connect to {addr}")))?;
    if args.zero_rtt {
        report.zero_rtt.token_presented = Some(tokens.presented() > presented_before);
    }
    let mut zero_rtt_done = None;
    let conn = match if args.zero_rtt { connecting.into_0rtt() } else { Err(connecting) } {
        Ok((conn, accepted)) => {
            report.zero_rtt.attempted = true;
            let (tx, rx) = tokio::sync::oneshot::channel();
            tokio::spawn(async move {
                let ok = accepted.await;
                let _ = tx.send((ok, ms_since(t0)));
            });
            zero_rtt_done = Some(rx);
            conn
        }
        Err(connecting) => {
            if args.zero_rtt {
                let why = match tickets.counts() {
                    (0, _) => "no session ticket from the warm-up connection",
                    (_, 0) => "the warm-up connection's session tickets allow no early data",
                    _ => "no usable session ticket",
                };
                eprintln!("warning: {why}; no 0-RTT");
            }
            let conn = tokio::time::timeout(hs_timeout, connecting)
                .await
                .map_err(|_| {
                    FetchError::Failed(
                        Phase::Handshake,
                        format!("h3 handshake with {addr} timed out after {:?}", hs_timeout),
                    )
                })?
                .map_err(|e| handshake_failed(format!("h3 handshake with {addr} failed"), &e))?;
            report.handshake_ms = ms_since(t0);
            conn
        }
    };
    if let Ok(local) = endpoint.local_addr() {
        let ip = conn.local_ip().or_else(|| source_ip_towards(addr)).unwrap_or(local.ip());
        report.local_addr = Some(SocketAddr::new(ip, local.port()).to_string());
    }

    // a client that moves: from t0, the measured connection's first packet (client/migrate.rs)
    let migration = super::migrate::schedule(&endpoint, &args.migrate, &args.flow, !args.flow.no_ecn, t0);
    if let Some(ms) = args.key_update_after_ms {
        let conn = conn.clone();
        // the caller picks `ms` beyond one round trip: a client must not update its keys before
        // the handshake is confirmed (RFC 9001 §6.1), which quinn does not check
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            conn.force_key_update();
        });
    }
    let requester = h3_over(&conn).await?;
    enter(Phase::Request);
    let mut result = page::load(Conn::H3(requester), target, t0, s, report).await;
    report.migration = super::migrate::outcome(migration, &args.migrate).await;

    if let Some(rx) = zero_rtt_done {
        match tokio::time::timeout(hs_timeout, rx).await {
            Ok(Ok((accepted, at_ms))) => {
                report.zero_rtt.accepted = accepted;
                report.handshake_ms = at_ms;
                if !accepted && result.is_err() {
                    // Requests sent as rejected 0-RTT are lost; a browser re-sends them after
                    // the handshake. Do the same on this connection, times still from t0.
                    report.objects.clear();
                    let requester = h3_over(&conn).await?;
                    result = page::load(Conn::H3(requester), target, t0, s, report).await;
                }
            }
            _ => {
                result = result.and(Err(FetchError::Failed(
                    Phase::Handshake,
                    format!("h3 handshake with {addr} did not complete"),
                )));
            }
        }
    }

    // The protocol actually negotiated, from the TLS session.
    let alpn = conn
        .handshake_data()
        .and_then(|h| h.downcast::<HandshakeData>().ok())
        .and_then(|h| h.protocol)
        .map(|p| String::from_utf8_lossy(&p).into_owned());
    report.protocol = alpn.clone();
    conn.close(H3_NO_ERROR.into(), b"done");
    let _ = tokio::time::timeout(Duration::from_millis(200), endpoint.wait_idle()).await;
    if alpn.as_deref() != Some("h3") {
        return Err(FetchError::Protocol(format!("server did not negotiate h3 (ALPN {alpn:?})")));
    }
    result
}

/// quinn's QUIC TLS config over `cfg`: Initial packets are always protected with
/// AES-128-GCM (RFC 9001 §5.2), which a config offering only another suite does not carry,
/// so it is given apart.
fn quic_crypto(cfg: rustls::ClientConfig) -> anyhow::Result<QuicClientConfig> {
    let initial = rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256
        .tls13()
        .and_then(|s| s.quic_suite())
        .ok_or_else(|| anyhow::anyhow!("ring has no AES-128-GCM QUIC suite"))?;
    Ok(QuicClientConfig::with_initial(Arc::new(cfg), initial)?)
}
