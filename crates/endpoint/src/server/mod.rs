//! `endpoint serve`: one port, HTTP/3 on UDP and HTTP/2 over TLS 1.3 on TCP.

mod h2;
mod h3;

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};

use crate::cc::{Algorithm, CcKnobs};
use crate::run::unix_ms;
use crate::transport::FlowControl;
use crate::{tcpinfo, tls};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OnOff {
    On,
    Off,
}

#[derive(Args, Debug, Clone)]
pub struct ServeArgs {
    #[arg(long, default_value = "0.0.0.0:4433")]
    pub listen: SocketAddr,
    /// Holds cert.pem and key.pem; generated when absent.
    #[arg(long)]
    pub cert_dir: PathBuf,
    /// Also serve files from this directory.
    #[arg(long)]
    pub root: Option<PathBuf>,
    /// Where connections.jsonl and the per-connection qlog files go.
    #[arg(long, default_value = ".")]
    pub log_dir: PathBuf,
    /// QUIC congestion control: cubic, newreno, bbr.
    #[arg(long, default_value = "cubic")]
    pub cc: String,
    /// Maximum congestion window in packets (MACW; the paper's 107 and 430).
    #[arg(long)]
    pub max_cwnd_packets: Option<u64>,
    /// Initial congestion window in packets.
    #[arg(long)]
    pub initial_window_packets: Option<u64>,
    /// One QUIC connection emulates N TCP connections (Cubic only).
    #[arg(long, default_value_t = 1)]
    pub n_conn: u32,
    /// quinn always paces; `off` is recorded but cannot disable it (see README).
    #[arg(long, value_enum, default_value_t = OnOff::On)]
    pub pacing: OnOff,
    /// TCP congestion control set per connection with TCP_CONGESTION.
    #[arg(long, default_value = "cubic")]
    pub tcp_cc: String,
    #[arg(long, default_value_t = 5)]
    pub tcp_info_interval_ms: u64,
    /// A mounted tracefs (e.g. /sys/kernel/tracing): take exact TCP ca_state transitions
    /// from the tcp:tcp_cong_state_set tracepoint instead of TCP_INFO samples.
    #[arg(long)]
    pub tcp_tracefs: Option<PathBuf>,
    /// No qlog / TCP_INFO logs (connections.jsonl is still written).
    #[arg(long)]
    pub no_qlog: bool,
    /// Minimum spacing of QUIC `recovery:metrics_updated` events in microseconds (0 = every
    /// change); state changes and losses are always logged at once.
    #[arg(long, default_value_t = 0)]
    pub qlog_metrics_interval_us: u64,
    /// Append the TLS secrets of every connection (h3 and h2) here, NSS key log format.
    #[arg(long)]
    pub keylog: Option<PathBuf>,
    /// Answer every QUIC Initial whose address is not yet validated with a Retry (RFC 9000
    /// §8.1.2): the interop case "retry" and what a server under load does.
    #[arg(long)]
    pub retry: bool,
    #[command(flatten)]
    pub flow: FlowControl,
}

pub struct ServerState {
    pub root: Option<PathBuf>,
    pub log_dir: PathBuf,
    pub qlog: bool,
    pub knobs: CcKnobs,
    pub metrics_interval: Duration,
    pub tcp_cc: String,
    pub tcp_info_interval: Duration,
    pub flow: FlowControl,
    pub port: u16,
    pub tracer: Option<Arc<crate::tcp_trace::CongStateTracer>>,
    pub retry: bool,
    connections_log: Mutex<File>,
    seq: AtomicU64,
}

impl ServerState {
    /// File stem naming one connection's logs: `<proto>-<seq>-<peer ip>_<port>`.
    pub fn next_stem(&self, proto: &str, peer: SocketAddr) -> String {
        let n = self.seq.fetch_add(1, Ordering::Relaxed);
        format!("{proto}-{n:06}-{}_{}", peer.ip(), peer.port()).replace(':', "-")
    }
}

/// The connections.jsonl line of one connection, written once: at its first request (which
/// carries the run id) or, if it never made one, when it closes.
pub struct ConnRecord {
    state: Arc<ServerState>,
    pub stem: String,
    protocol: &'static str,
    peer: SocketAddr,
    start_unix_ms: u64,
    written: AtomicBool,
}

impl ConnRecord {
    pub fn new(state: Arc<ServerState>, stem: String, protocol: &'static str, peer: SocketAddr) -> Arc<Self> {
        Arc::new(ConnRecord { state, stem, protocol, peer, start_unix_ms: unix_ms(), written: AtomicBool::new(false) })
    }

    pub fn write_once(&self, run_id: Option<&str>) {
        if self.written.swap(true, Ordering::AcqRel) {
            return;
        }
        let line = serde_json::json!({
            "conn": self.stem, "protocol": self.protocol, "peer": self.peer.to_string(),
            "run_id": run_id, "start_unix_ms": self.start_unix_ms,
        });
        let mut f = self.state.connections_log.lock().unwrap();
        let _ = writeln!(f, "{line}");
        let _ = f.flush();
    }
}

pub async fn serve(args: ServeArgs) -> Result<()> {
    let algorithm = Algorithm::parse(&args.cc).map_err(anyhow::Error::msg)?;
    if args.n_conn == 0 {
        anyhow::bail!("--n-conn must be at least 1");
    }
    if args.n_conn > 1 && algorithm != Algorithm::Cubic {
        anyhow::bail!("--n-conn applies to Cubic only (got --cc {})", algorithm.name());
    }
    tcpinfo::check_congestion_control(&args.tcp_cc).map_err(anyhow::Error::msg)?;
    let identity = tls::load_or_generate(&args.cert_dir)?;
    let spki = tls::spki_sha256_b64(&identity.certs[0])?;
    std::fs::create_dir_all(&args.log_dir).with_context(|| format!("creating {}", args.log_dir.display()))?;
    let connections_log = OpenOptions::new().create(true).append(true).open(args.log_dir.join("connections.jsonl"))?;

    // UDP first (port 0 picks a free port), then TCP on the same port number.
    let udp = crate::transport::udp_socket(args.listen, &args.flow)
        .with_context(|| format!("binding UDP {}", args.listen))?;
    let addr = udp.local_addr()?;
    let tcp = bind_tcp(addr, &args.tcp_cc)?;

    let tracer = match &args.tcp_tracefs {
        Some(dir) => Some(Arc::new(crate::tcp_trace::CongStateTracer::start(dir).with_context(|| {
            format!("--tcp-tracefs {}: cannot set up a tracefs instance with tcp:tcp_cong_state_set", dir.display())
        })?)),
        None => None,
    };
    let state = Arc::new(ServerState {
        root: args.root.clone(),
        log_dir: args.log_dir.clone(),
        qlog: !args.no_qlog,
        knobs: CcKnobs {
            algorithm,
            max_cwnd_packets: args.max_cwnd_packets,
            initial_window_packets: args.initial_window_packets,
            n_connections: args.n_conn,
            pacing: args.pacing == OnOff::On,
        },
        metrics_interval: Duration::from_micros(args.qlog_metrics_interval_us),
        tcp_cc: args.tcp_cc.clone(),
        tcp_info_interval: Duration::from_millis(args.tcp_info_interval_ms.max(1)),
        flow: args.flow.clone(),
        port: addr.port(),
        tracer: tracer.clone(),
        retry: args.retry,
        connections_log: Mutex::new(connections_log),
        seq: AtomicU64::new(0),
    });

    let h3 = h3::Server::new(state.clone(), &identity, udp)?;
    let h2 = h2::Server::new(state.clone(), &identity, tcp)?;
    eprintln!("endpoint: listening on {addr} (udp: h3, tcp: h2), quic cc {}, tcp cc {}", algorithm.name(), args.tcp_cc);
    println!("ready spki={spki}");
    std::io::stdout().flush().ok();

    let serving = async {
        tokio::select! {
            r = h3.run() => r,
            r = h2.run() => r,
        }
    };
    tokio::pin!(serving);
    let result = tokio::select! {
        r = &mut serving => r,
        _ = shutdown_signal() => {
            eprintln!("endpoint: shutting down");
            // Connections whose peer just left are still writing their closing records
            // (loss and TCP_INFO summaries); stopping at once would cut the last run's log.
            let _ = tokio::time::timeout(SHUTDOWN_GRACE, &mut serving).await;
            Ok(())
        }
    };
    if let Some(t) = tracer {
        t.shutdown();
    }
    result
}

fn bind_tcp(addr: SocketAddr, cc: &str) -> Result<tokio::net::TcpListener> {
    let sock = socket2::Socket::new(socket2::Domain::for_address(addr), socket2::Type::STREAM, None)?;
    sock.set_reuse_address(true)?;
    // Accepted sockets inherit TCP_CONGESTION from the listener; h2.rs sets it again per
    // connection and reads it back.
    use std::os::fd::AsRawFd;
    tcpinfo::set_congestion_control(sock.as_raw_fd(), cc).with_context(|| format!("TCP_CONGESTION {cc}"))?;
    sock.bind(&addr.into()).with_context(|| format!("binding TCP {addr}"))?;
    sock.listen(1024)?;
    sock.set_nonblocking(true)?;
    Ok(tokio::net::TcpListener::from_std(sock.into())?)
}

/// How long a stopping server keeps serving so that finished connections can log their end.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(500);

async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
