//! `endpoint fetch --proto race`: a QUIC-enabled client that races QUIC against TCP the way
//! Chromium's HttpStreamFactory::JobController does (Langley et al. §7), and records which
//! protocol served every request.
//!
//! The model (Chromium's rules are cited in race/state.rs):
//! - The QUIC job starts at t0 unless the origin's alternative service is broken (then TCP
//!   only). The TCP job starts after the planned wait, or at once when the QUIC job fails
//!   first (`OnStreamFailed` -> `MaybeResumeMainJob(job, 0)`).
//! - Each request takes whichever connection is up, QUIC first: the first request goes over
//!   whichever connects first; a request made after QUIC came up uses QUIC.
//! - The QUIC handshake fails after `--quic-handshake-timeout-ms` (Chromium:
//!   `max_idle_time_before_crypto_handshake` = 5 s with nothing received) or on an error.
//! - A request that fails on an established QUIC connection is retried over TCP and QUIC is
//!   not used again in this run (Chromium's retry without alt-svc on QUIC errors).
//! - At the end: QUIC failed and TCP served -> the alternative service is marked broken
//!   (backoff); QUIC worked -> confirmed, its smoothed RTT cached. Saved to `--race-state`.

pub mod report;
pub mod state;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Args;
use quinn::crypto::rustls::QuicClientConfig;
use tokio::sync::{oneshot, watch, Notify};

use super::output::FetchReport;
use super::{failed, h2, h3, ms_since, page, Conn, FetchArgs, FetchError, Fetched, Goodput, Phase, Settings, Target};
use crate::run::unix_ms;
use crate::tls::{self, Trust};
use crate::transport::transport_config;
use report::{RaceInitial, RaceReport};
use state::{Constants, Plan, RaceState};

/// Racing constants (`--proto race` only); defaults are Chromium's.
#[derive(Args, Debug, Clone)]
pub struct RaceArgs {
    /// TCP waits this factor x the cached smoothed RTT when QUIC is known to work.
    #[arg(long, default_value_t = 1.5, value_parser = crate::args::factor)]
    pub race_delay_factor: f64,
    /// ... or this long with no cached RTT.
    #[arg(long, default_value_t = 300.0, value_parser = crate::args::millis)]
    pub race_default_delay_ms: f64,
    /// Cap of the TCP wait (Chromium's kMaxDelayTimeForMainJobSecs = 3 s).
    #[arg(long, default_value_t = 3000.0, value_parser = crate::args::millis)]
    pub race_max_delay_ms: f64,
    /// The QUIC handshake fails after this long (Chromium: 5 s idle before the handshake).
    #[arg(long, default_value_t = 5000.0, value_parser = crate::args::millis)]
    pub quic_handshake_timeout_ms: f64,
    /// Idle timeout of an established QUIC connection (a blackholed one fails after it).
    #[arg(long, default_value_t = 30000.0, value_parser = crate::args::millis)]
    pub quic_idle_timeout_ms: f64,
    /// A failed alternative service is broken this long, doubled on each repeat.
    #[arg(long, default_value_t = 300.0, value_parser = crate::args::seconds)]
    pub broken_for_s: f64,
    /// JSON state (alt-svc, broken marks, cached RTT) read before and written after the run;
    /// absent or missing file = the --race-initial state.
    #[arg(long)]
    pub race_state: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = RaceInitial::QuicKnown)]
    pub race_initial: RaceInitial,
}

impl RaceArgs {
    fn constants(&self) -> Result<Constants, FetchError> {
        let ms = |name: &str, v: f64| {
            if v.is_finite() && v >= 0.0 {
                Ok(Duration::from_secs_f64(v / 1000.0))
            } else {
                Err(FetchError::Failed(Phase::Setup, format!("--{name} must be a number >= 0, got {v}")))
            }
        };
        if !(self.race_delay_factor.is_finite() && self.race_delay_factor >= 0.0) {
            return Err(FetchError::Failed(
                Phase::Setup,
                format!("--race-delay-factor must be >= 0, got {}", self.race_delay_factor),
            ));
        }
        Ok(Constants {
            delay_factor: self.race_delay_factor,
            default_delay: ms("race-default-delay-ms", self.race_default_delay_ms)?,
            max_delay: ms("race-max-delay-ms", self.race_max_delay_ms)?,
            broken_for: ms("broken-for-s", self.broken_for_s * 1000.0)?,
        })
    }
}

#[derive(Clone)]
enum Leg<T> {
    /// Not started or connecting.
    Pending,
    Up(T),
    /// Failed, or not tried (QUIC broken).
    Down,
}

struct Inner {
    t0: Instant,
    quic: watch::Sender<Leg<h3::H3Requester>>,
    tcp: watch::Sender<Leg<h2::H2Requester>>,
    start_tcp: Notify,
    report: Mutex<RaceReport>,
}

/// A request handle: picks the connection per request (cloned per object).
#[derive(Clone)]
pub struct RaceRequester {
    inner: Arc<Inner>,
}

enum Picked {
    H3(h3::H3Requester),
    H2(h2::H2Requester),
}

impl Inner {
    fn quic_failed(&self, err: String, after_handshake: bool) {
        {
            let mut r = self.report.lock().unwrap();
            if r.quic_failed_ms.is_none() {
                r.quic_failed_ms = Some(ms_since(self.t0));
                r.quic_error = Some(err);
            }
            r.quic_failed_after_handshake |= after_handshake;
        }
        self.quic.send_replace(Leg::Down);
        self.start_tcp.notify_one();
    }
}

impl RaceRequester {
    async fn pick(&self) -> Result<Picked, FetchError> {
        let mut q = self.inner.quic.subscribe();
        let mut t = self.inner.tcp.subscribe();
        loop {
            let qs = q.borrow_and_update().clone();
            let ts = t.borrow_and_update().clone();
            if let Leg::Up(r) = qs {
                return Ok(Picked::H3(r));
            }
            if let Leg::Up(r) = ts {
                let mut rep = self.inner.report.lock().unwrap();
                if rep.time_to_fallback_ms.is_none() {
                    rep.time_to_fallback_ms = Some(ms_since(self.inner.t0));
                }
                return Ok(Picked::H2(r));
            }
            if matches!((&qs, &ts), (Leg::Down, Leg::Down)) {
                let rep = self.inner.report.lock().unwrap();
                return Err(FetchError::Failed(
                    Phase::Handshake,
                    format!(
                        "race: no connection (quic: {}; tcp: {})",
                        rep.quic_error.as_deref().unwrap_or(&rep.rule),
                        rep.tcp_error.as_deref().unwrap_or("?")
                    ),
                ));
            }
            tokio::select! {
                _ = q.changed() => {}
                _ = t.changed() => {}
            }
        }
    }

    pub async fn get(
        &mut self,
        target: &Target,
        path: &str,
        run_id: Option<&str>,
        t0: Instant,
        collect: bool,
        mut goodput: Option<&mut Goodput>,
    ) -> Result<Fetched, FetchError> {
        loop {
            let (mut f, proto) = match self.pick().await? {
                Picked::H3(mut r) => match r.get(target, path, run_id, t0, collect, goodput.as_deref_mut()).await {
                    Ok(f) => (f, "h3"),
                    Err(e) => {
                        // A QUIC connection that broke under a request: retry over TCP.
                        self.inner.quic_failed(format!("after handshake: {}", e.message()), true);
                        continue;
                    }
                },
                Picked::H2(mut r) => (r.get(target, path, run_id, t0, collect, goodput.as_deref_mut()).await?, "h2"),
            };
            f.timing.protocol = Some(proto);
            let mut guard = self.inner.report.lock().unwrap();
            let rep = &mut *guard;
            let (n, b) = if proto == "h3" {
                (&mut rep.requests.h3, &mut rep.bytes.h3)
            } else {
                (&mut rep.requests.h2, &mut rep.bytes.h2)
            };
            *n += 1;
            *b += f.timing.bytes;
            return Ok(f);
        }
    }
}

fn origin_of(target: &Target) -> String {
    format!("{}:{}", target.host, target.port)
}

/// The QUIC job's endpoint (its one connection's trace with `--qlog`).
fn quic_endpoint(
    args: &FetchArgs,
    addr: SocketAddr,
    trust: &Trust,
) -> Result<(quinn::Endpoint, crate::qlog::FlushOnDrop), FetchError> {
    let rustls_cfg = tls::client_config(trust, b"h3").map_err(failed(Phase::Setup, "TLS config"))?;
    let crypto = QuicClientConfig::try_from(rustls_cfg).map_err(failed(Phase::Setup, "QUIC TLS config"))?;
    let mut transport = transport_config(&args.flow);
    let idle = Duration::from_secs_f64((args.race.quic_idle_timeout_ms / 1000.0).max(0.001));
    transport.max_idle_timeout(quinn::IdleTimeout::try_from(idle).ok());
    let title = args.run_id.clone().unwrap_or_else(|| "race".into());
    let (cfg, trace) = super::quic_client_config(Arc::new(crypto), transport, args, &title)?;
    let bind: SocketAddr = if addr.is_ipv6() { "[::]:0".parse().unwrap() } else { "0.0.0.0:0".parse().unwrap() };
    let socket = std::net::UdpSocket::bind(bind).map_err(failed(Phase::Setup, "binding UDP socket"))?;
    let mut endpoint = crate::ecn_switch::endpoint(quinn::EndpointConfig::default(), None, socket, !args.flow.no_ecn)
        .map_err(failed(Phase::Setup, "binding UDP socket"))?;
    endpoint.set_default_client_config(cfg);
    Ok((endpoint, trace))
}

/// Race QUIC against TCP for one page load: plan from the saved state, start the QUIC job and
/// the TCP job, load the page over whichever connection each request finds up, then keep the
/// race's books and describe it in the report.
pub async fn run(
    args: &FetchArgs,
    target: &Target,
    addr: SocketAddr,
    trust: &Trust,
    s: &Settings,
    report: &mut FetchReport,
) -> Result<(), FetchError> {
    if args.zero_rtt {
        return Err(FetchError::Failed(Phase::Setup, "--zero-rtt is not supported with --proto race".into()));
    }
    let c = args.race.constants()?;
    let origin = origin_of(target);
    let (initial, mut state) = load_state(&args.race, &origin)?;
    let plan = state.plan(&origin, unix_ms(), &c);
    let (endpoint, _trace) = quic_endpoint(args, addr, trust)?;
    let tcp_cfg = Arc::new(tls::client_config(trust, b"h2").map_err(failed(Phase::Setup, "TLS config"))?);

    let hs_timeout = Duration::from_secs_f64((args.race.quic_handshake_timeout_ms / 1000.0).max(0.001));
    let t0 = Instant::now();
    let inner = Arc::new(Inner::new(t0, initial, &state));
    let (tcp_delay, quic_conn) = start_quic_job(&inner, &plan, &endpoint, addr, &target.host, hs_timeout)?;
    let tcp_task = tokio::spawn(tcp_job(inner.clone(), tcp_delay, tcp_cfg, addr, target.clone(), args.clone()));

    super::enter(Phase::Request);
    let requester = RaceRequester { inner: inner.clone() };
    let result = page::load(Conn::Race(requester), target, t0, s, report).await;

    // A QUIC job still connecting when the page is done goes on, as Chromium's orphaned job
    // does; with a state to keep, its outcome is awaited (not part of the page load time).
    if args.race.race_state.is_some() {
        await_quic_outcome(&inner, t0 + hs_timeout).await;
    }
    let conn = quic_conn.and_then(|mut rx| rx.try_recv().ok());
    let mut rep = inner.report.lock().unwrap().clone();
    keep_books(&mut state, &origin, &c, &mut rep, conn.as_ref());
    rep.state_after = Some(state.clone());
    if let Some(p) = &args.race.race_state {
        state.save(p).map_err(|e| FetchError::Failed(Phase::Setup, e))?;
    }
    describe_connections(report, &rep, tcp_task, &endpoint, conn.as_ref(), addr).await;
    report.race = Some(rep);
    if let Some(conn) = conn {
        conn.close(h3::H3_NO_ERROR.into(), b"done");
        let _ = tokio::time::timeout(Duration::from_millis(200), endpoint.wait_idle()).await;
    }
    result
}

/// The state to plan from (`--race-state`), or a fresh one in the `--race-initial` state; the
/// initial state is reported only when it was used.
fn load_state(race: &RaceArgs, origin: &str) -> Result<(Option<RaceInitial>, RaceState), FetchError> {
    let loaded = match &race.race_state {
        Some(p) => RaceState::load(p).map_err(|e| FetchError::Failed(Phase::Setup, e))?,
        None => None,
    };
    let initial = loaded.is_none().then_some(race.race_initial);
    let state = loaded.unwrap_or_else(|| RaceState::fresh(origin, race.race_initial == RaceInitial::QuicKnown));
    Ok((initial, state))
}

impl Inner {
    fn new(t0: Instant, initial: Option<RaceInitial>, state: &RaceState) -> Self {
        Inner {
            t0,
            quic: watch::Sender::new(Leg::Pending),
            tcp: watch::Sender::new(Leg::Pending),
            start_tcp: Notify::new(),
            report: Mutex::new(RaceReport { initial, state_before: Some(state.clone()), ..Default::default() }),
        }
    }
}

/// The QUIC job, at once unless the alternative service is broken. Returns how long the TCP
/// job waits, and where the QUIC connection arrives once it is up.
fn start_quic_job(
    inner: &Arc<Inner>,
    plan: &Plan,
    endpoint: &quinn::Endpoint,
    addr: SocketAddr,
    host: &str,
    hs_timeout: Duration,
) -> Result<(Duration, Option<oneshot::Receiver<quinn::Connection>>), FetchError> {
    match plan {
        Plan::TcpOnly { why } => {
            inner.report.lock().unwrap().rule = why.clone();
            inner.quic.send_replace(Leg::Down);
            Ok((Duration::ZERO, None))
        }
        Plan::Race { tcp_delay, rule } => {
            {
                let mut r = inner.report.lock().unwrap();
                r.quic_attempted = true;
                r.rule = rule.to_string();
                r.tcp_delay_ms = Some(super::round3(tcp_delay.as_secs_f64() * 1000.0));
            }
            let connecting =
                endpoint.connect(addr, host).map_err(failed(Phase::Setup, &format!("h3 connect to {addr}")))?;
            let (conn_tx, conn_rx) = oneshot::channel();
            tokio::spawn(quic_job(inner.clone(), connecting, hs_timeout, conn_tx));
            Ok((*tcp_delay, Some(conn_rx)))
        }
    }
}

/// The QUIC handshake and HTTP/3 set-up, within `hs_timeout`; its outcome goes to the
/// requests (`inner.quic`) and its connection to `conn_tx`.
async fn quic_job(
    job: Arc<Inner>,
    connecting: quinn::Connecting,
    hs_timeout: Duration,
    conn_tx: oneshot::Sender<quinn::Connection>,
) {
    let outcome = match tokio::time::timeout(hs_timeout, connecting).await {
        Err(_) => Err(format!("handshake timed out after {} ms", hs_timeout.as_millis())),
        Ok(Err(e)) => Err(format!("handshake failed: {e}")),
        Ok(Ok(conn)) => match h3::h3_over(&conn).await {
            Ok(r) => Ok((conn, r)),
            Err(e) => Err(e.message().to_string()),
        },
    };
    match outcome {
        Ok((conn, r)) => {
            job.report.lock().unwrap().quic_handshake_ms = Some(ms_since(job.t0));
            let _ = conn_tx.send(conn);
            job.quic.send_replace(Leg::Up(r));
        }
        Err(e) => job.quic_failed(e, false),
    }
}

/// The TCP job: after its wait, or as soon as QUIC fails; not at all if QUIC is up by then.
/// Returns the connection's local address if it came up.
async fn tcp_job(
    job: Arc<Inner>,
    tcp_delay: Duration,
    tcp_cfg: Arc<rustls::ClientConfig>,
    addr: SocketAddr,
    target: Target,
    args: FetchArgs,
) -> Option<SocketAddr> {
    tokio::select! {
        _ = tokio::time::sleep(tcp_delay) => {}
        _ = job.start_tcp.notified() => {}
    }
    // QUIC won before the wait ended: the TCP job is not needed unless QUIC breaks.
    while matches!(*job.quic.borrow(), Leg::Up(_)) {
        job.start_tcp.notified().await;
    }
    job.report.lock().unwrap().tcp_started_ms = Some(ms_since(job.t0));
    let mut hs = 0.0;
    match h2::connect(tcp_cfg, addr, &target, &args, job.t0, &mut hs, None).await {
        Ok(c) => {
            job.report.lock().unwrap().tcp_handshake_ms = Some(hs);
            job.tcp.send_replace(Leg::Up(c.requester));
            Some(c.local_addr)
        }
        Err(e) => {
            job.report.lock().unwrap().tcp_error = Some(e.message().to_string());
            job.tcp.send_replace(Leg::Down);
            None
        }
    }
}

/// Wait (at most until the handshake's deadline, and a little more) for the QUIC job to
/// come up or fail.
async fn await_quic_outcome(inner: &Inner, deadline: Instant) {
    let mut q = inner.quic.subscribe();
    let left = (deadline + Duration::from_millis(100)).saturating_duration_since(Instant::now());
    let _ = tokio::time::timeout(left, q.wait_for(|l| !matches!(l, Leg::Pending))).await;
}

/// Book-keeping of the race, as Chromium's HttpServerProperties would keep it: QUIC failed
/// and TCP served -> the alternative service is marked broken; QUIC worked -> confirmed, its
/// smoothed RTT cached.
fn keep_books(
    state: &mut RaceState,
    origin: &str,
    c: &Constants,
    rep: &mut RaceReport,
    conn: Option<&quinn::Connection>,
) {
    let quic_failed = rep.quic_failed_ms.is_some() && rep.quic_attempted;
    if quic_failed && rep.requests.h2 > 0 {
        let d = state.mark_broken(origin, unix_ms(), c);
        rep.marked_broken_for_s = Some(d.as_secs_f64());
    } else if !quic_failed && rep.quic_handshake_ms.is_some() {
        let srtt = conn.map(|c| c.rtt());
        state.confirm_quic(origin, srtt);
        rep.srtt_cached_ms = srtt.map(|d| super::round3(d.as_secs_f64() * 1000.0));
    }
}

/// The fetch report's handshake time, protocol and local address: those of the connection
/// that served the first object ("mixed" protocol if both served).
async fn describe_connections(
    report: &mut FetchReport,
    rep: &RaceReport,
    tcp_task: tokio::task::JoinHandle<Option<SocketAddr>>,
    endpoint: &quinn::Endpoint,
    conn: Option<&quinn::Connection>,
    addr: SocketAddr,
) {
    let served_first = report.objects.iter().min_by(|a, b| a.start_ms.total_cmp(&b.start_ms)).and_then(|o| o.protocol);
    report.handshake_ms = match served_first {
        Some("h3") => rep.quic_handshake_ms.unwrap_or(0.0),
        Some(_) => rep.tcp_handshake_ms.unwrap_or(0.0),
        None => 0.0,
    };
    report.protocol = match (rep.requests.h3 > 0, rep.requests.h2 > 0) {
        (true, false) => Some("h3".into()),
        (false, true) => Some("h2".into()),
        (true, true) => Some("mixed".into()),
        (false, false) => None,
    };
    report.local_addr = match served_first {
        Some("h2") if tcp_task.is_finished() => tcp_task.await.ok().flatten().map(|a| a.to_string()),
        Some("h3") => endpoint.local_addr().ok().map(|l| {
            let ip = conn.and_then(|c| c.local_ip()).or_else(|| h3::source_ip_towards(addr)).unwrap_or(l.ip());
            SocketAddr::new(ip, l.port()).to_string()
        }),
        _ => None,
    };
}
