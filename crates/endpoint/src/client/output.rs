//! The fetch report: one JSON document per run (docs/interfaces.md "fetch output").

use serde::Serialize;

use super::{Mode, Proto};

#[derive(Serialize, Debug, Clone, Default)]
pub struct ObjectTiming {
    pub path: String,
    pub status: u16,
    pub bytes: u64,
    pub start_ms: f64,
    pub first_byte_ms: f64,
    pub end_ms: f64,
    /// The protocol that served this object (set by the racing client only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<&'static str>,
}

#[derive(Serialize, Debug, Clone, Copy, Default)]
pub struct ZeroRtt {
    pub attempted: bool,
    pub accepted: bool,
    /// `--zero-rtt` over h3: TLS 1.3 session tickets the warm-up connection received, and how
    /// many of them allow early data (client/tickets.rs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tickets: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub early_data_tickets: Option<u32>,
    /// `--zero-rtt` over h3: address-validation tokens (NEW_TOKEN) the warm-up connection
    /// received, and whether the measured connection presented one (client/tokens.rs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_presented: Option<bool>,
}

#[derive(Serialize, Debug, Clone)]
pub struct FetchReport {
    pub run_id: Option<String>,
    pub url: String,
    pub mode: Mode,
    pub protocol_requested: Proto,
    /// ALPN read from the TLS session (null when no connection was made).
    pub protocol: Option<String>,
    pub ok: bool,
    pub error: Option<String>,
    pub started_unix_ms: u64,
    pub plt_ms: f64,
    pub handshake_ms: f64,
    pub ttfb_ms: f64,
    pub bytes: u64,
    pub objects: Vec<ObjectTiming>,
    pub zero_rtt: ZeroRtt,
    pub local_addr: Option<String>,
    pub goodput: Vec<(f64, u64)>,
    /// Extra: goodput of the whole run in Mbit/s (bytes x 8 / plt).
    pub goodput_mbit: f64,
    /// Bulk mode with --duration-s: the transfer was cut at the deadline, not completed.
    pub stopped_early: bool,
    /// Where a failed fetch stopped (null when ok).
    pub failure_phase: Option<super::Phase>,
    /// `--proto race`: how the race went (client/race/report.rs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub race: Option<super::race::report::RaceReport>,
    /// `--migrate-at-ms`: whether and when the client moved (client/migrate.rs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub migration: Option<super::migrate::Migration>,
    /// Files the fetch wrote (`client_qlog`), named relative to the report's directory.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub artifacts: std::collections::BTreeMap<String, String>,
}

/// Exit codes: 0 ok, 1 any other error, 3 requested protocol could not be used.
pub const EXIT_OK: i32 = 0;
pub const EXIT_ERROR: i32 = 1;
pub const EXIT_PROTOCOL: i32 = 3;
