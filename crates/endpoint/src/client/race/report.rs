//! The `race` object of the fetch JSON (docs/interfaces.md "Racing client"): how one race
//! went, and the racing client's memory before and after it. Data only, so that the fetch
//! report (`client::output`) can carry it without depending on the racing client itself.

use clap::ValueEnum;
use serde::Serialize;

use super::state::RaceState;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RaceInitial {
    /// h3 known from Alt-Svc and QUIC has worked on this network (TCP waits).
    QuicKnown,
    /// h3 known from Alt-Svc, QUIC never seen working here (TCP starts at once).
    AltSvcKnown,
}

/// The `race` object of the fetch JSON (times in ms from t0).
#[derive(Serialize, Debug, Clone, Default)]
pub struct RaceReport {
    pub initial: Option<RaceInitial>,
    pub quic_attempted: bool,
    /// Why TCP waited as it did, or why QUIC was not tried.
    pub rule: String,
    pub tcp_delay_ms: Option<f64>,
    pub quic_handshake_ms: Option<f64>,
    pub quic_failed_ms: Option<f64>,
    pub quic_error: Option<String>,
    /// QUIC connected, then a request on it failed (retried over TCP).
    pub quic_failed_after_handshake: bool,
    pub tcp_started_ms: Option<f64>,
    pub tcp_handshake_ms: Option<f64>,
    pub tcp_error: Option<String>,
    /// t0 to the moment the first request was given to TCP; null if TCP served nothing.
    pub time_to_fallback_ms: Option<f64>,
    pub requests: ProtoCounts,
    pub bytes: ProtoCounts,
    pub marked_broken_for_s: Option<f64>,
    pub srtt_cached_ms: Option<f64>,
    pub state_before: Option<RaceState>,
    pub state_after: Option<RaceState>,
}

#[derive(Serialize, Debug, Clone, Copy, Default)]
pub struct ProtoCounts {
    pub h3: u64,
    pub h2: u64,
}
