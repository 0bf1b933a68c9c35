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
//! Trace time: the trace starts at linkem's start, unless re-phased (`TraceRate::rephase`,
//! `crate::phase`): then a packet arriving at clock time a meets the trace at trace time
//! (a − origin) + phase, so that runs started at different times meet the same stretch.
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

    /// The state a `transmit` changes, to undo it with `restore` (a packet an AQM dropped
    /// after its transmission was planned takes no time on the link).
    #[inline]
    pub fn checkpoint(&self) -> Checkpoint {
        match self {
            Serializer::Fixed(f) => Checkpoint::Fixed(f.link_free_ps),
            Serializer::Trace(t) => Checkpoint::Trace(t.k, t.time_ns, t.left, t.started),
        }
    }

    #[inline]
    pub fn restore(&mut self, c: Checkpoint) {
        match (self, c) {
            (Serializer::Fixed(f), Checkpoint::Fixed(free)) => f.link_free_ps = free,
            (Serializer::Trace(t), Checkpoint::Trace(k, time_ns, left, started)) => {
                t.k = k;
                t.time_ns = time_ns;
                t.left = left;
                t.started = started;
            }
            _ => debug_assert!(false, "a checkpoint of another serializer"),
        }
    }

    /// Re-anchor a trace (see `TraceRate::rephase`); a fixed rate has no phase to change.
    pub fn rephase(&mut self, origin_ns: u64, phase_ns: u64) {
        if let Serializer::Trace(t) = self {
            t.rephase(origin_ns, phase_ns);
        }
    }
}

/// See `Serializer::checkpoint`.
#[derive(Debug, Clone, Copy)]
pub enum Checkpoint {
    Fixed(u64),
    Trace(u64, u64, u32, bool),
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
    /// Clock time (ns) at which trace time is `phase_ns`: clock time t is trace time
    /// (t − origin) + phase. 0 and 0 until re-phased: trace time is linkem's clock.
    origin_ns: u64,
    /// Within one period.
    phase_ns: u64,
    /// No opportunity of the current phase before this clock time is used: the packets
    /// timed on the previous phase leave first (the link stays FIFO across a re-phase, as
    /// the release queues and the buffer expect), and the instant of the last of them is
    /// not served twice.
    not_before_ns: u64,
    /// Absolute index (on the trace's own time line) of the opportunity being consumed.
    k: u64,
    /// Its clock time.
    time_ns: u64,
    left: u32,
    started: bool,
}

impl TraceRate {
    pub fn new(trace: Trace) -> Self {
        TraceRate { trace, origin_ns: 0, phase_ns: 0, not_before_ns: 0, k: 0, time_ns: 0, left: 0, started: false }
    }

    pub fn departure(&mut self, arrival_ns: u64, len: u32) -> u64 {
        self.transmit(arrival_ns, len).departure_ns
    }

    pub fn transmit(&mut self, arrival_ns: u64, len: u32) -> Transmission {
        let usable = self.started && self.left > 0 && self.time_ns >= arrival_ns;
        if !usable {
            let mut k = self.trace.first_at_or_after(self.trace_time(arrival_ns.max(self.not_before_ns)));
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

    /// From now on, clock time `origin_ns` is trace time `phase_ns` (taken within the
    /// period). The opportunity being consumed is dropped with its bytes left: a run on the
    /// new phase inherits no capacity from the old one. Packets already timed keep their
    /// times, and later ones are served only after the last of them has left.
    pub fn rephase(&mut self, origin_ns: u64, phase_ns: u64) {
        if self.started {
            self.not_before_ns = self.not_before_ns.max(self.time_ns + 1);
        }
        self.origin_ns = origin_ns;
        // a loaded trace's period is > 0; checked all the same, this runs in a direction thread
        self.phase_ns = phase_ns.checked_rem(self.trace.period_ms() * 1_000_000).unwrap_or(0);
        self.k = 0;
        self.time_ns = 0;
        self.left = 0;
        self.started = false;
    }

    /// Trace time of clock time `t_ns`; a time before the origin (an arrival stamped before
    /// the other direction's anchoring packet) counts as the origin.
    #[inline]
    fn trace_time(&self, t_ns: u64) -> u64 {
        t_ns.saturating_sub(self.origin_ns) + self.phase_ns
    }

    /// Clock time of trace time `t_ns`, which is never before the phase (opportunities are
    /// looked up from trace times at or after it).
    #[inline]
    fn clock_time(&self, t_ns: u64) -> u64 {
        t_ns - self.phase_ns + self.origin_ns
    }

    fn open(&mut self, k: u64) {
        self.k = k;
        self.time_ns = self.clock_time(self.trace.opportunity_ns(k));
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

    /// Departures of `packets` (arrival, bytes), each minus `origin_ns`.
    fn departures_from(t: &mut TraceRate, origin_ns: u64, packets: &[(u64, u32)]) -> Vec<u64> {
        packets.iter().map(|&(a, len)| t.departure(origin_ns + a, len) - origin_ns).collect()
    }

    #[test]
    fn a_rephased_trace_restarts_at_its_origin() {
        let ms = 1_000_000;
        let trace = Trace::from_times(vec![1, 1, 3, 4, 7, 10]);
        // several periods: shared opportunities, spills, idle gaps, a wrap
        let packets = [(0, 500), (0, 1500), (ms, 3000), (5 * ms, 100), (9 * ms, 1500), (23 * ms, 40), (23 * ms, 1500)];
        let mut fresh = TraceRate::new(trace.clone());
        let mut rephased = TraceRate::new(trace);
        // an earlier run, over by 37 ms, leaving 1000 bytes of an opportunity
        assert_eq!(rephased.departure(30 * ms, 500), 31 * ms);
        rephased.rephase(37 * ms, 0);
        let want = departures_from(&mut fresh, 0, &packets);
        assert_eq!(departures_from(&mut rephased, 37 * ms, &packets), want);
        // without the re-phase, 37 ms meets the trace at 7 ms of its period
        let mut unphased = TraceRate::new(Trace::from_times(vec![1, 1, 3, 4, 7, 10]));
        assert_ne!(departures_from(&mut unphased, 37 * ms, &packets), want);
    }

    #[test]
    fn a_phase_starts_at_the_first_opportunity_at_or_after_it() {
        let ms = 1_000_000;
        let origin = 100 * ms;
        let first_departure = |phase_ms: u64, arrival_ms: u64| {
            let mut t = TraceRate::new(Trace::from_times(vec![2, 4, 10]));
            t.rephase(origin, phase_ms * ms);
            t.departure(origin + arrival_ms * ms, 100)
        };
        // trace time 5 ms: the 10 ms opportunity, 5 ms after the origin
        assert_eq!(first_departure(5, 0), origin + 5 * ms);
        assert_eq!(first_departure(4, 0), origin); // an opportunity at the phase itself
        assert_eq!(first_departure(25, 0), origin + 5 * ms); // phases wrap over the period
        assert_eq!(first_departure(5, 3), origin + 5 * ms); // trace time 8 ms: still the 10
        assert_eq!(first_departure(5, 6), origin + 7 * ms); // 11 ms: 12 ms, the next period's 2

        // fractional phases: trace time 1.5 ms, the 2 ms opportunity
        let mut t = TraceRate::new(Trace::from_times(vec![2, 4, 10]));
        t.rephase(origin, 1_500_000);
        assert_eq!(t.departure(origin, 100), origin + ms / 2);
    }

    #[test]
    fn a_rephase_drops_the_bytes_left_of_an_opportunity() {
        let ms = 1_000_000;
        let run = |rephase: bool| {
            let mut t = TraceRate::new(Trace::from_times((1..=10).collect()));
            assert_eq!(t.departure(0, 500), ms); // 1000 bytes left of the 1 ms opportunity
            if rephase {
                t.rephase(0, 0); // the same time line, the opportunity state reset
            }
            (t.departure(ms / 2, 1000), t.departure(ms / 2, 1000))
        };
        // without: the next packet shares the leftover; with: the 1 ms opportunity is gone
        // and the 2 ms one is whole
        assert_eq!(run(false), (ms, 2 * ms));
        assert_eq!(run(true), (2 * ms, 3 * ms));
    }

    #[test]
    fn packets_after_a_rephase_leave_after_those_before_it() {
        let ms = 1_000_000;
        let mut t = TraceRate::new(Trace::from_times((1..=10).collect()));
        for _ in 0..5 {
            t.departure(0, 1500); // 1 .. 5 ms
        }
        // the new phase's opportunities are at 0.4 ms, 1.4 ms ...: the first after 5 ms
        t.rephase(ms, 600_000);
        assert_eq!(t.transmit(ms, 1500), Transmission { start_ns: 5_400_000, departure_ns: 5_400_000 });
        // an idle link: the new phase from the arrival on
        assert_eq!(t.departure(20 * ms, 100), 20_400_000);
    }

    #[test]
    fn a_fixed_rate_ignores_rephasing() {
        let mut plain = Serializer::Fixed(FixedRate::new(12.0));
        let mut asked = Serializer::Fixed(FixedRate::new(12.0));
        let packets = [(0, 1500), (300_000, 1500), (5_000_000, 750)];
        for (i, &(a, len)) in packets.iter().enumerate() {
            if i == 1 {
                asked.rephase(200_000, 7_000_000);
            }
            assert_eq!(asked.transmit(a, len), plain.transmit(a, len));
        }
    }
}
