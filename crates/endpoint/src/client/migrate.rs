//! A client that moves (`--migrate-at-ms`, `--migrate-to`): at that time after the
//! connection's first packet the QUIC client leaves its address for another, as a phone does
//! when its Wi-Fi goes and its LTE takes over (the testbed's handover takes the old path down
//! at the same point of the run). It binds a new UDP socket on the new address and hands it to
//! quinn (`Endpoint::rebind`): everything the connection sends from then on leaves from the
//! new address; the server sees its connection arrive from there and validates the path
//! (RFC 9000 §9). Whether it survives, and what the move cost, is read from the run.
//!
//! TCP cannot do this: its connection is its 4-tuple. The h2 client does what an application
//! does when the OS drops its connection with the interface: at the same time it closes the
//! old connection, connects again from the new address (TLS resumes the session) and asks
//! for the rest of every object still coming with a range request (client/h2.rs).

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use clap::Args;
use serde::Serialize;

use crate::transport::FlowControl;

#[derive(Args, Debug, Clone, Default)]
pub struct MigrateArgs {
    /// Move to `--migrate-to` this long after the first packet (ms): QUIC moves its
    /// connection; TCP reconnects from there and resumes.
    #[arg(long, value_parser = crate::args::millis, requires = "migrate_to")]
    pub migrate_at_ms: Option<f64>,
    /// The client's address on the path it moves to (one of its own addresses).
    #[arg(long, requires = "migrate_at_ms")]
    pub migrate_to: Option<IpAddr>,
}

/// What the move did, in the fetch's report.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Migration {
    /// When it was asked for, ms after the first packet.
    pub planned_at_ms: f64,
    /// When the client moved (null: it did not).
    pub at_ms: Option<f64>,
    /// Its local address after the move.
    pub to: Option<String>,
    /// Why it did not move.
    pub not_moved: Option<String>,
    /// TCP: when the new connection was ready (TCP and TLS handshakes from the new address).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reconnected_ms: Option<f64>,
    /// TCP: the range requests that resumed objects cut by the move.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub range_requests: Option<u32>,
}

impl Migration {
    /// A move asked for `at` after the first packet, not made yet.
    pub fn planned(at: Duration) -> Migration {
        Migration { planned_at_ms: at.as_secs_f64() * 1e3, ..Migration::default() }
    }
}

impl MigrateArgs {
    pub fn planned(&self) -> Option<(Duration, IpAddr)> {
        Some((Duration::from_secs_f64(self.migrate_at_ms? / 1e3), self.migrate_to?))
    }
}

/// Move `endpoint`'s connections at the planned time after `t0`; the task's result is what
/// happened (an endpoint dropped before the time: not moved).
pub fn schedule(
    endpoint: &quinn::Endpoint,
    args: &MigrateArgs,
    flow: &FlowControl,
    ecn: bool,
    t0: Instant,
) -> Option<tokio::task::JoinHandle<Migration>> {
    let (at, to) = args.planned()?;
    let endpoint = endpoint.clone();
    let flow = flow.clone();
    Some(tokio::spawn(async move {
        tokio::time::sleep_until((t0 + at).into()).await;
        let mut m = Migration::planned(at);
        let moved = crate::transport::udp_socket(SocketAddr::new(to, 0), &flow)
            .and_then(|socket| crate::ecn_switch::rebind(&endpoint, socket, ecn));
        match moved {
            Ok(()) => {
                m.at_ms = Some(t0.elapsed().as_secs_f64() * 1e3);
                m.to = endpoint.local_addr().ok().map(|a| a.to_string());
            }
            Err(e) => m.not_moved = Some(format!("binding a UDP socket on {to}: {e}")),
        }
        m
    }))
}

/// The move's outcome once the fetch ended: a move still waiting is reported as not made.
pub async fn outcome(task: Option<tokio::task::JoinHandle<Migration>>, args: &MigrateArgs) -> Option<Migration> {
    let task = task?;
    if task.is_finished() {
        return task.await.ok();
    }
    task.abort();
    let (at, _) = args.planned()?;
    Some(Migration { not_moved: Some("the fetch ended before the time to move".into()), ..Migration::planned(at) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        m: MigrateArgs,
    }

    #[test]
    fn a_move_needs_both_its_time_and_its_address() {
        let ok = Cli::try_parse_from(["x", "--migrate-at-ms", "1000", "--migrate-to", "198.18.1.3"]).unwrap();
        let (at, to) = ok.m.planned().unwrap();
        assert_eq!((at, to.to_string().as_str()), (Duration::from_secs(1), "198.18.1.3"));
        assert!(Cli::try_parse_from(["x", "--migrate-at-ms", "1000"]).is_err());
        assert!(Cli::try_parse_from(["x", "--migrate-to", "198.18.1.3"]).is_err());
        assert!(Cli::try_parse_from(["x", "--migrate-at-ms", "-1", "--migrate-to", "198.18.1.3"]).is_err());
        assert!(Cli::try_parse_from(["x", "--migrate-at-ms", "1", "--migrate-to", "wifi"]).is_err());
        assert!(Cli::try_parse_from(["x"]).unwrap().m.planned().is_none());
    }
}
