//! Command line (docs/interfaces.md is the contract). Each subcommand's flags live with it:
//! `server::ServeArgs`, `client::FetchArgs`, `proxy::ProxyArgs`; the flow-control flags
//! they share are `transport::FlowControl`.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(name = "endpoint", version, about = "longlook's instrumented HTTP/3 + HTTP/2 server and client")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Serve HTTP/3 (UDP) and HTTP/2 over TLS 1.3 (TCP) on one port.
    Serve(crate::server::ServeArgs),
    /// Fetch a page (HTML + all its objects) or one bulk object and print one JSON document.
    Fetch(crate::client::FetchArgs),
    /// Split-connection proxy between two testbed segments: TCP relay or HTTP/3 reverse proxy.
    Proxy(crate::proxy::ProxyArgs),
    /// Print base64(sha256(SubjectPublicKeyInfo)) of a PEM certificate.
    Spki {
        #[arg(long)]
        cert: PathBuf,
    },
}
