//! `endpoint fetch`: one connection over the requested protocol, page or bulk mode, one
//! JSON report. Never falls back to another protocol.

mod h2;
mod h3;
pub mod migrate;
mod output;
mod page;
pub mod race;
mod tickets;
mod tokens;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use clap::{Args, ValueEnum};
use serde::Serialize;

use crate::qlog::{quinn_stream, FlushOnDrop, QlogWriter, SharedQlog, VantagePoint};
use crate::run::unix_ms;
use crate::tls::{self, Trust};
use crate::transport::FlowControl;
use output::{FetchReport, ObjectTiming, ZeroRtt, EXIT_ERROR, EXIT_OK, EXIT_PROTOCOL};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Proto {
    H3,
    H2,
    /// QUIC-enabled: race QUIC against TCP as Chromium does (client/race.rs).
    Race,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Page,
    Bulk,
    /// One connection; paths read from stdin one per line, fetched one at a time, each
    /// object's timing printed on stdout as a JSON line (a video player's session).
    Session,
}

#[derive(Args, Debug, Clone)]
pub struct FetchArgs {
    #[arg(long)]
    pub url: String,
    #[arg(long, value_enum)]
    pub proto: Proto,
    #[arg(long, value_enum, default_value_t = Mode::Page)]
    pub mode: Mode,
    /// Trust this CA / self-signed certificate (PEM).
    #[arg(long)]
    pub ca: Option<PathBuf>,
    /// Trust `<cert-dir>/cert.pem` when --ca is not given.
    #[arg(long)]
    pub cert_dir: Option<PathBuf>,
    /// Accept any server certificate.
    #[arg(long)]
    pub insecure: bool,
    /// Not supported: rustls cannot serialise TLS 1.3 session tickets (see README); use --zero-rtt.
    #[arg(long)]
    pub session_file: Option<PathBuf>,
    /// Make a warm-up connection first (full handshake, gets a session ticket), then the
    /// measured connection sends its requests as 0-RTT (h3) / resumes the session (h2).
    #[arg(long)]
    pub zero_rtt: bool,
    /// h3: offer TLS_CHACHA20_POLY1305_SHA256 alone (Initial packets keep AES-128-GCM, as
    /// QUIC requires).
    #[arg(long)]
    pub chacha20: bool,
    /// h3: update the 1-RTT keys this long after the handshake completes (a key phase change
    /// the server must follow), once.
    #[arg(long, value_name = "MS")]
    pub key_update_after_ms: Option<u64>,
    #[arg(long)]
    pub run_id: Option<String>,
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[arg(long, default_value_t = 60.0, value_parser = crate::args::seconds)]
    pub timeout_s: f64,
    /// Goodput sampling interval (bulk mode).
    #[arg(long, default_value_t = 10)]
    pub goodput_interval_ms: u64,
    /// Bulk mode: stop receiving this many seconds after t0 and report what arrived
    /// (a long-running flow for fairness experiments; `ok` stays true, `stopped_early` is set).
    #[arg(long, value_parser = crate::args::seconds)]
    pub duration_s: Option<f64>,
    /// Write the measured QUIC connection's trace here (qlog JSON-SEQ, vantage point client:
    /// quinn's packet events and the client controller's recovery events).
    #[arg(long)]
    pub qlog: Option<PathBuf>,
    /// Append the TLS secrets of the fetch's connections here, NSS key log format.
    #[arg(long)]
    pub keylog: Option<PathBuf>,
    #[command(flatten)]
    pub flow: FlowControl,
    #[command(flatten)]
    pub race: race::RaceArgs,
    #[command(flatten)]
    pub migrate: migrate::MigrateArgs,
}

/// A QUIC client config over `crypto` and `transport`; with `--qlog`, the connection it
/// makes writes its trace there (flushed when the returned guard drops).
pub fn quic_client_config(
    crypto: std::sync::Arc<quinn::crypto::rustls::QuicClientConfig>,
    mut transport: quinn::TransportConfig,
    args: &FetchArgs,
    title: &str,
) -> Result<(quinn::ClientConfig, FlushOnDrop), FetchError> {
    let trace = match &args.qlog {
        Some(p) => {
            let ctx = format!("creating the client qlog {}", p.display());
            // the client's endpoints use quinn's default endpoint config (h3.rs, race.rs)
            let params = crate::transport::local_parameters_json(&args.flow, &quinn::EndpointConfig::default());
            Some(trace_client(&mut transport, p, title, &params).map_err(failed(Phase::Setup, &ctx))?)
        }
        None => None,
    };
    let mut cfg = quinn::ClientConfig::new(crypto);
    cfg.transport_config(std::sync::Arc::new(transport));
    Ok((cfg, FlushOnDrop(trace)))
}

/// A client connection's trace at `path`: `transport` gets our instrumented controller
/// (default knobs: quinn's Cubic inside, the controller the client ran before) writing the
/// recovery events, and quinn's packet events, both into the one file, as on the server;
/// first the transport parameters it announces.
fn trace_client(
    transport: &mut quinn::TransportConfig,
    path: &Path,
    title: &str,
    parameters: &str,
) -> std::io::Result<SharedQlog> {
    let mut writer = QlogWriter::create(path, title, "QUIC", VantagePoint::Client, Instant::now())?;
    writer.event(Instant::now(), "transport:parameters_set", parameters);
    let trace: SharedQlog = Arc::new(Mutex::new(writer));
    transport.congestion_controller_factory(Arc::new(crate::cc::InstrumentedFactory {
        knobs: crate::cc::CcKnobs::default(),
        qlog: Some(trace.clone()),
        metrics_interval: std::time::Duration::ZERO,
    }));
    transport.qlog_stream(quinn_stream(&trace, title));
    Ok(trace)
}

/// How far a fetch got: a failure names the phase it happened in, so a lossy link's
/// handshake timeout is a failure at "handshake", never a protocol mismatch.
#[derive(Serialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Arguments, trust anchors, sockets: nothing sent yet.
    Setup,
    /// TCP connect (h2 only; QUIC connects in its handshake).
    Connect,
    /// TLS (h2) or QUIC handshake, and the HTTP session set-up over it.
    Handshake,
    /// Requests sent, waiting for a response's headers.
    Request,
    /// Response bodies arriving.
    Transfer,
}

/// The phase the fetch is in now (one fetch per process), read when the overall timeout
/// fires, which cancels whatever was running.
static PHASE: AtomicU8 = AtomicU8::new(Phase::Setup as u8);

pub fn enter(phase: Phase) {
    PHASE.store(phase as u8, Ordering::Relaxed);
}

fn current_phase() -> Phase {
    [Phase::Setup, Phase::Connect, Phase::Handshake, Phase::Request, Phase::Transfer]
        [PHASE.load(Ordering::Relaxed) as usize]
}

#[derive(Debug)]
pub enum FetchError {
    /// Connected, and the server would not speak the requested protocol (exit 3).
    Protocol(String),
    /// Anything else (exit 1), with the phase it happened in.
    Failed(Phase, String),
}

impl FetchError {
    fn message(&self) -> &str {
        match self {
            FetchError::Protocol(m) | FetchError::Failed(_, m) => m,
        }
    }

    fn phase(&self) -> Phase {
        match self {
            FetchError::Protocol(_) => Phase::Handshake,
            FetchError::Failed(p, _) => *p,
        }
    }
}

pub fn failed<E: std::fmt::Display>(phase: Phase, ctx: &str) -> impl FnOnce(E) -> FetchError + '_ {
    move |e| FetchError::Failed(phase, format!("{ctx}: {e}"))
}

/// A TLS handshake that failed because the server offered none of our ALPN protocols is
/// the server refusing the protocol (a mismatch); any other handshake failure is a failure.
pub fn handshake_failed(ctx: String, err: &dyn std::fmt::Display) -> FetchError {
    let text = err.to_string();
    let refused = ["NoApplicationProtocol", "no_application_protocol", "NoMutuallySupportedProtocol"]
        .iter()
        .any(|k| text.contains(k));
    if refused {
        FetchError::Protocol(format!("{ctx}: {text}"))
    } else {
        FetchError::Failed(Phase::Handshake, format!("{ctx}: {text}"))
    }
}

#[derive(Debug, Clone)]
pub struct Target {
    pub host: String,
    pub port: u16,
    pub path: String,
}

impl Target {
    pub fn uri(&self, path: &str) -> String {
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        format!("https://{host}:{}{path}", self.port)
    }
}

/// `https://HOST[:PORT]/PATH`; anything else is an error naming the URL.
pub fn parse_url(url: &str) -> Result<Target, FetchError> {
    let bad = |why: &str| FetchError::Failed(Phase::Setup, format!("malformed URL '{url}': {why}"));
    let uri: http::Uri = url.parse().map_err(|e: http::uri::InvalidUri| bad(&e.to_string()))?;
    if uri.scheme_str() != Some("https") {
        return Err(bad("scheme must be https"));
    }
    let host = uri.host().filter(|h| !h.is_empty()).ok_or_else(|| bad("no host"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']').to_string();
    // http::Uri keeps an out-of-range port as text and port_u16() is then None: never
    // fall back to 443 for a port the user wrote.
    let written_port = uri.authority().and_then(|a| {
        a.as_str().rsplit_once(']').map_or(a.as_str(), |(_, r)| r).rsplit_once(':').map(|(_, p)| p.to_string())
    });
    let port = match (written_port, uri.port_u16()) {
        (None, _) => 443,
        (Some(_), Some(p)) if p > 0 => p,
        (Some(p), _) => return Err(bad(&format!("port '{p}' is not 1-65535"))),
    };
    let path = uri.path_and_query().map(|p| p.as_str().to_string()).unwrap_or_else(|| "/".into());
    Ok(Target { host, port, path: if path.is_empty() { "/".into() } else { path } })
}

async fn resolve(t: &Target) -> Result<SocketAddr, FetchError> {
    tokio::net::lookup_host((t.host.as_str(), t.port))
        .await
        .map_err(|e| FetchError::Failed(Phase::Setup, format!("resolving {}: {e}", t.host)))?
        .next()
        .ok_or_else(|| FetchError::Failed(Phase::Setup, format!("resolving {}: no address", t.host)))
}

/// Records [t_ms, cumulative bytes] at most every `interval`; with a deadline, the body
/// loop stops reading once it passes (duration-bounded bulk flows).
pub struct Goodput {
    t0: Instant,
    interval: f64,
    last: f64,
    pub total: u64,
    pub samples: Vec<(f64, u64)>,
    pub deadline: Option<Instant>,
    pub stopped_early: bool,
}

impl Goodput {
    pub fn new(t0: Instant, interval: Duration) -> Self {
        Goodput {
            t0,
            interval: interval.as_secs_f64() * 1000.0,
            last: f64::MIN,
            total: 0,
            samples: Vec::new(),
            deadline: None,
            stopped_early: false,
        }
    }
    pub fn add(&mut self, n: usize) {
        self.total += n as u64;
        let t = self.t0.elapsed().as_secs_f64() * 1000.0;
        if t - self.last >= self.interval {
            self.samples.push((round3(t), self.total));
            self.last = t;
        }
    }
    pub fn finish(&mut self) {
        let t = round3(self.t0.elapsed().as_secs_f64() * 1000.0);
        if self.samples.last().map(|s| s.1) != Some(self.total) {
            self.samples.push((t, self.total));
        }
    }
}

pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

pub fn ms_since(t0: Instant) -> f64 {
    round3(t0.elapsed().as_secs_f64() * 1000.0)
}

/// One object fetched: its timing and (for the HTML) its body.
pub struct Fetched {
    pub timing: ObjectTiming,
    pub body: Option<Bytes>,
}

/// A connection that can issue GETs concurrently (cloned per object).
#[derive(Clone)]
pub enum Conn {
    H3(h3::H3Requester),
    H2(h2::H2Requester),
    Race(race::RaceRequester),
}

impl Conn {
    pub async fn get(
        &mut self,
        target: &Target,
        path: &str,
        run_id: Option<&str>,
        t0: Instant,
        collect: bool,
        goodput: Option<&mut Goodput>,
    ) -> Result<Fetched, FetchError> {
        match self {
            Conn::H3(c) => c.get(target, path, run_id, t0, collect, goodput).await,
            Conn::H2(c) => c.get(target, path, run_id, t0, collect, goodput).await,
            Conn::Race(c) => c.get(target, path, run_id, t0, collect, goodput).await,
        }
    }
}

pub struct Settings {
    pub run_id: Option<String>,
    pub mode: Mode,
    pub goodput_interval: Duration,
    pub duration: Option<Duration>,
}

/// The next body chunk, or None once the goodput deadline has passed (which marks the
/// transfer as stopped early). Without a deadline this is just `next`.
pub async fn until_deadline<T, F: std::future::Future<Output = T>>(
    goodput: &mut Option<&mut Goodput>,
    next: F,
) -> Option<T> {
    match goodput.as_deref_mut() {
        Some(g) if g.deadline.is_some() => match tokio::time::timeout_at(g.deadline.unwrap().into(), next).await {
            Ok(v) => Some(v),
            Err(_) => {
                g.stopped_early = true;
                None
            }
        },
        _ => Some(next.await),
    }
}

pub async fn fetch_main(args: FetchArgs) -> i32 {
    let started_unix_ms = unix_ms();
    let mut report = FetchReport {
        run_id: args.run_id.clone(),
        url: args.url.clone(),
        mode: args.mode,
        protocol_requested: args.proto,
        protocol: None,
        ok: false,
        error: None,
        started_unix_ms,
        plt_ms: 0.0,
        handshake_ms: 0.0,
        ttfb_ms: 0.0,
        bytes: 0,
        objects: Vec::new(),
        zero_rtt: ZeroRtt::default(),
        local_addr: None,
        goodput: Vec::new(),
        goodput_mbit: 0.0,
        stopped_early: false,
        failure_phase: None,
        race: None,
        migration: None,
        artifacts: Default::default(),
    };
    let timeout = Duration::from_secs_f64(args.timeout_s.max(0.001));
    let result = match tokio::time::timeout(timeout, run(&args, &mut report)).await {
        Ok(r) => r,
        Err(_) => Err(FetchError::Failed(current_phase(), format!("timed out after {} s", args.timeout_s))),
    };
    let code = match &result {
        Ok(()) => EXIT_OK,
        Err(FetchError::Protocol(_)) => EXIT_PROTOCOL,
        Err(FetchError::Failed(..)) => EXIT_ERROR,
    };
    if let Err(e) = &result {
        eprintln!("error: {}", e.message());
        report.error = Some(e.message().to_string());
        report.failure_phase = Some(e.phase());
    }
    report.ok = result.is_ok();
    if let Some(q) = args.qlog.as_ref().filter(|q| q.is_file()) {
        report.artifacts.insert("client_qlog".into(), name_beside(q, args.out.as_deref()));
    }
    let json = serde_json::to_string(&report).expect("report serialises");
    match &args.out {
        Some(p) => {
            if let Err(e) = std::fs::write(p, format!("{json}\n")) {
                eprintln!("error: writing {}: {e}", p.display());
                return EXIT_ERROR;
            }
        }
        None => println!("{json}"),
    }
    code
}

/// `file` as the report names it: its file name when it sits beside the report, else its path.
fn name_beside(file: &Path, report: Option<&Path>) -> String {
    match (file.parent(), report.and_then(Path::parent)) {
        (Some(a), Some(b)) if a == b => file.file_name().map(|n| n.to_string_lossy().into_owned()),
        _ => None,
    }
    .unwrap_or_else(|| file.display().to_string())
}

fn trust_of(args: &FetchArgs) -> Result<Trust, FetchError> {
    if args.insecure {
        return Ok(Trust::Insecure);
    }
    let ca = match (&args.ca, &args.cert_dir) {
        (Some(ca), _) => ca.clone(),
        (None, Some(dir)) => dir.join("cert.pem"),
        (None, None) => {
            return Err(FetchError::Failed(
                Phase::Setup,
                "no trust anchor: give --ca PEM, --cert-dir DIR or --insecure".into(),
            ))
        }
    };
    load_trust(&ca)
}

fn load_trust(p: &Path) -> Result<Trust, FetchError> {
    tls::load_certs(p).map(Trust::Roots).map_err(|e| FetchError::Failed(Phase::Setup, format!("{e:#}")))
}

async fn run(args: &FetchArgs, report: &mut FetchReport) -> Result<(), FetchError> {
    if let Some(f) = &args.session_file {
        return Err(FetchError::Failed(Phase::Setup, format!(
            "--session-file {} is not supported: rustls cannot serialise TLS 1.3 session tickets across processes; use --zero-rtt (warm-up connection, then a 0-RTT connection in one process)",
            f.display()
        )));
    }
    let target = parse_url(&args.url)?;
    let trust = trust_of(args)?;
    let addr = resolve(&target).await?;
    if args.duration_s.is_some() && args.mode != Mode::Bulk {
        return Err(FetchError::Failed(Phase::Setup, "--duration-s applies to --mode bulk only".into()));
    }
    let duration = args.duration_s.map(|d| Duration::from_secs_f64(d.max(0.0)));
    if args.migrate.planned().is_some() && args.proto == Proto::Race {
        return Err(FetchError::Failed(
            Phase::Setup,
            "--migrate-at-ms applies to --proto h3 (a QUIC connection moves) or h2 (reported as unable to)".into(),
        ));
    }
    if (args.chacha20 || args.key_update_after_ms.is_some()) && args.proto != Proto::H3 {
        return Err(FetchError::Failed(
            Phase::Setup,
            "--chacha20 and --key-update-after-ms apply to --proto h3 (the QUIC interop cases)".into(),
        ));
    }
    let settings = Settings {
        run_id: args.run_id.clone(),
        mode: args.mode,
        goodput_interval: Duration::from_millis(args.goodput_interval_ms.max(1)),
        duration,
    };
    match args.proto {
        Proto::H3 => h3::run(args, &target, addr, &trust, &settings, report).await,
        Proto::H2 => h2::run(args, &target, addr, &trust, &settings, report).await,
        Proto::Race => race::run(args, &target, addr, &trust, &settings, report).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let t = parse_url("https://127.0.0.1:4433/page/10x10k.html").unwrap();
        assert_eq!((t.host.as_str(), t.port, t.path.as_str()), ("127.0.0.1", 4433, "/page/10x10k.html"));
        assert_eq!(t.uri("/obj/1"), "https://127.0.0.1:4433/obj/1");
        let t = parse_url("https://[::1]:8443/").unwrap();
        assert_eq!(t.uri("/x"), "https://[::1]:8443/x");
        for bad in ["http://a/", "not a url", "https:///x", ""] {
            match parse_url(bad) {
                Err(FetchError::Failed(Phase::Setup, m)) => assert!(m.contains("malformed URL"), "{m}"),
                other => panic!("{bad}: {other:?}"),
            }
        }
    }

    #[tokio::test]
    async fn a_passed_deadline_stops_the_body_loop() {
        let mut g = Goodput::new(Instant::now(), Duration::from_millis(0));
        let mut none: Option<&mut Goodput> = None;
        assert_eq!(until_deadline(&mut none, async { 1 }).await, Some(1));
        g.deadline = Some(Instant::now() + Duration::from_millis(20));
        let mut some = Some(&mut g);
        assert_eq!(until_deadline(&mut some, async { 2 }).await, Some(2));
        let never = std::future::pending::<u8>();
        assert_eq!(until_deadline(&mut some, never).await, None);
        assert!(g.stopped_early);
    }

    #[test]
    fn goodput_samples_are_cumulative() {
        let mut g = Goodput::new(Instant::now(), Duration::from_millis(0));
        g.add(10);
        g.add(5);
        g.finish();
        assert_eq!(g.samples.last().unwrap().1, 15);
        assert!(g.samples.windows(2).all(|w| w[0].1 <= w[1].1 && w[0].0 <= w[1].0));
    }
}
