//! Command line (docs/interfaces.md is the contract). Each subcommand's flags live with it:
//! `server::ServeArgs`, `client::FetchArgs`, `proxy::ProxyArgs`; the flow-control flags
//! they share are `transport::FlowControl`, the parsers of their numbers `args`.

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fetch_refuses_bad_times_with_a_clear_error() {
        use clap::Parser;
        for flag in [
            "--timeout-s",
            "--duration-s",
            "--race-default-delay-ms",
            "--race-max-delay-ms",
            "--quic-handshake-timeout-ms",
            "--quic-idle-timeout-ms",
            "--broken-for-s",
        ] {
            for v in ["inf", "nan", "1e300"] {
                let e = Cli::try_parse_from(["endpoint", "fetch", "--url", "https://127.0.0.1:9/", flag, v])
                    .unwrap_err()
                    .to_string();
                assert!(e.contains(flag) && e.contains("not a time"), "{flag} {v}: {e}");
            }
        }
        let e = Cli::try_parse_from(["endpoint", "fetch", "--url", "u", "--race-delay-factor", "inf"]).unwrap_err();
        assert!(e.to_string().contains("--race-delay-factor"));
    }
}
