//! What the racing client remembers between runs of one session, and Chromium's rules that
//! read it: the TCP job's wait and the broken-alternative-service backoff. A reduced
//! HttpServerProperties: per origin, the h3 alternative service, the cached smoothed RTT
//! and its broken state; per network, whether QUIC ever worked.
//!
//! Chromium (net/, read for this file):
//! - `QuicSessionPool::GetTimeDelayForWaitingJob`: no wait unless QUIC has worked on this
//!   network (`has_quic_ever_worked_on_current_network_`); no wait if QUIC was recently
//!   broken for the origin; else 1.5 x the cached smoothed RTT, or 300 ms when none is cached.
//! - `HttpStreamFactory::JobController::MaybeSetWaitTimeForMainJob`: the wait is capped at
//!   `kMaxDelayTimeForMainJobSecs` = 3 s.
//! - `broken_alternative_services.cc` `ComputeBrokenAlternativeServiceExpirationDelay`
//!   (exponential backoff on the initial delay): initial delay x 2^count, count capped at
//!   `kBrokenDelayMaxShift` = 18, at most `kMaxBrokenAlternativeProtocolDelay` = 2 days;
//!   the count survives expiry ("recently broken") until QUIC is confirmed to work.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

const MAX_SHIFT: u32 = 18;
const MAX_BROKEN: Duration = Duration::from_secs(2 * 24 * 3600);

#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OriginState {
    /// An h3 alternative service is known for the origin (learnt from Alt-Svc).
    pub alt_svc_h3: bool,
    /// Smoothed RTT of the last QUIC connection to the origin, µs (ServerNetworkStats).
    pub srtt_us: Option<u64>,
    /// The alternative service is broken until this time (Unix ms); null = not broken.
    pub broken_until_unix_ms: Option<u64>,
    /// Times marked broken since QUIC last worked: > 0 = "recently broken".
    pub broken_count: u32,
}

#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RaceState {
    /// QUIC has completed a handshake on this network before.
    pub quic_worked: bool,
    pub origins: BTreeMap<String, OriginState>,
}

/// The constants a scenario may vary (defaults are Chromium's).
#[derive(Debug, Clone, Copy)]
pub struct Constants {
    pub delay_factor: f64,
    pub default_delay: Duration,
    pub max_delay: Duration,
    pub broken_for: Duration,
}

/// What one run does before its first request.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    /// No QUIC job: TCP at once.
    TcpOnly { why: String },
    /// QUIC at once, TCP after `tcp_delay` (or at once if QUIC fails first).
    Race { tcp_delay: Duration, rule: &'static str },
}

/// How long an alternative service marked broken for the `count`-th time (0-based) stays so.
pub fn broken_delay(count: u32, initial: Duration) -> Duration {
    let shift = count.min(MAX_SHIFT);
    initial.checked_mul(1u32 << shift).unwrap_or(MAX_BROKEN).min(MAX_BROKEN)
}

impl RaceState {
    /// A fresh state: the origin's h3 alternative service is known and, with `quic_known`,
    /// QUIC has worked on this network before (a returning user); no RTT cached.
    pub fn fresh(origin: &str, quic_known: bool) -> Self {
        let mut origins = BTreeMap::new();
        origins.insert(origin.to_string(), OriginState { alt_svc_h3: true, ..Default::default() });
        RaceState { quic_worked: quic_known, origins }
    }

    /// The state in `path`, or None when the file does not exist yet.
    pub fn load(path: &Path) -> Result<Option<Self>, String> {
        match crate::userfile::read_regular(path, "race state", crate::userfile::SMALL_FILE_LIMIT) {
            Ok(bytes) => {
                serde_json::from_slice(&bytes).map(Some).map_err(|e| format!("race state {}: {e}", path.display()))
            }
            Err(None) => Ok(None),
            Err(Some(e)) => Err(e),
        }
    }

    pub fn save(&self, path: &Path) -> Result<(), String> {
        let tmp = path.with_extension("tmp");
        let text = serde_json::to_string_pretty(self).expect("state serialises");
        std::fs::write(&tmp, text + "\n")
            .and_then(|_| std::fs::rename(&tmp, path))
            .map_err(|e| format!("writing race state {}: {e}", path.display()))
    }

    pub fn plan(&self, origin: &str, now_unix_ms: u64, c: &Constants) -> Plan {
        let Some(o) = self.origins.get(origin).filter(|o| o.alt_svc_h3) else {
            return Plan::TcpOnly { why: "no h3 alternative service known for the origin".into() };
        };
        if let Some(until) = o.broken_until_unix_ms.filter(|u| *u > now_unix_ms) {
            return Plan::TcpOnly {
                why: format!("alternative service broken for {:.1} s more", (until - now_unix_ms) as f64 / 1000.0),
            };
        }
        if !self.quic_worked {
            return Plan::Race { tcp_delay: Duration::ZERO, rule: "quic not known to work on this network" };
        }
        if o.broken_count > 0 {
            return Plan::Race { tcp_delay: Duration::ZERO, rule: "quic recently broken" };
        }
        let (delay, rule) = match o.srtt_us.filter(|s| *s > 0) {
            Some(srtt) => (Duration::from_secs_f64(c.delay_factor * srtt as f64 / 1e6), "factor x cached srtt"),
            None => (c.default_delay, "default (no cached srtt)"),
        };
        Plan::Race { tcp_delay: delay.min(c.max_delay), rule }
    }

    /// QUIC failed and TCP served: broken for the backoff delay. Returns that delay.
    pub fn mark_broken(&mut self, origin: &str, now_unix_ms: u64, c: &Constants) -> Duration {
        let o = self.origins.entry(origin.to_string()).or_default();
        let delay = broken_delay(o.broken_count, c.broken_for);
        o.broken_until_unix_ms = Some(now_unix_ms + delay.as_millis() as u64);
        o.broken_count += 1;
        delay
    }

    /// QUIC worked: remember it and the connection's smoothed RTT; the origin is no longer
    /// (recently) broken.
    pub fn confirm_quic(&mut self, origin: &str, srtt: Option<Duration>) {
        self.quic_worked = true;
        let o = self.origins.entry(origin.to_string()).or_default();
        o.alt_svc_h3 = true;
        o.broken_until_unix_ms = None;
        o.broken_count = 0;
        if let Some(s) = srtt {
            o.srtt_us = Some(s.as_micros() as u64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: Constants = Constants {
        delay_factor: 1.5,
        default_delay: Duration::from_millis(300),
        max_delay: Duration::from_secs(3),
        broken_for: Duration::from_secs(300),
    };

    #[test]
    fn tcp_waits_as_chromium_says() {
        let o = "198.18.2.2:4433";
        let mut s = RaceState::fresh(o, true);
        assert_eq!(
            s.plan(o, 0, &C),
            Plan::Race { tcp_delay: Duration::from_millis(300), rule: "default (no cached srtt)" }
        );
        s.confirm_quic(o, Some(Duration::from_millis(40)));
        assert_eq!(s.plan(o, 0, &C), Plan::Race { tcp_delay: Duration::from_millis(60), rule: "factor x cached srtt" });
        s.origins.get_mut(o).unwrap().srtt_us = Some(10_000_000);
        assert!(matches!(s.plan(o, 0, &C), Plan::Race { tcp_delay, .. } if tcp_delay == Duration::from_secs(3)));
        let unknown = RaceState::fresh(o, false);
        assert!(matches!(unknown.plan(o, 0, &C), Plan::Race { tcp_delay, .. } if tcp_delay.is_zero()));
        assert!(matches!(unknown.plan("other:1", 0, &C), Plan::TcpOnly { .. }));
    }

    #[test]
    fn broken_backs_off_and_recovers() {
        let o = "h:1";
        let mut s = RaceState::fresh(o, true);
        assert_eq!(s.mark_broken(o, 1_000, &C), Duration::from_secs(300));
        assert!(matches!(s.plan(o, 1_000 + 299_000, &C), Plan::TcpOnly { .. }));
        // expired but recently broken: QUIC is tried again, TCP does not wait
        assert_eq!(
            s.plan(o, 1_000 + 300_000, &C),
            Plan::Race { tcp_delay: Duration::ZERO, rule: "quic recently broken" }
        );
        assert_eq!(s.mark_broken(o, 0, &C), Duration::from_secs(600));
        assert_eq!(s.mark_broken(o, 0, &C), Duration::from_secs(1200));
        assert_eq!(broken_delay(40, Duration::from_secs(300)), MAX_BROKEN);
        s.confirm_quic(o, None);
        assert_eq!(s.origins[o].broken_count, 0);
        assert!(matches!(s.plan(o, 0, &C), Plan::Race { tcp_delay, .. } if tcp_delay == Duration::from_millis(300)));
    }
}
