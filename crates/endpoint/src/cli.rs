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

/// The longest time any flag may give (a week: the scenario allows a broken mark of two days):
/// beyond it, or inf/nan, `Duration` would panic or a deadline overflow.
pub const MAX_SECONDS: f64 = 604_800.0;

/// `--x-s`: seconds, finite, 0 to a week (clap `value_parser`: a clear error, never a panic).
pub fn seconds(text: &str) -> Result<f64, String> {
    checked(text, 1.0, "seconds")
}

/// `--x-ms`: milliseconds, finite, 0 to a week.
pub fn millis(text: &str) -> Result<f64, String> {
    checked(text, 1000.0, "ms")
}

/// A multiplier of a measured time (the race's delay factor): finite, 0 to 1000.
pub fn factor(text: &str) -> Result<f64, String> {
    let v: f64 = text.trim().parse().map_err(|_| format!("{text:?} is not a number"))?;
    if v.is_finite() && (0.0..=1000.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{text} is not a factor in 0..=1000"))
    }
}

fn checked(text: &str, per_second: f64, unit: &str) -> Result<f64, String> {
    let v: f64 = text.trim().parse().map_err(|_| format!("{text:?} is not a number of {unit}"))?;
    let max = MAX_SECONDS * per_second;
    if v.is_finite() && (0.0..=max).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{text} is not a time in 0..={max} {unit} (a week)"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_finite_and_at_most_a_week() {
        assert_eq!(seconds("2.5"), Ok(2.5));
        assert_eq!(millis("300"), Ok(300.0));
        for bad in ["inf", "-inf", "nan", "NaN", "1e300", "-1", "604801", "x", ""] {
            assert!(seconds(bad).is_err(), "{bad}");
        }
        assert!(millis("604800001").is_err() && millis("604800000").is_ok());
        assert!(factor("1e300").is_err() && factor("nan").is_err() && factor("1.5").is_ok());
    }

    #[test]
    fn fetch_refuses_bad_times_with_a_clear_error() {
        use clap::Parser;
        for flag in ["--timeout-s", "--duration-s", "--race-default-delay-ms", "--race-max-delay-ms",
                     "--quic-handshake-timeout-ms", "--quic-idle-timeout-ms", "--broken-for-s"] {
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
