//! The emulated link of one direction, as pure logic: given a packet and the time it
//! arrived, decide whether it is dropped (and why) or when it is released.
//!
//! Order of stages, as on a path with a middlebox in front of a bottleneck:
//! middlebox -> random loss -> drop-tail buffer -> optional AQM (CoDel, PIE) ->
//! serialization (rate or trace) -> propagation delay + jitter -> optional reordering.
//! With a scheduler for the AQM (FQ-CoDel, DualPI2: `aqm::scheduled`) the scheduler is the
//! buffer and the AQM, and takes the place of reordering.

pub mod aqm;
pub mod buffer;
pub mod delay;
pub mod loss;
pub mod middlebox;
pub mod quic;
pub mod rate;
pub mod reorder;
pub mod schedule;
pub mod tcp_rst;

use crate::config::{BufferLimit, DirectionProfile, RateSpec};
use crate::packet::{Ecn, PacketInfo};
use crate::rng::Rng;
use aqm::scheduled::{Item, Scheduled, Served};
use aqm::{Action, Aqm, Arrival};
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
    /// The AQM discipline dropped it before the buffer was full.
    Aqm,
    /// Its path was down (`crate::handover`): it never reached the link.
    PathDown,
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
        /// The AQM marked it: it leaves with its IP ECN field set to CE.
        ce: bool,
    },
    /// Into the scheduler (FQ-CoDel, DualPI2): its fate comes when the link serves it
    /// (`Link::serve`).
    Enqueue {
        /// Its ECN codepoint: whether it may be marked, and DualPI2's queue for it.
        ecn: Ecn,
        /// The middlebox rewrote it into a RST, as for `Release`.
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
    aqm: Option<Aqm>,
    /// FQ-CoDel, DualPI2: the bottleneck as a scheduler the direction serves.
    scheduled: Option<Scheduled>,
    /// One stream per random process, so changing one model (say, jitter) leaves the
    /// others' decisions for the same seed unchanged.
    loss_rng: Rng,
    jitter_rng: Rng,
    reorder_rng: Rng,
    aqm_rng: Rng,
}

impl Link {
    /// `seed` is the direction's seed; the models derive their own streams from it.
    pub fn new(profile: &DirectionProfile, seed: u64) -> Self {
        let serializer = match &profile.rate {
            RateSpec::Fixed { rate_mbit } => Serializer::Fixed(FixedRate::new(*rate_mbit)),
            RateSpec::Trace { trace, .. } => Serializer::Trace(TraceRate::new(trace.clone())),
        };
        let aqm = profile.aqm.as_ref().and_then(Aqm::new);
        let scheduled = Scheduled::new(profile, seed);
        // an AQM reads the bytes queued: an unlimited buffer still counts them; a scheduler
        // holds its own limit
        let buffer = match (profile.buffer, &aqm) {
            _ if scheduled.is_some() => DropTailBuffer::new(BufferLimit::Unlimited),
            (BufferLimit::Unlimited, Some(_)) => DropTailBuffer::new(BufferLimit::Bytes(u64::MAX)),
            (limit, _) => DropTailBuffer::new(limit),
        };
        Link {
            middlebox: Middlebox::new(&profile.middlebox, Rng::derive(seed, 4)),
            loss: LossModel::new(&profile.loss),
            buffer,
            serializer,
            delay: DelayLine::new(profile.delay_ms, profile.jitter_ms, profile.jitter_distribution),
            reorder: profile.reorder.as_ref().map(Reorder::new),
            aqm,
            scheduled,
            loss_rng: Rng::derive(seed, 1),
            jitter_rng: Rng::derive(seed, 2),
            reorder_rng: Rng::derive(seed, 3),
            aqm_rng: Rng::derive(seed, 5),
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

    /// The link is a scheduler (FQ-CoDel, DualPI2): arrivals are `Outcome::Enqueue`d, then
    /// served.
    pub fn is_scheduled(&self) -> bool {
        self.scheduled.is_some()
    }

    /// Put a packet `on_arrival` answered `Enqueue` for into the scheduler; one the full
    /// scheduler drops goes to `out`.
    pub fn enqueue(&mut self, item: Item, key: &crate::packet::FlowKey, len: u32, ecn: Ecn, out: &mut Vec<Served>) {
        if let Some(s) = &mut self.scheduled {
            s.enqueue(item, key, len, ecn, out);
        }
    }

    /// When the scheduled link next sends, if anything is queued.
    pub fn next_send_ns(&self) -> Option<u64> {
        self.scheduled.as_ref().and_then(|s| s.next_send_ns())
    }

    /// Serve the scheduled link up to `until_ns` (every arrival before it enqueued): each
    /// packet sent gets its start, departure and release (serializer, delay line).
    pub fn serve(&mut self, until_ns: u64, out: &mut Vec<Served>) {
        let Link { scheduled, serializer, delay, jitter_rng, aqm_rng, .. } = self;
        let Some(s) = scheduled else { return };
        let first = out.len();
        s.serve(
            until_ns,
            |t, len| {
                let tx = serializer.transmit(t, len);
                (tx.start_ns, tx.departure_ns)
            },
            aqm_rng,
            out,
        );
        for served in &mut out[first..] {
            if let Served::Release { departure_ns, at_ns, .. } = served {
                *at_ns = delay.release(*departure_ns, jitter_rng);
            }
        }
    }

    /// Decide a packet's fate. Calls must come in arrival order (`now_ns` non-decreasing).
    /// `bytes` is the copied prefix of the packet (the middlebox reads headers in it and may
    /// rewrite its ECN field, which the stages after it then read), `mb` the flow's middlebox
    /// state.
    #[inline]
    pub fn on_arrival(
        &mut self,
        now_ns: u64,
        pkt: &PacketInfo,
        bytes: &mut [u8],
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
        if self.scheduled.is_some() {
            // a RST the middlebox made carries no ECN
            return Outcome::Enqueue { ecn: if rst { Ecn::NotEct } else { Ecn::of(bytes) }, rst };
        }
        self.buffer.drain(now_ns);
        if !self.buffer.has_room(pkt.ip_len) {
            return Outcome::Drop(DropReason::Buffer);
        }
        let before = self.aqm.is_some().then(|| self.serializer.checkpoint());
        let Transmission { start_ns, departure_ns } = self.serializer.transmit(now_ns, pkt.ip_len);
        let mut ce = false;
        if let (Some(aqm), Some(before)) = (&mut self.aqm, before) {
            let arrival = Arrival {
                now_ns,
                start_ns,
                departure_ns,
                backlog_bytes: self.buffer.bytes(),
                len: pkt.ip_len,
                ecn_capable: !rst && crate::packet::ecn(bytes) != 0,
            };
            match aqm.decide(&arrival, &mut self.aqm_rng) {
                Action::Drop => {
                    self.serializer.restore(before);
                    return Outcome::Drop(DropReason::Aqm);
                }
                Action::Mark => ce = true,
                Action::Pass => {}
            }
            aqm.transmitted(start_ns, departure_ns);
        }
        self.buffer.push(departure_ns, pkt.ip_len);
        let scheduled = self.delay.release(departure_ns, &mut self.jitter_rng);
        match self.reorder.as_ref().and_then(|r| r.early_release(scheduled, now_ns, &mut self.reorder_rng)) {
            Some(at_ns) => Outcome::Release { at_ns, start_ns, departure_ns, reordered: true, rst, ce },
            None => Outcome::Release { at_ns: scheduled, start_ns, departure_ns, reordered: false, rst, ce },
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
        let o = l.on_arrival(0, &pkt(1500), &mut [], 0, &mut Default::default());
        assert_eq!(
            o,
            Outcome::Release {
                at_ns: 21_000_000,
                start_ns: 0,
                departure_ns: 1_000_000,
                reordered: false,
                rst: false,
                ce: false
            }
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
            match l.on_arrival(i * 1_000_000, &pkt(1500), &mut [], 0, &mut Default::default()) {
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
                        l.on_arrival(i * 1_000_000, &pkt(100), &mut [], 0, &mut Default::default()),
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
                    l.on_arrival(0, &pkt(1500), &mut [], 0, &mut Default::default()),
                    Outcome::Drop(DropReason::Buffer)
                )
            })
            .collect();
        assert_eq!(outcomes, vec![false, false, false, true, true]);
    }

    /// An IPv4 header, ECT(0) or not ECN-capable.
    fn header(ect: bool) -> [u8; 20] {
        header_ecn(if ect { 2 } else { 0 })
    }

    /// An IPv4 header with this ECN field (0 not-ECT, 1 ECT(1), 2 ECT(0), 3 CE).
    fn header_ecn(field: u8) -> [u8; 20] {
        let mut h = [0u8; 20];
        h[0] = 0x45;
        h[1] = field & 0x03;
        h
    }

    /// Open-loop overload (1.2 packets offered per packet the link can send) for 20 s: the
    /// packets the link sent and the AQM's drops.
    fn overload(toml: &str) -> (u64, u64) {
        let mut l = link(toml);
        let (mut sent, mut aqm) = (0u64, 0u64);
        let gap = 1_000_000 * 10 / 12; // 1.2 packets per ms at 12 Mbit/s (1 ms per packet)
        let mut t = 0;
        while t < 20_000_000_000u64 {
            match l.on_arrival(t, &pkt(1500), &mut header(true), 0, &mut Default::default()) {
                Outcome::Release { departure_ns, .. } if departure_ns <= 20_000_000_000 => sent += 1,
                Outcome::Release { .. } => {}
                Outcome::Drop(DropReason::Aqm) => aqm += 1,
                Outcome::Drop(_) | Outcome::Enqueue { .. } => {}
            }
            t += gap;
        }
        (sent, aqm)
    }

    /// A sender's congestion control in `senders`.
    #[derive(Clone, Copy, PartialEq)]
    enum Cc {
        /// Reno-like: window +1 per round trip, halved at most once per round trip on a loss
        /// or a CE mark (RFC 3168).
        Reno,
        /// Scalable, as DCTCP (RFC 8257) and Prague: window +1 per round trip; once per round
        /// trip with a CE mark, cut by alpha / 2, alpha the EWMA (gain 1/16) of the fraction
        /// of packets marked per round trip; halved on a loss as Reno.
        Scalable,
    }

    /// What `senders` measured of one flow.
    #[derive(Debug, Default, Clone, Copy)]
    struct FlowRun {
        /// Mean sojourn of its packets that arrived in the last 10 s, ms.
        sojourn_ms: f64,
        /// Packets the link sent.
        sent: u64,
        marks: u64,
        drops: u64,
    }

    /// Greedy flows (congestion control, IP ECN field of their packets) over the link for
    /// 30 s, 20 ms of base RTT each. A scheduled link (FQ-CoDel, DualPI2) is served as the
    /// engine serves it.
    fn senders(toml: &str, flows: &[(Cc, u8)]) -> Vec<FlowRun> {
        senders_rtt(toml, flows, 20_000_000)
    }

    /// `senders` with `rtt` ns of base RTT.
    fn senders_rtt(toml: &str, flows: &[(Cc, u8)], rtt: u64) -> Vec<FlowRun> {
        use aqm::scheduled::{Item, Served};
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        let mut l = link(toml);
        let n = flows.len();
        let keys: Vec<FlowKey> = (0..n as u16).map(|f| FlowKey { sport: 1 + f, ..pkt(1500).key }).collect();
        let (mut cwnd, mut inflight, mut last_cut) = (vec![10.0f64; n], vec![0u64; n], vec![0u64; n]);
        // the scalable flows' alpha, and their round trip: its end, packets acked and marked
        let (mut alpha, mut round) = (vec![1.0f64; n], vec![(0u64, 0u64, 0u64); n]);
        // (when, flow, lost, CE)
        let mut acks: BinaryHeap<Reverse<(u64, usize, bool, bool)>> = BinaryHeap::new();
        let (mut runs, mut sum, mut id) = (vec![FlowRun::default(); n], vec![(0u64, 0u64); n], 0u32);
        let mut served = Vec::new();
        let mut t = 0u64;
        while t < 30_000_000_000 {
            for f in 0..n {
                while (inflight[f] as f64) < cwnd[f] {
                    inflight[f] += 1;
                    id += 1;
                    let p = PacketInfo { ip_len: 1500, key: keys[f] };
                    match l.on_arrival(t, &p, &mut header_ecn(flows[f].1), 0, &mut Default::default()) {
                        Outcome::Release { start_ns, departure_ns, ce, .. } => {
                            runs[f].sent += 1;
                            runs[f].marks += ce as u64;
                            if t >= 20_000_000_000 {
                                sum[f].0 += start_ns - t;
                                sum[f].1 += 1;
                            }
                            acks.push(Reverse((departure_ns + rtt, f, false, ce)));
                        }
                        Outcome::Drop(_) => {
                            runs[f].drops += 1;
                            acks.push(Reverse((t + rtt, f, true, false)));
                        }
                        Outcome::Enqueue { ecn, .. } => {
                            let item = Item { id, flow: f as u32, arrival_ns: t, rst: false };
                            l.enqueue(item, &keys[f], 1500, ecn, &mut served);
                        }
                    }
                }
            }
            l.serve(t, &mut served);
            for s in served.drain(..) {
                match s {
                    Served::Release { item, start_ns, departure_ns, ce, .. } => {
                        let f = item.flow as usize;
                        runs[f].sent += 1;
                        runs[f].marks += ce as u64;
                        if item.arrival_ns >= 20_000_000_000 {
                            sum[f].0 += start_ns - item.arrival_ns;
                            sum[f].1 += 1;
                        }
                        acks.push(Reverse((departure_ns + rtt, f, false, ce)));
                    }
                    Served::Drop { item, .. } => {
                        runs[item.flow as usize].drops += 1;
                        acks.push(Reverse((t + rtt, item.flow as usize, true, false)));
                    }
                }
            }
            let next_ack = acks.peek().map_or(u64::MAX, |a| a.0 .0);
            let next = next_ack.min(l.next_send_ns().unwrap_or(u64::MAX));
            t = t.max(next);
            if next_ack > t {
                continue; // the link sends first
            }
            let Reverse((at, f, lost, ce)) = acks.pop().unwrap();
            inflight[f] -= 1;
            if lost || (ce && flows[f].0 == Cc::Reno) {
                if at > last_cut[f] + rtt {
                    cwnd[f] = (cwnd[f] / 2.0).max(2.0);
                    last_cut[f] = at;
                }
            } else {
                cwnd[f] += 1.0 / cwnd[f];
            }
            if flows[f].0 == Cc::Scalable && !lost {
                let r = &mut round[f];
                r.1 += 1;
                r.2 += ce as u64;
                if at >= r.0 {
                    alpha[f] += (r.2 as f64 / r.1 as f64 - alpha[f]) / 16.0;
                    if r.2 > 0 {
                        cwnd[f] = (cwnd[f] * (1.0 - alpha[f] / 2.0)).max(2.0);
                    }
                    *r = (at + rtt, 0, 0);
                }
            }
        }
        for (r, (sum, n)) in runs.iter_mut().zip(sum) {
            r.sojourn_ms = sum as f64 / n.max(1) as f64 / 1e6;
        }
        runs
    }

    /// One Reno-like flow of not-ECT packets (`senders`): its mean sojourn in the last 10 s
    /// and the packets sent.
    fn reno(toml: &str) -> (f64, u64) {
        let r = senders(toml, &[(Cc::Reno, 0)])[0];
        (r.sojourn_ms, r.sent)
    }

    #[test]
    fn codel_and_pie_hold_the_queue_near_their_targets_where_drop_tail_fills_the_buffer() {
        let base = "rate_mbit = 12\nbuffer_packets = 300\n";
        let codel_toml = format!("{base}[aqm]\ndiscipline = \"codel\"\n");
        let pie_toml = format!("{base}[aqm]\ndiscipline = \"pie\"\n");
        let fq_toml = format!("{base}[aqm]\ndiscipline = \"fq_codel\"\n");
        let (tail, tail_sent) = reno(base);
        let (codel, codel_sent) = reno(&codel_toml);
        let (pie, pie_sent) = reno(&pie_toml);
        let (fq, fq_sent) = reno(&fq_toml);
        eprintln!("sojourn: drop-tail {tail:.1} ms, CoDel {codel:.1} ms, PIE {pie:.1} ms, FQ-CoDel {fq:.1} ms");
        assert!(fq < 15.0, "FQ-CoDel: {fq} ms (target 5)");
        assert!(fq_sent > 27_000, "FQ-CoDel sent {fq_sent} packets in 30 s");
        assert!(tail > 100.0, "drop-tail: {tail} ms");
        assert!(codel < 15.0, "CoDel: {codel} ms (target 5)");
        assert!(pie > 5.0 && pie < 30.0, "PIE: {pie} ms (target 15)");
        // the AQMs keep the link busy all the same (30,000 packets in 30 s)
        for sent in [tail_sent, codel_sent, pie_sent] {
            assert!(sent > 27_000, "{sent} packets sent in 30 s");
        }
        // a dropped packet takes no time on the link: under overload the link stays busy
        for toml in [base.to_string(), codel_toml, pie_toml] {
            let (sent, _) = overload(&toml);
            assert!((19_950..=20_050).contains(&sent), "{sent} packets sent in 20 s: {toml}");
        }
    }

    #[test]
    fn ecn_capable_packets_are_marked_where_others_are_dropped() {
        let mut l = link("rate_mbit = 12\n[aqm]\ndiscipline = \"codel\"\necn = true\n");
        let (mut marks, mut drops) = (0, 0);
        let gap = 1_000_000 * 10 / 12;
        for i in 0..12_000u64 {
            let ect = i % 2 == 0;
            match l.on_arrival(i * gap, &pkt(1500), &mut header(ect), 0, &mut Default::default()) {
                Outcome::Release { ce: true, .. } => {
                    assert!(ect);
                    marks += 1
                }
                Outcome::Drop(DropReason::Aqm) => {
                    assert!(!ect);
                    drops += 1
                }
                _ => {}
            }
        }
        assert!(marks > 10 && drops > 10, "{marks} marks, {drops} drops");
    }

    /// ECT(0) packets offered at 1.2 times a 12 Mbit/s link for 10 s: CE marks and AQM drops,
    /// and whether every packet left the middlebox with `want` in its ECN field.
    fn ect0_overload(toml: &str, want: Ecn) -> (u64, u64) {
        let mut l = link(toml);
        let (mut marks, mut drops) = (0, 0);
        let gap = 1_000_000 * 10 / 12;
        for i in 0..12_000u64 {
            let mut h = header_ecn(2);
            match l.on_arrival(i * gap, &pkt(1500), &mut h, 0, &mut Default::default()) {
                Outcome::Release { ce, .. } => marks += ce as u64,
                Outcome::Drop(DropReason::Aqm) => drops += 1,
                o => panic!("{o:?}"),
            }
            assert_eq!(Ecn::of(&h), want);
        }
        (marks, drops)
    }

    #[test]
    fn a_bleached_ect_packet_is_dropped_by_codel_not_marked() {
        let codel = "rate_mbit = 12\n[aqm]\ndiscipline = \"codel\"\necn = true\n";
        let (marks, drops) = ect0_overload(codel, Ecn::Ect0);
        assert!(marks > 10 && drops == 0, "as sent: {marks} marks, {drops} drops");
        // the middlebox is in front of the AQM: what it bleached is not ECN-capable there
        let (marks, drops) = ect0_overload(&format!("{codel}[middlebox]\necn = \"bleach\"\n"), Ecn::NotEct);
        assert!(marks == 0 && drops > 10, "bleached: {marks} marks, {drops} drops");
        // and what it marked CE the AQM may still mark (it stays CE), never drop for ECN's sake
        let (marks, drops) = ect0_overload(&format!("{codel}[middlebox]\necn = \"mark_ce\"\n"), Ecn::Ce);
        assert!(marks > 10 && drops == 0, "CE: {marks} marks, {drops} drops");
    }

    #[test]
    fn a_packet_re_marked_ect1_goes_to_dualpi2_s_l4s_queue() {
        use aqm::dualpi2::DualQueue;
        use aqm::scheduled::{Item, Served};
        let dual = "rate_mbit = 12\n[aqm]\ndiscipline = \"dualpi2\"\n";
        // the queue each arriving codepoint is served from, and the codepoint it left with
        let queue_of = |toml: &str, field: u8| -> (DualQueue, Ecn) {
            let mut l = link(toml);
            let mut h = header_ecn(field);
            let ecn = match l.on_arrival(0, &pkt(1500), &mut h, 0, &mut Default::default()) {
                Outcome::Enqueue { ecn, rst: false } => ecn,
                o => panic!("{o:?}"),
            };
            assert_eq!(ecn, Ecn::of(&h), "the classifier reads the rewritten field");
            let mut served = Vec::new();
            let item = Item { id: 1, flow: 0, arrival_ns: 0, rst: false };
            l.enqueue(item, &pkt(1500).key, 1500, ecn, &mut served);
            l.serve(10_000_000, &mut served);
            match served[..] {
                [Served::Release { queue: Some(q), .. }] => (q, ecn),
                ref s => panic!("{s:?}"),
            }
        };
        assert_eq!(queue_of(dual, 2), (DualQueue::C, Ecn::Ect0));
        let to_l = format!("{dual}[middlebox]\necn = \"ect0_to_ect1\"\n");
        assert_eq!(queue_of(&to_l, 2), (DualQueue::L, Ecn::Ect1));
        assert_eq!(queue_of(dual, 1), (DualQueue::L, Ecn::Ect1));
        let to_c = format!("{dual}[middlebox]\necn = \"ect1_to_ect0\"\n");
        assert_eq!(queue_of(&to_c, 1), (DualQueue::C, Ecn::Ect0));
        let bleach = format!("{dual}[middlebox]\necn = \"bleach\"\n");
        assert_eq!(queue_of(&bleach, 1), (DualQueue::C, Ecn::NotEct));
    }

    #[test]
    fn dualpi2_holds_a_classic_flow_near_its_target_and_marks_an_ecn_capable_one() {
        let toml = "rate_mbit = 12\nbuffer_packets = 300\n[aqm]\ndiscipline = \"dualpi2\"\n";
        // not-ECT Reno: the Classic queue, dropped with p'^2
        let r = senders(toml, &[(Cc::Reno, 0)])[0];
        // the same with ECT(0): still Classic, marked with p'^2 instead
        let e = senders(toml, &[(Cc::Reno, 2)])[0];
        eprintln!("DualPI2, one Reno flow: not-ECT {r:?}; ECT(0) {e:?}");
        for run in [r, e] {
            assert!(run.sojourn_ms > 8.0 && run.sojourn_ms < 22.0, "{run:?} (target 15 ms)");
            assert!(run.sent > 27_000, "{run:?}: the link stays busy");
        }
        assert!(r.drops > 10 && r.marks == 0, "{r:?}");
        assert!(e.marks > 10 && e.drops == 0, "{e:?}");
    }

    #[test]
    fn dualpi2_keeps_an_l4s_flow_at_the_ramp_beside_a_classic_flow() {
        let toml = "rate_mbit = 12\nbuffer_packets = 300\n[aqm]\ndiscipline = \"dualpi2\"\n";
        let runs = senders(toml, &[(Cc::Reno, 0), (Cc::Scalable, 1)]);
        let (c, l) = (runs[0], runs[1]);
        eprintln!("DualPI2, Reno (not-ECT) beside scalable (ECT(1)): Classic {c:?}, L4S {l:?}");
        // the L4S queue stays around the ramp (0.8 to 1.2 ms), the Classic one near target
        assert!(l.sojourn_ms < 1.5, "L4S sojourn {} ms", l.sojourn_ms);
        assert!(c.sojourn_ms > 8.0 && c.sojourn_ms < 22.0, "Classic sojourn {} ms", c.sojourn_ms);
        // the L4S flow is marked, never dropped; the Classic one dropped
        assert!(l.marks > 100 && l.drops == 0, "{l:?}");
        assert!(c.drops > 10, "{c:?}");
        // the coupling shares the link (k = 2: roughly equal windows at equal RTTs)
        let share = l.sent as f64 / (l.sent + c.sent) as f64;
        assert!(share > 0.25 && share < 0.75, "L4S share {share:.2}");
        assert!(l.sent + c.sent > 27_000, "the link stays busy");
    }

    #[test]
    fn dualpi2_holds_an_l4s_flow_alone_on_its_native_ramp() {
        // 120 Mbit/s: a packet takes 0.1 ms, well under the ramp (0.8 to 1.2 ms); no Classic
        // traffic, so p' stays near 0 and the ramp alone marks. A DCTCP-like sender keeps the
        // link busy only with a marking threshold above about a seventh of the path's BDP
        // (DCTCP's K > C * RTT / 7): 5 ms of base RTT (50 packets); at 20 ms it leaves the
        // link idle now and then, its queue as short
        let toml = "rate_mbit = 120\n[aqm]\ndiscipline = \"dualpi2\"\n";
        let l = senders_rtt(toml, &[(Cc::Scalable, 1)], 5_000_000)[0];
        let far = senders(toml, &[(Cc::Scalable, 1)])[0];
        eprintln!("DualPI2, scalable (ECT(1)) alone at 120 Mbit/s: 5 ms RTT {l:?}; 20 ms RTT {far:?}");
        assert!(l.sojourn_ms > 0.6 && l.sojourn_ms < 1.3, "L4S sojourn {} ms", l.sojourn_ms);
        assert!(l.marks > 1000 && l.drops == 0, "{l:?}");
        assert!(l.sent > 295_000, "the link stays busy: {l:?}");
        assert!(far.sojourn_ms < 1.3 && far.drops == 0 && far.sent > 270_000, "{far:?}");
    }
}
