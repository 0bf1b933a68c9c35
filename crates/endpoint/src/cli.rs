//! Command line (docs/interfaces.md is the contract).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Parser, Debug)]
#[command(name = "endpoint", version, about = "longlook's instrumented HTTP/3 + HTTP/2 server and client")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Serve HTTP/3 (UDP) and HTTP/2 over TLS 1.3 (TCP) on one port.
    Serve(ServeArgs),
    /// Fetch a page (HTML + all its objects) or one bulk object and print one JSON document.
    Fetch(FetchArgs),
    /// Split-connection proxy between two testbed segments: TCP relay or HTTP/3 reverse proxy.
    Proxy(crate::proxy::ProxyArgs),
    /// Print base64(sha256(SubjectPublicKeyInfo)) of a PEM certificate.
    Spki {
        #[arg(long)]
        cert: PathBuf,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OnOff {
    On,
    Off,
}

#[derive(Args, Debug, Clone)]
pub struct FlowControl {
    /// Per-stream receive window in bytes (QUIC stream / HTTP/2 stream). Default 6 MiB as
    /// Chromium; 100 Mbit/s x 200 ms = 2.5 MB fits.
    #[arg(long, default_value_t = 6 * 1024 * 1024)]
    pub stream_window: u64,
    /// Per-connection receive window in bytes (QUIC connection / HTTP/2 connection).
    /// Default 15 MiB as Chromium.
    #[arg(long, default_value_t = 15 * 1024 * 1024)]
    pub conn_window: u64,
    /// Maximum concurrent request streams a peer may open (QUIC bidi streams / HTTP/2
    /// SETTINGS_MAX_CONCURRENT_STREAMS), the same for both protocols.
    #[arg(long, default_value_t = 100)]
    pub max_streams: u32,
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
    #[command(flatten)]
    pub flow: FlowControl,
}

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
    #[arg(long)]
    pub run_id: Option<String>,
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[arg(long, default_value_t = 60.0)]
    pub timeout_s: f64,
    /// Goodput sampling interval (bulk mode).
    #[arg(long, default_value_t = 10)]
    pub goodput_interval_ms: u64,
    /// Bulk mode: stop receiving this many seconds after t0 and report what arrived
    /// (a long-running flow for fairness experiments; `ok` stays true, `stopped_early` is set).
    #[arg(long)]
    pub duration_s: Option<f64>,
    /// Write the measured QUIC connection's trace here (qlog JSON-SEQ, vantage point client:
    /// quinn's packet events and the client controller's recovery events).
    #[arg(long)]
    pub qlog: Option<PathBuf>,
    #[command(flatten)]
    pub flow: FlowControl,
    #[command(flatten)]
    pub race: crate::client::race::RaceArgs,
}
