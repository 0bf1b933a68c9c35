//! HTTP/3 server: quinn endpoint, one instrumented congestion controller per connection.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::Result;
use bytes::Bytes;
use quinn::crypto::rustls::QuicServerConfig;

use super::{ConnRecord, ServerState};
use crate::cc::InstrumentedFactory;
use crate::content;
use crate::qlog::{QlogWriter, VantagePoint};
use crate::run::RUN_HEADER;
use crate::tls::{self, Identity};
use crate::transport::{local_parameters_json, transport_config};

pub struct Server {
    state: Arc<ServerState>,
    endpoint: quinn::Endpoint,
    /// Every connection's config is a clone of this one: the endpoint decodes a client's
    /// token with its own config's token key, the connection encodes NEW_TOKEN with its own,
    /// so both must be one key (`ServerConfig::with_crypto` draws a new one each call).
    base: quinn::ServerConfig,
    /// the transport parameters every connection announces, for its trace
    local_parameters: String,
}

impl Server {
    pub fn new(state: Arc<ServerState>, id: &Identity, udp: std::net::UdpSocket) -> Result<Self> {
        let crypto = Arc::new(QuicServerConfig::try_from(tls::h3_server_config(id)?)?);
        let mut base = quinn::ServerConfig::with_crypto(crypto);
        base.transport_config(Arc::new(transport_config(&state.flow)));
        base.validation_token_config(address_validation_tokens());
        let endpoint_cfg = quinn::EndpointConfig::default();
        let local_parameters = local_parameters_json(&state.flow, &endpoint_cfg);
        let endpoint = crate::ecn_switch::endpoint(endpoint_cfg, Some(base.clone()), udp, !state.flow.no_ecn)?;
        Ok(Server { state, endpoint, base, local_parameters })
    }

    pub async fn run(self) -> Result<()> {
        while let Some(incoming) = self.endpoint.accept().await {
            let peer = incoming.remote_address();
            // A client that came back with the Retry's token (or a NEW_TOKEN one) is validated
            // and accepted; any other gets a Retry and no connection state.
            if self.state.retry && !incoming.remote_address_validated() {
                if let Err(e) = incoming.retry() {
                    eprintln!("endpoint: h3 retry to {peer}: {e}");
                }
                continue;
            }
            let stem = self.state.next_stem("h3", peer);
            // A per-connection server config carries a controller factory that knows this
            // connection's log file.
            let qlog = if self.state.qlog {
                let path = self.state.log_dir.join(format!("{stem}.sqlog"));
                match QlogWriter::create(&path, &stem, "QUIC", VantagePoint::Server, Instant::now()) {
                    Ok(mut w) => {
                        w.event(Instant::now(), "transport:parameters_set", &self.local_parameters);
                        Some(Arc::new(Mutex::new(w)))
                    }
                    Err(e) => {
                        eprintln!("endpoint: cannot create {}: {e}", path.display());
                        None
                    }
                }
            } else {
                None
            };
            let mut transport = transport_config(&self.state.flow);
            transport.congestion_controller_factory(Arc::new(InstrumentedFactory {
                knobs: self.state.knobs.clone(),
                qlog: qlog.clone(),
                metrics_interval: self.state.metrics_interval,
            }));
            // quinn's packet events, merged into the same trace.
            transport.qlog_stream(qlog.as_ref().and_then(|q| crate::qlog::quinn_stream(q, &stem)));
            let mut cfg = self.base.clone();
            cfg.transport_config(Arc::new(transport));
            let connecting = match incoming.accept_with(Arc::new(cfg)) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("endpoint: h3 accept from {peer}: {e}");
                    continue;
                }
            };
            let record = ConnRecord::new(self.state.clone(), stem, "h3", peer);
            let state = self.state.clone();
            let conn_qlog = qlog.clone();
            tokio::spawn(async move {
                if let Err(e) = handle_connection(state, connecting, record.clone(), conn_qlog).await {
                    eprintln!("endpoint: h3 {}: {e:#}", record.stem);
                }
                record.write_once(None);
                if let Some(q) = qlog {
                    q.lock().unwrap().flush();
                }
            });
        }
        Ok(())
    }
}

/// NEW_TOKEN frames after each handshake, and tokens accepted once each (RFC 9000 §8.1.3-4):
/// a client that comes back with one has a validated address from its first packet, so its
/// resumed (0-RTT) connection's response is not held to 3x the bytes the client sent
/// (§8.1), as gQUIC's source-address token and Chromium's IETF QUIC allow. quinn's defaults
/// with its `bloom` feature, stated here so that losing the feature fails to compile.
fn address_validation_tokens() -> quinn::ValidationTokenConfig {
    let mut v = quinn::ValidationTokenConfig::default();
    v.log(Arc::new(quinn::BloomTokenLog::default())).sent(TOKENS_PER_CONNECTION);
    v
}

/// As quinn's default: the client can use one and keep one.
const TOKENS_PER_CONNECTION: u32 = 2;

async fn handle_connection(
    state: Arc<ServerState>,
    connecting: quinn::Connecting,
    record: Arc<ConnRecord>,
    qlog: Option<Arc<Mutex<QlogWriter>>>,
) -> Result<()> {
    // Server side of 0-RTT: take the connection before the handshake completes, so requests
    // that arrived as 0-RTT are answered at once (0.5-RTT data).
    // Wait for the whole ClientHello first: a client whose ClientHello spans two Initial
    // packets (Chromium) otherwise gets h3 streams opened before its transport parameters
    // are known, and they never open (no SETTINGS, no responses).
    let mut connecting = connecting;
    connecting.handshake_data().await?;
    let conn = match connecting.into_0rtt() {
        Ok((conn, _)) => conn,
        Err(connecting) => connecting.await?,
    };
    let mut h3conn: h3::server::Connection<h3_quinn::Connection, Bytes> =
        h3::server::builder().build(h3_quinn::Connection::new(conn.clone())).await?;
    loop {
        match h3conn.accept().await {
            Ok(Some(resolver)) => {
                let state = state.clone();
                let record = record.clone();
                tokio::spawn(async move {
                    if let Err(e) = handle_request(state, resolver, record).await {
                        eprintln!("endpoint: h3 request: {e:#}");
                    }
                });
            }
            Ok(None) => break,
            Err(e) => {
                if !e.is_h3_no_error() {
                    eprintln!("endpoint: h3 {}: connection ended: {e}", record.stem);
                }
                break;
            }
        }
    }
    if let Some(q) = qlog {
        let _ = tokio::time::timeout(std::time::Duration::from_secs(2), conn.closed()).await;
        q.lock().unwrap().event(Instant::now(), "longlook:connection_stats", &connection_stats_json(&conn.stats()));
    }
    Ok(())
}

/// quinn's own per-connection counters at close. `lost_packets` is exact (the controller only
/// sees lost bytes per batch); with the link's drop count it bounds spurious losses from below.
/// The frame counts include the ACKs that acknowledged nothing new (not in `frames_processed`).
fn connection_stats_json(s: &quinn::ConnectionStats) -> String {
    let p = &s.path;
    format!(
        "{{\"sent_packets\":{},\"lost_packets\":{},\"lost_bytes\":{},\"congestion_events\":{},\"sent_plpmtud_probes\":{},\"lost_plpmtud_probes\":{},\"black_holes_detected\":{},\"udp_tx_datagrams\":{},\"udp_rx_datagrams\":{},\"current_mtu\":{},\"ack_frames_received\":{},\"ack_frames_sent\":{},\"max_data_frames_received\":{},\"max_stream_data_frames_received\":{}}}",
        p.sent_packets, p.lost_packets, p.lost_bytes, p.congestion_events, p.sent_plpmtud_probes,
        p.lost_plpmtud_probes, p.black_holes_detected, s.udp_tx.datagrams, s.udp_rx.datagrams,
        p.current_mtu, s.frame_rx.acks, s.frame_tx.acks, s.frame_rx.max_data, s.frame_rx.max_stream_data,
    )
}

async fn handle_request(
    state: Arc<ServerState>,
    resolver: h3::server::RequestResolver<h3_quinn::Connection, Bytes>,
    record: Arc<ConnRecord>,
) -> Result<()> {
    let (req, mut stream) = resolver.resolve_request().await?;
    let run_id = req.headers().get(RUN_HEADER).and_then(|v| v.to_str().ok());
    record.write_once(run_id);
    let range = content::range_start(req.headers().get("range").and_then(|v| v.to_str().ok()));
    let mut reply = content::reply_for(req.uri().path(), state.root.as_deref()).await.starting_at(range);
    let mut resp = http::Response::builder()
        .status(reply.status)
        .header("content-type", reply.content_type)
        .header("content-length", reply.length)
        .header("cache-control", "no-store");
    if let Some(r) = &reply.content_range {
        resp = resp.header("content-range", r.as_str());
    }
    let resp = resp.body(())?;
    stream.send_response(resp).await?;
    while let Some(chunk) = reply.body.next_chunk().await? {
        stream.send_data(chunk).await?;
    }
    stream.finish().await?;
    crate::request_end::read_request_end(&mut stream).await;
    Ok(())
}
