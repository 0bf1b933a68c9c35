//! `endpoint proxy`: the split-connection proxies of Kakhki et al. §5, run in the testbed's
//! proxy namespace between two emulated segments.
//!
//! - `--mode tcp`: terminates the client's TCP connection and relays its bytes on a second
//!   TCP connection to the origin. TLS stays end to end (the client still sees the origin's
//!   certificate): the testbed redirects the client's connections to the proxy (nat REDIRECT)
//!   and the proxy connects to their original destination (SO_ORIGINAL_DST), or `--origin`.
//! - `--mode quic`: an HTTP/3 reverse proxy. Terminates QUIC with its own certificate and
//!   fetches each request from `--origin` over its own QUIC connection (one per client
//!   connection, opened at its first request), streaming the response back. No 0-RTT and no
//!   TLS resumption on either side, as the paper's unoptimised proxy.
//!
//! Prints `ready` when listening; one JSON line per connection in `<log-dir>/proxy.jsonl`
//! when it ends (docs/interfaces.md, "endpoint proxy").

mod log;
mod quic;
mod tcp;

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};

use crate::transport::FlowControl;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ProxyMode {
    Tcp,
    Quic,
}

#[derive(Args, Debug, Clone)]
pub struct ProxyArgs {
    #[arg(long, value_enum)]
    pub mode: ProxyMode,
    /// Where to listen (tcp: where the nat REDIRECT sends connections; quic: the UDP address
    /// clients connect to).
    #[arg(long)]
    pub listen: SocketAddr,
    /// The origin server. tcp: default = each connection's original destination; quic: required.
    #[arg(long)]
    pub origin: Option<SocketAddr>,
    /// quic: TLS server name of the origin (default: its IP address).
    #[arg(long)]
    pub origin_name: Option<String>,
    /// quic: trust this certificate (PEM) for the origin.
    #[arg(long)]
    pub origin_ca: Option<PathBuf>,
    /// quic: the proxy's own cert.pem + key.pem; generated when absent (SANs: the listen
    /// address, localhost, 127.0.0.1).
    #[arg(long)]
    pub cert_dir: Option<PathBuf>,
    /// Where proxy.jsonl goes.
    #[arg(long, default_value = ".")]
    pub log_dir: PathBuf,
    #[command(flatten)]
    pub flow: FlowControl,
}

pub async fn run(args: ProxyArgs) -> Result<()> {
    std::fs::create_dir_all(&args.log_dir)?;
    let log = log::ProxyLog::open(&args.log_dir.join("proxy.jsonl"))?;
    let serving: std::pin::Pin<Box<dyn std::future::Future<Output = Result<()>>>> = match args.mode {
        ProxyMode::Tcp => {
            let listener = tcp::bind(args.listen).await?;
            eprintln!("endpoint proxy: tcp, listening on {}", args.listen);
            Box::pin(tcp::serve(listener, args.origin, log))
        }
        ProxyMode::Quic => {
            let Some(origin) = args.origin else { bail!("--mode quic needs --origin ADDR:PORT") };
            let Some(ca) = args.origin_ca.clone() else {
                bail!("--mode quic needs --origin-ca PEM (the origin's certificate)")
            };
            let Some(cert_dir) = args.cert_dir.clone() else {
                bail!("--mode quic needs --cert-dir DIR (the proxy's own certificate)")
            };
            let proxy = quic::Proxy::new(&args, origin, &ca, &cert_dir, log)?;
            eprintln!("endpoint proxy: quic, listening on {}, origin {origin}", args.listen);
            Box::pin(proxy.serve())
        }
    };
    println!("ready");
    std::io::stdout().flush().ok();
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate())?;
    tokio::select! {
        r = serving => r,
        _ = tokio::signal::ctrl_c() => Ok(()),
        _ = term.recv() => Ok(()),
    }
}
