//! Re-phasing trace links between runs (`--phase-file`, SIGUSR2).
//!
//! A trace link's time line starts at linkem's start, so two runs of one cell started a
//! minute apart would meet different stretches of the trace. A request re-anchors both
//! directions: the first packet to arrive, in either direction, after the request sets the
//! origin O (its arrival time), and from then on a packet arriving at a meets the trace at
//! (a − O) + phase (`model::rate::TraceRate::rephase`). Each run can thus start at a chosen
//! trace phase without restarting linkem.
//!
//! The writer (linkem's main thread) takes the signal, reads the phase and publishes the
//! request here; each direction thread looks at the request count once per packet (one
//! relaxed load, no lock), and only when it changed takes the request (a try-lock: it
//! never waits for the writer) and anchors it, the first direction to get there setting
//! the origin for both.

use crate::trace::MAX_TIMESTAMP_MS;
use serde_json::{json, Value};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, TryLockError};

/// A phase file holds one number; anything longer is not one.
const PHASE_FILE_LIMIT: u64 = 4096;

/// The origin of a request no packet has anchored yet.
const UNANCHORED: u64 = u64::MAX;

/// The phase (ms) written in a phase file: one number ≥ 0, at most the longest trace.
pub fn parse_phase_ms(text: &str) -> Result<f64, String> {
    let text = text.trim();
    let phase: f64 = text.parse().map_err(|_| format!("expected one number of milliseconds, got {text:?}"))?;
    if !phase.is_finite() || phase < 0.0 {
        return Err(format!("expected a phase >= 0 ms, got {text:?}"));
    }
    if phase > MAX_TIMESTAMP_MS as f64 {
        return Err(format!("{phase} ms is beyond the {MAX_TIMESTAMP_MS} ms (30 days) a trace may last"));
    }
    Ok(phase)
}

/// The phase (ms) in the file at `path`; errors name the file.
pub fn read_phase_file(path: &Path) -> Result<f64, String> {
    crate::userfile::read_text(path, PHASE_FILE_LIMIT)
        .and_then(|text| parse_phase_ms(&text))
        .map_err(|e| format!("phase file {}: {e}", path.display()))
}

/// One accepted request.
#[derive(Debug)]
struct Request {
    /// Requests accepted up to this one (0: linkem's start, anchored at time 0, phase 0).
    generation: u64,
    phase_ms: f64,
    phase_ns: u64,
    /// When the writer took it (linkem's clock): packets that arrived before it belong to
    /// the run before and neither anchor it nor move to the new phase.
    requested_ns: u64,
    /// Set once, by the first packet (of either direction) after the request.
    origin_ns: AtomicU64,
}

impl Request {
    /// The origin, set to `arrival_ns` if no packet has set it yet.
    fn anchor(&self, arrival_ns: u64) -> u64 {
        match self.origin_ns.compare_exchange(UNANCHORED, arrival_ns, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => arrival_ns,
            Err(origin) => origin,
        }
    }

    fn anchored(&self) -> bool {
        self.origin_ns.load(Ordering::Acquire) != UNANCHORED
    }
}

/// The re-phase requests, shared by the writer and the direction threads.
#[derive(Debug)]
pub struct TracePhase {
    /// `current`'s generation, readable without the lock: the per-packet check.
    generation: AtomicU64,
    current: Mutex<Arc<Request>>,
    /// Requests refused (an unreadable file, not a phase, no `--phase-file`).
    rejected: AtomicU64,
}

impl Default for TracePhase {
    fn default() -> Self {
        let start =
            Request { generation: 0, phase_ms: 0.0, phase_ns: 0, requested_ns: 0, origin_ns: AtomicU64::new(0) };
        TracePhase { generation: AtomicU64::new(0), current: Mutex::new(Arc::new(start)), rejected: AtomicU64::new(0) }
    }
}

impl TracePhase {
    /// Accept a request for `phase_ms`, taken at `now_ns`: the directions move to it at their
    /// first packet that arrives from now on.
    pub fn request(&self, phase_ms: f64, now_ns: u64) {
        let mut current = self.lock();
        let generation = current.generation + 1;
        let phase_ns = (phase_ms * 1e6).round() as u64;
        let origin_ns = AtomicU64::new(UNANCHORED);
        *current = Arc::new(Request { generation, phase_ms, phase_ns, requested_ns: now_ns, origin_ns });
        // Under the lock, after the swap: a direction that sees the new count finds the
        // new request when it takes the lock.
        self.generation.store(generation, Ordering::Release);
    }

    /// Requests accepted so far (0: none): which run a packet belongs to
    /// (`crate::handover`).
    #[inline]
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    pub fn reject(&self) {
        self.rejected.fetch_add(1, Ordering::Relaxed);
    }

    /// The stats document's `trace_phase`: requests accepted, the last one's phase, whether
    /// a packet has anchored it (before any request: 0, 0.0, true: trace time is linkem's
    /// clock), and requests refused.
    pub fn json(&self) -> Value {
        let current = self.lock().clone();
        json!({
            "requests": current.generation,
            "phase_ms": current.phase_ms,
            "anchored": current.anchored(),
            "rejected": self.rejected.load(Ordering::Relaxed),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Arc<Request>> {
        self.current.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One direction's view of the requests: which it has moved to.
#[derive(Debug)]
pub struct PhaseFollower {
    shared: Arc<TracePhase>,
    /// The generation this direction runs on.
    seen: u64,
    /// A newer request taken from the writer but not yet met by a packet after it.
    pending: Option<Arc<Request>>,
}

impl PhaseFollower {
    /// The requests accepted so far (`TracePhase::generation`).
    #[inline]
    pub fn generation(&self) -> u64 {
        self.shared.generation()
    }

    pub fn new(shared: Arc<TracePhase>) -> Self {
        PhaseFollower { shared, seen: 0, pending: None }
    }

    /// Per packet, in arrival order: `(origin_ns, phase_ns)` when this packet is the first
    /// of this direction on a new request (re-phase the link before timing it), else None.
    #[inline]
    pub fn follow(&mut self, arrival_ns: u64) -> Option<(u64, u64)> {
        // Relaxed: the request itself is read under the lock, which orders it.
        let generation = self.shared.generation.load(Ordering::Relaxed);
        if generation == self.seen {
            return None;
        }
        self.catch_up(generation, arrival_ns)
    }

    #[cold]
    fn catch_up(&mut self, generation: u64, arrival_ns: u64) -> Option<(u64, u64)> {
        if self.pending.as_ref().is_none_or(|r| r.generation < generation) {
            self.pending = Some(self.take_current()?);
        }
        let request = self.pending.take()?;
        if arrival_ns < request.requested_ns {
            self.pending = Some(request);
            return None;
        }
        self.seen = request.generation;
        Some((request.anchor(arrival_ns), request.phase_ns))
    }

    /// The writer holds the lock only to swap a request in: never wait for it (this is a
    /// real-time thread); the next packet tries again.
    fn take_current(&self) -> Option<Arc<Request>> {
        match self.shared.current.try_lock() {
            Ok(current) => Some(current.clone()),
            Err(TryLockError::Poisoned(e)) => Some(e.into_inner().clone()),
            Err(TryLockError::WouldBlock) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_phase_is_one_number_of_milliseconds_at_least_zero() {
        assert_eq!(parse_phase_ms("0"), Ok(0.0));
        assert_eq!(parse_phase_ms(" 1250.5\n"), Ok(1250.5));
        assert_eq!(parse_phase_ms("3e3"), Ok(3000.0));
        for bad in ["", "x", "-1", "1 2", "nan", "inf", "1ms", "1e20"] {
            assert!(parse_phase_ms(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_phase_file_is_read_when_asked() {
        let dir = std::env::temp_dir().join(format!("linkem-phase-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("phase");
        assert!(read_phase_file(&f).unwrap_err().contains("phase file"));
        std::fs::write(&f, "42.5\n").unwrap();
        assert_eq!(read_phase_file(&f), Ok(42.5));
        std::fs::write(&f, "-3\n").unwrap();
        assert!(read_phase_file(&f).unwrap_err().contains(">= 0"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_first_packet_after_a_request_anchors_both_directions() {
        let shared = Arc::new(TracePhase::default());
        let (mut up, mut down) = (PhaseFollower::new(shared.clone()), PhaseFollower::new(shared.clone()));
        assert_eq!(up.follow(5), None); // no request: the start's phase
        shared.request(2.5, 1_000);
        assert_eq!(shared.json()["anchored"], false);
        assert_eq!(up.follow(900), None); // arrived before the request: the run before's
        assert_eq!(down.follow(2_000), Some((2_000, 2_500_000)));
        assert_eq!(shared.json()["anchored"], true);
        // the other direction takes the same origin, whenever its first packet comes
        assert_eq!(up.follow(1_500), Some((2_000, 2_500_000)));
        assert_eq!(up.follow(3_000), None);
        assert_eq!(down.follow(3_000), None);
    }

    #[test]
    fn a_new_request_replaces_the_last_one() {
        let shared = Arc::new(TracePhase::default());
        let mut up = PhaseFollower::new(shared.clone());
        shared.request(1.0, 100);
        shared.request(7.0, 200); // before any packet: the first one is never anchored
        assert_eq!(up.follow(300), Some((300, 7_000_000)));
        shared.request(0.0, 400);
        assert_eq!(up.follow(500), Some((500, 0)));
        shared.reject();
        let j = shared.json();
        assert_eq!(j, serde_json::json!({"requests": 3, "phase_ms": 0.0, "anchored": true, "rejected": 1}));
    }

    #[test]
    fn before_any_request_the_trace_runs_from_the_start() {
        let j = TracePhase::default().json();
        assert_eq!(j, serde_json::json!({"requests": 0, "phase_ms": 0.0, "anchored": true, "rejected": 0}));
    }
}
