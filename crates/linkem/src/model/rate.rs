//! Serialization at the bottleneck: when does a packet's last bit leave the link?
//!
//! Fixed rate: a packet of L IP bytes occupies the link for L*8/rate seconds; it starts
//! when it arrives or when the previous packet finished, whichever is later.
//!
//! Trace (mahimahi semantics): the link may deliver up to 1500 bytes at each opportunity.
//! Bytes of one opportunity are shared in order by the packets queued at that moment: a
//! 500-byte packet leaves 1000 bytes of its opportunity for the next packet, but only if
//! that packet had arrived by the opportunity's time; otherwise the rest is wasted (an idle
//! link does not bank capacity). A packet larger than what is left continues in the next
//! opportunities. The packet departs at the opportunity that carries its last byte.
//!
//! Each packet's transmission also has a *start*: when its first bit goes onto the link (the
//! fixed rate's start, the opportunity that carries a trace packet's first byte). start −
//! arrival is the time it waited in the buffer, its sojourn (`crate::sojourn`).

use crate::trace::{Trace, OPPORTUNITY_BYTES};

/// When a packet's first bit went onto the link and when its last bit left (ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transmission {
    pub start_ns: u64,
    pub departure_ns: u64,
}

#[derive(Debug, Clone)]
pub enum Serializer {
    Fixed(FixedRate),
    Trace(TraceRate),
}

impl Serializer {
    /// Departure time (ns) of a packet of `len` bytes arriving at `arrival_ns`.
    /// Calls must come in arrival order.
    #[inline]
    pub fn departure(&mut self, arrival_ns: u64, len: u32) -> u64 {
        self.transmit(arrival_ns, len).departure_ns
    }

    /// Start and departure of a packet of `len` bytes arriving at `arrival_ns`; the start is
    /// never before the arrival. Calls must come in arrival order.
    #[inline]
    pub fn transmit(&mut self, arrival_ns: u64, len: u32) -> Transmission {
        match self {
            Serializer::Fixed(f) => f.transmit(arrival_ns, len),
            Serializer::Trace(t) => t.transmit(arrival_ns, len),
        }
    }
}

#[derive(Debug, Clone)]
pub struct FixedRate {
    /// Picoseconds per byte; integer picoseconds keep long runs free of float drift.
    ps_per_byte: f64,
    link_free_ps: u64,
}

impl FixedRate {
    pub fn new(rate_mbit: f64) -> Self {
        FixedRate { ps_per_byte: 8.0e6 / rate_mbit, link_free_ps: 0 }
    }

    #[inline]
    pub fn departure(&mut self, arrival_ns: u64, len: u32) -> u64 {
        self.transmit(arrival_ns, len).departure_ns
    }

    #[inline]
    pub fn transmit(&mut self, arrival_ns: u64, len: u32) -> Transmission {
        let start = self.link_free_ps.max(arrival_ns * 1000);
        self.link_free_ps = start + (len as f64 * self.ps_per_byte).round() as u64;
        // floor: start >= arrival * 1000 ps, so start_ns >= arrival_ns
        Transmission { start_ns: start / 1000, departure_ns: self.link_free_ps.div_ceil(1000) }
    }
}

#[derive(Debug, Clone)]
pub struct TraceRate {
    trace: Trace,
    /// Absolute index of the opportunity being consumed.
    k: u64,
    time_ns: u64,
    left: u32,
    started: bool,
}

impl TraceRate {
    pub fn new(trace: Trace) -> Self {
        TraceRate { trace, k: 0, time_ns: 0, left: 0, started: false }
    }

    pub fn departure(&mut self, arrival_ns: u64, len: u32) -> u64 {
        self.transmit(arrival_ns, len).departure_ns
    }

    pub fn transmit(&mut self, arrival_ns: u64, len: u32) -> Transmission {
        let usable = self.started && self.left > 0 && self.time_ns >= arrival_ns;
        if !usable {
            let mut k = self.trace.first_at_or_after(arrival_ns);
            if self.started && k <= self.k {
                k = self.k + 1; // an opportunity is used at most once
            }
            self.open(k);
        }
        // the opportunity carrying the first byte; at or after the arrival either way
        let start_ns = self.time_ns;
        let mut need = len.max(1);
        loop {
            let take = need.min(self.left);
            need -= take;
            self.left -= take;
            if need == 0 {
                break;
            }
            self.open(self.k + 1);
        }
        self.started = true;
        Transmission { start_ns, departure_ns: self.time_ns }
    }

    fn open(&mut self, k: u64) {
        self.k = k;
        self.time_ns = self.trace.opportunity_ns(k);
        self.left = OPPORTUNITY_BYTES;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_rate_serializes_back_to_back() {
        let mut r = FixedRate::new(12.0); // 1500 bytes = 1 ms
        assert_eq!(r.departure(0, 1500), 1_000_000);
        assert_eq!(r.departure(0, 1500), 2_000_000); // queued behind the first
        assert_eq!(r.departure(500_000, 750), 2_500_000);
        // idle gap: starts at arrival
        assert_eq!(r.departure(10_000_000, 1500), 11_000_000);
    }

    #[test]
    fn fixed_rate_starts_when_the_link_frees() {
        let mut r = FixedRate::new(12.0);
        assert_eq!(r.transmit(0, 1500), Transmission { start_ns: 0, departure_ns: 1_000_000 });
        // waits for the first to finish: 0.7 ms in the buffer
        assert_eq!(r.transmit(300_000, 1500), Transmission { start_ns: 1_000_000, departure_ns: 2_000_000 });
        // the link is idle when it arrives: no wait
        assert_eq!(r.transmit(5_000_000, 750), Transmission { start_ns: 5_000_000, departure_ns: 5_500_000 });
    }

    #[test]
    fn trace_starts_at_the_opportunity_of_the_first_byte() {
        let ms = 1_000_000;
        let mut t = TraceRate::new(Trace::from_times(vec![1, 2, 3, 4]));
        // waits for the 1 ms opportunity, shares it, then spills into 2 ms
        assert_eq!(t.transmit(0, 1000), Transmission { start_ns: ms, departure_ns: ms });
        assert_eq!(t.transmit(0, 1000), Transmission { start_ns: ms, departure_ns: 2 * ms });
        // the rest of 2 ms is usable by a packet that arrived by then
        assert_eq!(t.transmit(ms, 100), Transmission { start_ns: 2 * ms, departure_ns: 2 * ms });
    }

    #[test]
    fn fixed_rate_long_run_has_no_drift() {
        let mut r = FixedRate::new(100.0);
        let mut d = 0;
        for _ in 0..1_000_000 {
            d = r.departure(0, 1500);
        }
        // 1e6 * 1500 B * 8 / 100e6 = 120 s exactly
        assert_eq!(d, 120_000_000_000);
    }

    #[test]
    fn trace_shares_opportunity_bytes_in_order() {
        let ms = 1_000_000;
        let mut t = TraceRate::new(Trace::from_times(vec![1, 2, 3, 4]));
        // two 500-byte packets waiting at t=0 share the 1 ms opportunity
        assert_eq!(t.departure(0, 500), ms);
        assert_eq!(t.departure(0, 500), ms);
        // 1000 bytes: 500 left at 1 ms, the rest at 2 ms
        assert_eq!(t.departure(0, 1000), 2 * ms);
        // arrives after the 2 ms opportunity: its leftover is wasted, uses 3 ms
        assert_eq!(t.departure(2 * ms + 1, 100), 3 * ms);
        // wraps: period 4 ms, next opportunities at 4, 5, 6 ...
        assert_eq!(t.departure(3 * ms + 1, 1500), 4 * ms);
        assert_eq!(t.departure(3 * ms + 1, 1500), 5 * ms);
        assert_eq!(t.departure(3 * ms + 1, 3000), 7 * ms);
    }

    #[test]
    fn trace_rate_matches_mean() {
        // 1 opportunity per ms => 12 Mbit/s; 10 s of saturating 1500-byte packets
        let mut t = TraceRate::new(Trace::from_times((1..=100).collect()));
        let mut last = 0;
        for _ in 0..10_000 {
            last = t.departure(0, 1500);
        }
        assert_eq!(last, 10_000 * 1_000_000);
    }
}
