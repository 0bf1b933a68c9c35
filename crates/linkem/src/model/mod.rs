//! The emulated link of one direction, as pure logic: given a packet and the time it
//! arrived, decide whether it is dropped (and why) or when it is released.
//!
//! Order of stages, as on a path with a middlebox in front of a bottleneck:
//! middlebox -> random loss -> drop-tail buffer -> serialization (rate or trace) ->
//! propagation delay + jitter -> optional reordering.

pub mod buffer;
pub mod delay;
pub mod loss;
pub mod middlebox;
pub mod quic;
pub mod rate;
pub mod reorder;
pub mod schedule;
pub mod tcp_rst;

use crate::config::{DirectionProfile, RateSpec};
use crate::packet::PacketInfo;
use crate::rng::Rng;
use buffer::DropTailBuffer;
use delay::DelayLine;
use loss::LossModel;
use middlebox::{FlowMiddlebox, MbVerdict, Middlebox};
use rate::{FixedRate, Serializer, TraceRate, Transmission};
use reorder::Reorder;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    Middlebox,
    Loss,
    Buffer,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Drop(DropReason),
    Release {
        /// When the verdict ACCEPT is due (ns on the emulator's clock).
        at_ns: u64,
        /// When its first bit went onto the link: start_ns - arrival is its sojourn in the
        /// buffer (`crate::sojourn`).
        start_ns: u64,
        /// When the last bit left the bottleneck; at_ns - departure_ns - delay = jitter.
        departure_ns: u64,
        /// Released ahead of the packets before it (see `reorder`).
        reordered: bool,
        /// The middlebox rewrote it into a RST (`tcp_rst::rewrite`); the verdict must carry
        /// the rewritten bytes.
        rst: bool,
    },
}

pub struct Link {
    middlebox: Middlebox,
    loss: LossModel,
    buffer: DropTailBuffer,
    serializer: Serializer,
    delay: DelayLine,
    reorder: Option<Reorder>,
    /// One stream per random process, so changing one model (say, jitter) leaves the
    /// others' decisions for the same seed unchanged.
    loss_rng: Rng,
    jitter_rng: Rng,
    reorder_rng: Rng,
}

impl Link {
    /// `seed` is the direction's seed; the models derive their own streams from it.
    pub fn new(profile: &DirectionProfile, seed: u64) -> Self {
        let serializer = match &profile.rate {
            RateSpec::Fixed { rate_mbit } => Serializer::Fixed(FixedRate::new(*rate_mbit)),
            RateSpec::Trace { trace, .. } => Serializer::Trace(TraceRate::new(trace.clone())),
        };
        Link {
            middlebox: Middlebox::new(&profile.middlebox, Rng::derive(seed, 4)),
            loss: LossModel::new(&profile.loss),
            buffer: DropTailBuffer::new(profile.buffer),
            serializer,
            delay: DelayLine::new(profile.delay_ms, profile.jitter_ms, profile.jitter_distribution),
            reorder: profile.reorder.as_ref().map(Reorder::new),
            loss_rng: Rng::derive(seed, 1),
            jitter_rng: Rng::derive(seed, 2),
            reorder_rng: Rng::derive(seed, 3),
        }
    }

    pub fn delay_ns(&self) -> u64 {
        self.delay.delay_ns()
    }

    /// Re-anchor a trace serializer: clock time `origin_ns` becomes trace time `phase_ns`
    /// (`rate::TraceRate::rephase`; `crate::phase`). A fixed rate is unaffected.
    pub fn rephase(&mut self, origin_ns: u64, phase_ns: u64) {
        self.serializer.rephase(origin_ns, phase_ns);
    }

    /// Decide a packet's fate. Calls must come in arrival order (`now_ns` non-decreasing).
    /// `bytes` is the copied prefix of the packet (the middlebox reads headers in it), `mb`
    /// the flow's middlebox state.
    #[inline]
    pub fn on_arrival(
        &mut self,
        now_ns: u64,
        pkt: &PacketInfo,
        bytes: &[u8],
        udp_seen_in_flow: u64,
        mb: &mut FlowMiddlebox,
    ) -> Outcome {
        let (pkt, rst) = match self.middlebox.decide(now_ns, pkt, bytes, udp_seen_in_flow, mb) {
            MbVerdict::Drop => return Outcome::Drop(DropReason::Middlebox),
            MbVerdict::Pass => (*pkt, false),
            // The RST crosses the bottleneck with its own (header-only) size.
            MbVerdict::RewriteRst { ip_len } => (PacketInfo { ip_len, ..*pkt }, true),
        };
        let pkt = &pkt;
        if self.loss.lose(&mut self.loss_rng) {
            return Outcome::Drop(DropReason::Loss);
        }
        self.buffer.drain(now_ns);
        if !self.buffer.has_room(pkt.ip_len) {
            return Outcome::Drop(DropReason::Buffer);
        }
        let Transmission { start_ns, departure_ns } = self.serializer.transmit(now_ns, pkt.ip_len);
        self.buffer.push(departure_ns, pkt.ip_len);
        let scheduled = self.delay.release(departure_ns, &mut self.jitter_rng);
        match self.reorder.as_ref().and_then(|r| r.early_release(scheduled, now_ns, &mut self.reorder_rng)) {
            Some(at_ns) => Outcome::Release { at_ns, start_ns, departure_ns, reordered: true, rst },
            None => Outcome::Release { at_ns: scheduled, start_ns, departure_ns, reordered: false, rst },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::LinkConfig;
    use crate::packet::FlowKey;
    use std::path::Path;

    fn link(toml: &str) -> Link {
        let c = LinkConfig::parse(toml, "t.toml", Path::new(".")).unwrap();
        Link::new(&c.up, 1)
    }

    fn pkt(len: u32) -> PacketInfo {
        let a = "198.18.1.2".parse().unwrap();
        PacketInfo { ip_len: len, key: FlowKey { proto: 6, src: a, dst: a, sport: 1, dport: 2 } }
    }

    #[test]
    fn rate_plus_delay() {
        let mut l = link("rate_mbit = 12\ndelay_ms = 20\n");
        let o = l.on_arrival(0, &pkt(1500), &[], 0, &mut Default::default());
        assert_eq!(
            o,
            Outcome::Release { at_ns: 21_000_000, start_ns: 0, departure_ns: 1_000_000, reordered: false, rst: false }
        );
    }

    #[test]
    fn reordered_packets_overtake_only_by_ahead() {
        // 12 Mbit (1 ms per packet), 10 ms delay, every 4th-ish packet 2.5 ms ahead
        let mut l = link("rate_mbit = 12\ndelay_ms = 10\n[up.reorder]\nprobability = 0.25\nahead_ms = 2.5\n");
        let mut normal_prev = 0;
        let mut reordered_prev = 0;
        let mut n_re = 0;
        for i in 0..10_000u64 {
            match l.on_arrival(i * 1_000_000, &pkt(1500), &[], 0, &mut Default::default()) {
                Outcome::Release { at_ns, departure_ns, reordered, .. } => {
                    let scheduled = departure_ns + 10_000_000;
                    if reordered {
                        n_re += 1;
                        assert_eq!(at_ns, scheduled - 2_500_000);
                        assert!(at_ns >= reordered_prev);
                        reordered_prev = at_ns;
                    } else {
                        assert_eq!(at_ns, scheduled);
                        assert!(at_ns >= normal_prev);
                        normal_prev = at_ns;
                    }
                }
                o => panic!("{o:?}"),
            }
        }
        assert!((n_re as f64 / 10_000.0 - 0.25).abs() < 0.02);
    }

    #[test]
    fn loss_decisions_do_not_depend_on_jitter() {
        let losses = |toml: &str| -> Vec<bool> {
            let mut l = link(toml);
            (0..2000u64)
                .map(|i| {
                    matches!(
                        l.on_arrival(i * 1_000_000, &pkt(100), &[], 0, &mut Default::default()),
                        Outcome::Drop(DropReason::Loss)
                    )
                })
                .collect()
        };
        assert_eq!(
            losses("rate_mbit = 100\nloss = 0.1\n"),
            losses("rate_mbit = 100\nloss = 0.1\ndelay_ms = 7\njitter_ms = 3\n")
        );
    }

    #[test]
    fn buffer_overflow_is_reported() {
        let mut l = link("rate_mbit = 12\nbuffer_packets = 3\n");
        let outcomes: Vec<bool> = (0..5)
            .map(|_| {
                matches!(
                    l.on_arrival(0, &pkt(1500), &[], 0, &mut Default::default()),
                    Outcome::Drop(DropReason::Buffer)
                )
            })
            .collect();
        assert_eq!(outcomes, vec![false, false, false, true, true]);
    }
}
