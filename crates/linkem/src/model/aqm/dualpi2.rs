//! DualPI2, the DualQ Coupled AQM of RFC 9332 with its Appendix A's PI2 Classic AQM: two
//! queues behind one link. The classifier sends ECT(1) and CE packets to the L4S queue (L),
//! not-ECT and ECT(0) ones to the Classic queue (C). One PI controller moves a base
//! probability p' every `Tupdate` towards holding the queue delay at `target`; the queues are
//! coupled through it: a Classic packet is dropped (not-ECT) or marked (ECT(0)) with
//! p_C = p'^2, an L4S packet is marked with p_L = max(p'_L, p_CL), where p_CL = k * p' is the
//! coupled probability and p'_L the native L4S AQM's, a ramp on the packet's sojourn from
//! `minTh` to `minTh + range`. A Reno-like flow's rate goes as 1/sqrt(p_C), a scalable one's
//! as 1/p_L, so the two share the link about equally (k = 2) while the L4S queue stays
//! around the ramp, about 1 ms.
//!
//! The code follows Appendix A's second-pass pseudo-code (Figures 5 to 9: parameters,
//! enqueue, dequeue with the overload handling, the ramp, the update):
//! - params: k = 2, target = 15 ms, RTT_max = 100 ms, Tupdate = min(target, RTT_max / 3),
//!   alpha = 0.1 Tupdate / RTT_max^2, beta = 0.3 / RTT_max, p_Cmax = min(1 / k^2, 1),
//!   minTh = 800 us, range = 400 us (the RFC's ramp; range = 0 makes it the step Linux
//!   uses), Th_len = 1 packet, p_Lmax = 1; the limit is the link's buffer (`scheduled`);
//! - enqueue: a packet that would take the queues past the limit (their bytes + an MTU) is
//!   dropped, others are time-stamped and classified;
//! - dequeue: a scheduler picks the queue; an L4S packet is marked with p_L, where p'_L is 0
//!   unless more than Th_len packets are left in the L4S queue; when the coupled probability
//!   saturates (p_CL >= p_Lmax: overload) an L4S packet is first dropped with p_C, then
//!   marked with p_CL; a Classic packet is dropped or marked with p_C, and always dropped
//!   once p_C >= p_Cmax (overload turns its ECN off). A dropped packet takes no time on the
//!   link: the next one is dequeued at once;
//! - update: curq is the greater of the two queues' delays (their head packets' waiting
//!   times), p' += alpha (curq - target) + beta (curq - prevq), clamped to [0, 1];
//!   p_CL = min(k p', 1), p_C = p'^2.
//!
//! Choices where the RFC leaves one open, and where implementations differ:
//! - the sojourn the ramp reads (the RFC's lq.time()) is the dequeued packet's own: its
//!   time from enqueue to dequeue (the "sojourn technique" the RFC time-stamps for), as
//!   Linux's sch_dualpi2 does;
//! - the scheduler (the RFC's scheduler(), "discussed later") is Linux's: weighted round
//!   robin in bytes with a Classic-protection weight of 10% (`classic_protection`): while both
//!   queues hold packets the L4S queue gets 90% of the link, the Classic one at least 10%,
//!   and either gets all of it while the other is empty;
//! - the RFC decides each drop or mark with recur(), an accumulator per queue that fires
//!   once it has gathered a whole probability (deterministic: rates exact, no sampling
//!   noise). Linux draws a random number instead; `random_draws = true` does that, with the
//!   direction's seeded `Rng` (reproducible);
//! - Linux's further departures are not followed: its 1 ms step in place of the ramp, no
//!   drop or mark while less than 2 MTU are queued, drops at enqueue.
//!
//! The PI update runs every `Tupdate` on a timer in a real qdisc; here it is run lazily:
//! each dequeue first performs the updates due by its time, each on the queues as they were
//! at its instant (the packets dequeued before it gone, those that arrived after it not yet
//! there), so the controller sees what a timer would. A long idle spell, where every update
//! sees empty queues and p' only falls, is folded into one step.

use std::collections::VecDeque;

use super::codel_queue::Queued;
use crate::config_aqm::DualPi2Spec;
use crate::packet::Ecn;
use crate::rng::Rng;

/// The RFC's MTU in the limit test: a packet is refused when the queues' bytes and one
/// MTU would pass the limit.
pub const MTU: u64 = 1500;
/// The RFC's p_Lmax: the L4S queue's marking saturates at 1.
const P_LMAX: f64 = 1.0;

/// Which of the two queues a packet is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DualQueue {
    /// The L4S queue: ECT(1) and CE.
    L,
    /// The Classic queue: not-ECT and ECT(0).
    C,
}

impl DualQueue {
    /// The RFC's classifier: ECT(1) and CE to the L4S queue, the rest to the Classic one.
    pub fn of(ecn: Ecn) -> DualQueue {
        if ecn.l4s() {
            DualQueue::L
        } else {
            DualQueue::C
        }
    }
}

/// The queues' limit: the direction's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// The RFC's: refuse a packet when the queued bytes plus an MTU exceed it.
    Bytes(u64),
    /// Refuse a packet when this many are queued.
    Packets(usize),
}

/// A packet leaving for the link.
#[derive(Debug)]
pub struct Sent<T> {
    pub item: T,
    pub len: u32,
    pub enqueued_ns: u64,
    /// Set CE on it.
    pub marked: bool,
    pub queue: DualQueue,
}

struct Lane<T> {
    q: VecDeque<Queued<T>>,
    bytes: u64,
    /// The RFC's recur() accumulator.
    count: f64,
}

impl<T> Lane<T> {
    fn new() -> Self {
        Lane { q: VecDeque::new(), bytes: 0, count: 0.0 }
    }

    /// How long the head packet has waited at `at_ns` (the RFC's time()); 0 when the queue
    /// held nothing then (its head arrived later).
    fn time_ns(&self, at_ns: u64) -> u64 {
        self.q.front().map_or(0, |p| at_ns.saturating_sub(p.enqueued_ns))
    }
}

pub struct DualPi2<T> {
    l: Lane<T>,
    c: Lane<T>,
    limit: Limit,
    k: f64,
    target_s: f64,
    t_update_ns: u64,
    alpha: f64,
    beta: f64,
    p_cmax: f64,
    min_th_ns: u64,
    range_ns: u64,
    th_len: usize,
    random: bool,
    /// WRR: the weights in % and the byte credit whose sign picks the queue (Linux's
    /// c_protection: the L4S queue goes while it is <= 0).
    wc: i64,
    wl: i64,
    credit: i64,
    /// PI2 state: the base probability p', the coupled and Classic probabilities derived
    /// from it, the queue delay at the last update.
    pub(crate) p_prime: f64,
    p_cl: f64,
    p_c: f64,
    prevq_s: f64,
    /// The next update instant; the timer starts with the first packet.
    next_update_ns: Option<u64>,
}

impl<T> DualPi2<T> {
    pub fn new(s: &DualPi2Spec, limit: Limit) -> Self {
        let k = s.coupling_factor;
        let wc = s.classic_protection as i64;
        let mut q = DualPi2 {
            l: Lane::new(),
            c: Lane::new(),
            limit,
            k,
            target_s: s.target_ms / 1e3,
            t_update_ns: ((s.t_update_ms * 1e6) as u64).max(1),
            alpha: s.alpha,
            beta: s.beta,
            p_cmax: (1.0 / (k * k)).min(1.0),
            min_th_ns: (s.min_th_ms * 1e6) as u64,
            range_ns: (s.range_ms * 1e6) as u64,
            th_len: s.th_len_packets as usize,
            random: s.random_draws,
            wc,
            wl: 100 - wc,
            credit: 0,
            p_prime: 0.0,
            p_cl: 0.0,
            p_c: 0.0,
            prevq_s: 0.0,
            next_update_ns: None,
        };
        q.reset_credit();
        q
    }

    pub fn is_empty(&self) -> bool {
        self.l.q.is_empty() && self.c.q.is_empty()
    }

    pub fn packets(&self) -> usize {
        self.l.q.len() + self.c.q.len()
    }

    /// (p', p_CL, p_C) as the last update left them.
    pub fn probabilities(&self) -> (f64, f64, f64) {
        (self.p_prime, self.p_cl, self.p_c)
    }

    /// Linux's starting credit: the L4S queue first, then the weights' difference in MTUs.
    fn reset_credit(&mut self) {
        self.credit = MTU as i64 * (self.wc - self.wl);
    }

    /// The RFC's enqueue at `now_ns`: the queue the packet went to, or the packet back when
    /// the queues are full (a tail drop).
    pub fn enqueue(&mut self, item: T, now_ns: u64, len: u32, ecn: Ecn) -> Result<DualQueue, T> {
        if self.next_update_ns.is_none() {
            self.next_update_ns = Some(now_ns + self.t_update_ns);
        }
        let full = match self.limit {
            Limit::Bytes(b) => self.l.bytes + self.c.bytes + MTU > b,
            Limit::Packets(n) => self.packets() >= n,
        };
        if full {
            return Err(item);
        }
        let queue = DualQueue::of(ecn);
        let lane = match queue {
            DualQueue::L => &mut self.l,
            DualQueue::C => &mut self.c,
        };
        lane.bytes += len as u64;
        lane.q.push_back(Queued { item, enqueued_ns: now_ns, len, ect: ecn.capable() });
        Ok(queue)
    }

    /// The native L4S AQM (the RFC's laqm()): the ramp's probability for a sojourn.
    fn laqm(&self, sojourn_ns: u64) -> f64 {
        if sojourn_ns >= self.min_th_ns + self.range_ns {
            1.0
        } else if sojourn_ns > self.min_th_ns {
            (sojourn_ns - self.min_th_ns) as f64 / self.range_ns as f64
        } else {
            0.0
        }
    }

    /// The RFC's recur(): true with the given likelihood, from the queue's accumulator (or
    /// a random draw).
    fn recur(random: bool, lane: &mut Lane<T>, likelihood: f64, rng: &mut Rng) -> bool {
        if random {
            return rng.chance(likelihood);
        }
        lane.count += likelihood;
        if lane.count > 1.0 {
            lane.count -= 1.0;
            return true;
        }
        false
    }

    /// The RFC's dualpi2_update at instant `at_ns`, on the queues as they were then.
    fn update(&mut self, at_ns: u64) {
        let curq_s = self.c.time_ns(at_ns).max(self.l.time_ns(at_ns)) as f64 / 1e9;
        let p = self.p_prime + self.alpha * (curq_s - self.target_s) + self.beta * (curq_s - self.prevq_s);
        self.set_p_prime(p);
        self.prevq_s = curq_s;
    }

    fn set_p_prime(&mut self, p: f64) {
        self.p_prime = p.clamp(0.0, 1.0);
        self.p_cl = (self.k * self.p_prime).min(1.0);
        self.p_c = self.p_prime * self.p_prime;
    }

    /// Perform the updates due by `now_ns`. The queues hold what they held since the last
    /// dequeue, less the packets that arrived after an instant (their head's arrival tells).
    fn catch_up(&mut self, now_ns: u64) {
        let Some(mut next) = self.next_update_ns else { return };
        let t = self.t_update_ns;
        // the earliest arrival still queued: before it, every update saw empty queues
        let busy_from = [&self.l, &self.c].iter().filter_map(|lane| lane.q.front()).map(|p| p.enqueued_ns).min();
        while next <= now_ns {
            let idle_until = busy_from.unwrap_or(u64::MAX).min(now_ns);
            if self.prevq_s == 0.0 && next <= idle_until {
                // every update until then sees curq = 0 after curq = 0: p' only falls, by
                // alpha * target each time
                let steps = (idle_until - next) / t + 1;
                self.set_p_prime(self.p_prime - steps as f64 * self.alpha * self.target_s);
                next += steps * t;
                continue;
            }
            self.update(next);
            next += t;
        }
        self.next_update_ns = Some(next);
    }

    /// The RFC's dequeue at `now_ns`: the packet to send, the packets dropped on the way
    /// appended to `dropped`. None when both queues are empty.
    pub fn dequeue(
        &mut self,
        now_ns: u64,
        rng: &mut Rng,
        dropped: &mut Vec<(Queued<T>, DualQueue)>,
    ) -> Option<Sent<T>> {
        self.catch_up(now_ns);
        loop {
            let (l_len, c_len) = (self.l.q.len(), self.c.q.len());
            // the scheduler: Linux's WRR with Classic protection
            let queue = if l_len > 0 && (c_len == 0 || self.credit <= 0) {
                DualQueue::L
            } else if c_len > 0 {
                DualQueue::C
            } else {
                self.reset_credit();
                return None;
            };
            let random = self.random;
            let (p, mark, credit_change) = match queue {
                DualQueue::L => {
                    let p = self.l.q.pop_front()?;
                    self.l.bytes -= p.len as u64;
                    let mark = if self.p_cl < P_LMAX {
                        let native = if self.l.q.len() > self.th_len {
                            self.laqm(now_ns.saturating_sub(p.enqueued_ns))
                        } else {
                            0.0 // Th_len: too little left behind to be a queue
                        };
                        Self::recur(random, &mut self.l, native.max(self.p_cl).min(1.0), rng)
                    } else {
                        // overload saturation: revert to Classic drop, then mark the rest
                        if Self::recur(random, &mut self.l, self.p_c, rng) {
                            dropped.push((p, queue));
                            continue;
                        }
                        Self::recur(random, &mut self.l, self.p_cl, rng)
                    };
                    (p, mark, if c_len > 0 { self.wc } else { 0 })
                }
                DualQueue::C => {
                    let p = self.c.q.pop_front()?;
                    self.c.bytes -= p.len as u64;
                    let mut mark = false;
                    if Self::recur(random, &mut self.c, self.p_c, rng) {
                        if !p.ect || self.p_c >= self.p_cmax {
                            // squared drop; overload disables ECN
                            dropped.push((p, queue));
                            continue;
                        }
                        mark = true;
                    }
                    (p, mark, if l_len > 0 { -self.wl } else { 0 })
                }
            };
            // as Linux: only a packet that leaves moves the credit
            self.credit += credit_change * p.len as i64;
            return Some(Sent { item: p.item, len: p.len, enqueued_ns: p.enqueued_ns, marked: mark, queue });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    pub(crate) fn spec() -> DualPi2Spec {
        let raw: crate::config_aqm::RawAqm = toml::from_str("discipline = \"dualpi2\"").unwrap();
        match crate::config_aqm::resolve(&raw).unwrap() {
            crate::config_aqm::AqmSpec::DualPi2(s) => s,
            other => panic!("{other:?}"),
        }
    }

    fn dualpi2(s: &DualPi2Spec) -> DualPi2<(u32, u64)> {
        DualPi2::new(s, Limit::Packets(100_000))
    }

    #[test]
    fn defaults_are_appendix_a() {
        let s = spec();
        assert_eq!((s.coupling_factor, s.target_ms, s.rtt_max_ms, s.t_update_ms), (2.0, 15.0, 100.0, 15.0));
        // alpha = 0.1 * 0.015 / 0.1^2 = 0.15 Hz, beta = 0.3 / 0.1 = 3 Hz
        assert!((s.alpha - 0.15).abs() < 1e-12 && (s.beta - 3.0).abs() < 1e-12, "{} {}", s.alpha, s.beta);
        assert_eq!((s.min_th_ms, s.range_ms, s.th_len_packets, s.classic_protection), (0.8, 0.4, 1, 10));
        let q = dualpi2(&s);
        assert_eq!(q.p_cmax, 0.25);
        assert_eq!(q.t_update_ns, 15 * MS);
    }

    #[test]
    fn one_update_follows_the_rfc() {
        let s = spec();
        let mut q = dualpi2(&s);
        q.enqueue((0, 0), 0, 1500, Ecn::NotEct).unwrap();
        // at 35 ms the head has waited 35 ms: p' = 0.15 (0.035 - 0.015) + 3 (0.035 - 0)
        q.update(35 * MS);
        let p = 0.15 * 0.020 + 3.0 * 0.035;
        assert!((q.p_prime - p).abs() < 1e-12, "{}", q.p_prime);
        assert!((q.p_cl - 2.0 * p).abs() < 1e-12 && (q.p_c - p * p).abs() < 1e-12);
        // the L4S queue's delay counts when it is the greater
        q.enqueue((1, 0), 0, 1500, Ecn::Ect1).unwrap();
        q.c.q.clear();
        q.update(50 * MS);
        let p2 = p + 0.15 * 0.035 + 3.0 * 0.015;
        assert!((q.p_prime - p2).abs() < 1e-12, "{}", q.p_prime);
        // clamped to [0, 1], p_CL capped at 1
        q.update(1_000 * MS);
        assert_eq!((q.p_prime, q.p_cl, q.p_c), (1.0, 1.0, 1.0));
        q.l.q.clear();
        q.prevq_s = 0.0;
        q.p_prime = 0.001;
        q.update(2_000 * MS);
        assert_eq!(q.p_prime, 0.0);
    }

    #[test]
    fn the_ramp_and_its_packet_threshold() {
        let s = spec();
        let q = dualpi2(&s);
        assert_eq!(q.laqm(800_000), 0.0);
        assert!((q.laqm(1_000_000) - 0.5).abs() < 1e-12);
        assert_eq!(q.laqm(1_200_000), 1.0);
        // range 0: a step at minTh
        let step = DualPi2Spec { min_th_ms: 1.0, range_ms: 0.0, ..s.clone() };
        let q: DualPi2<u32> = DualPi2::new(&step, Limit::Packets(10));
        assert_eq!((q.laqm(999_999), q.laqm(1_000_000)), (0.0, 1.0));
        // L4S packets that waited 2 ms: a packet left behind is not enough to mark (Th_len),
        // two are
        let mut q = dualpi2(&s);
        let mut rng = Rng::new(1);
        let mut dropped = Vec::new();
        for i in 0..3 {
            q.enqueue((i, 0), 0, 1500, Ecn::Ect1).unwrap();
        }
        let marks: Vec<bool> = (0..3).map(|_| q.dequeue(2 * MS, &mut rng, &mut dropped).unwrap().marked).collect();
        // the first leaves two behind: p_L = 1, but recur() fires only once its accumulator
        // is past 1; the other two leave too few behind
        assert_eq!(marks, vec![false, false, false]);
        assert_eq!(q.l.count, 1.0);
        for i in 0..4 {
            q.enqueue((i, 0), 2 * MS, 1500, Ecn::Ect1).unwrap();
        }
        let marks: Vec<bool> = (0..4).map(|_| q.dequeue(4 * MS, &mut rng, &mut dropped).unwrap().marked).collect();
        assert_eq!(marks, vec![true, true, false, false]);
    }

    #[test]
    fn the_classifier_sends_ect1_and_ce_to_the_l4s_queue() {
        let mut q = dualpi2(&spec());
        for (e, want) in
            [(Ecn::Ect1, DualQueue::L), (Ecn::Ce, DualQueue::L), (Ecn::Ect0, DualQueue::C), (Ecn::NotEct, DualQueue::C)]
        {
            assert_eq!(q.enqueue((0, 0), 0, 100, e), Ok(want), "{e:?}");
        }
        assert_eq!((q.l.q.len(), q.c.q.len()), (2, 2));
        // the limit: the queued bytes and an MTU
        let mut q: DualPi2<u32> = DualPi2::new(&spec(), Limit::Bytes(4500));
        assert!(q.enqueue(1, 0, 1500, Ecn::Ect1).is_ok());
        assert!(q.enqueue(2, 0, 1500, Ecn::NotEct).is_ok());
        assert!(q.enqueue(3, 0, 1500, Ecn::NotEct).is_ok());
        assert_eq!(q.enqueue(4, 0, 100, Ecn::Ect1), Err(4));
    }

    #[test]
    fn the_scheduler_gives_the_classic_queue_its_share_and_each_queue_the_link_alone() {
        let mut q = dualpi2(&spec());
        let mut rng = Rng::new(1);
        let mut dropped = Vec::new();
        for i in 0..1000 {
            q.enqueue((i, 0), 0, 1500, Ecn::Ect1).unwrap();
            q.enqueue((i, 0), 0, 1500, Ecn::NotEct).unwrap();
        }
        // no update runs before 15 ms: no AQM action, the scheduler alone
        let order: Vec<DualQueue> = (0..1000).map(|_| q.dequeue(MS, &mut rng, &mut dropped).unwrap().queue).collect();
        let classic = order.iter().filter(|&&x| x == DualQueue::C).count();
        assert_eq!(classic, 100, "10% of the bytes to the Classic queue");
        assert_eq!(order[..8], [DualQueue::L; 8], "the L4S queue first");
        // the Classic queue alone gets the link
        q.l.q.clear();
        assert!((0..10).all(|_| q.dequeue(MS, &mut rng, &mut dropped).unwrap().queue == DualQueue::C));
        assert!(dropped.is_empty());
    }

    /// A link of 1 ms per 1500-byte packet (12 Mbit/s) serving `q` until `until`, fed by
    /// open-loop flows (ECN codepoint, ns between packets). Per flow: packets sent, marked,
    /// dropped, the sum of their sojourns, and the sums of p_C and p_CL in force at its
    /// dequeues.
    fn open_loop(q: &mut DualPi2<(u32, u64)>, flows: &[(Ecn, u64)], until: u64) -> Vec<[f64; 6]> {
        let mut rng = Rng::new(7);
        let mut out = vec![[0.0; 6]; flows.len()];
        let mut next: Vec<u64> = vec![0; flows.len()];
        let mut dropped = Vec::new();
        let mut t = 0u64;
        while t < until {
            for (i, &(ecn, gap)) in flows.iter().enumerate() {
                while next[i] <= t {
                    if q.enqueue((i as u32, next[i]), next[i], 1500, ecn).is_err() {
                        out[i][2] += 1.0;
                    }
                    next[i] += gap;
                }
            }
            let sent = q.dequeue(t, &mut rng, &mut dropped);
            let (_, p_cl, p_c) = q.probabilities();
            for (p, _) in dropped.drain(..) {
                let f = &mut out[p.item.0 as usize];
                f[2] += 1.0;
                f[4] += p_c;
                f[5] += p_cl;
            }
            match sent {
                Some(p) => {
                    let f = &mut out[p.item.0 as usize];
                    f[0] += 1.0;
                    f[1] += p.marked as u8 as f64;
                    f[3] += (t - p.enqueued_ns) as f64;
                    f[4] += p_c;
                    f[5] += p_cl;
                    t += MS;
                }
                None => t = *next.iter().min().unwrap(),
            }
        }
        out
    }

    #[test]
    fn the_coupled_probabilities_hold_in_the_steady_state() {
        for random in [false, true] {
            let s = DualPi2Spec { random_draws: random, ..spec() };
            let mut q = dualpi2(&s);
            // an unresponsive Classic flow at the link's rate and an L4S one at a tenth of
            // it: the Classic flow must lose a tenth of its packets, so the controller
            // settles at p_C = 0.1, p' = 0.32, p_CL = 0.63
            let out = open_loop(&mut q, &[(Ecn::NotEct, MS), (Ecn::Ect1, 10 * MS)], 120_000 * MS);
            let (c, l) = (out[0], out[1]);
            let c_acted = c[0] + c[2];
            let drop_rate = c[2] / c_acted;
            let mark_rate = l[1] / l[0];
            // the rates the probabilities in force predicted, packet by packet
            let (want_c, want_l) = (c[4] / c_acted, l[5] / (l[0] + l[2]));
            // binomial sampling error with random draws (3 sigma); recur() is exact to a packet
            let tol = |p: f64, n: f64| if random { 3.0 * (p * (1.0 - p) / n).sqrt() } else { 1.5 / n };
            eprintln!(
                "random {random}: C drop rate {drop_rate:.4} (p_C {want_c:.4}), L mark rate {mark_rate:.4} \
                 (p_CL {want_l:.4}), p' {:.4}, C sojourn {:.2} ms, L sojourn {:.3} ms",
                q.p_prime,
                c[3] / c[0] / 1e6,
                l[3] / l[0] / 1e6
            );
            assert!((drop_rate - want_c).abs() <= tol(want_c, c_acted), "{drop_rate} vs {want_c}");
            assert!((mark_rate - want_l).abs() <= tol(want_l, l[0]), "{mark_rate} vs {want_l}");
            assert_eq!(c[1], 0.0, "not-ECT: dropped, never marked");
            assert_eq!(l[2], 0.0, "no L4S drop below overload");
            // the steady state itself: p_C = 0.1, p_CL = k sqrt(p_C)
            assert!((drop_rate - 0.1).abs() < 0.01, "{drop_rate}");
            assert!((mark_rate - 2.0 * 0.1f64.sqrt()).abs() < 0.05, "{mark_rate}");
            // the PI holds the Classic queue at its target; the L4S one waits a packet at most
            let c_sojourn = c[3] / c[0] / 1e6;
            assert!((c_sojourn - 15.0).abs() < 3.0, "{c_sojourn} ms");
            assert!(l[3] / l[0] / 1e6 <= 1.0);
        }
    }

    #[test]
    fn an_unresponsive_l4s_flow_over_the_link_rate_is_dropped_not_only_marked() {
        let mut q = dualpi2(&spec());
        // ECT(1) at 1.2 times the link: marks cannot slow it, so p' climbs until p_CL
        // saturates and the L4S queue reverts to Classic drops
        let out = open_loop(&mut q, &[(Ecn::Ect1, MS * 10 / 12)], 60_000 * MS);
        let l = out[0];
        let offered = l[0] + l[2];
        eprintln!(
            "overload: {} sent, {} marked, {} dropped ({:.3} of offered), sojourn {:.2} ms, p' {:.3}",
            l[0],
            l[1],
            l[2],
            l[2] / offered,
            l[3] / l[0] / 1e6,
            q.p_prime
        );
        // the link stays busy and the excess (1/6 of the offered load) is dropped
        assert!(l[0] >= 59_900.0, "{}", l[0]);
        assert!((l[2] / offered - 1.0 / 6.0).abs() < 0.01, "{}", l[2] / offered);
        assert!(l[1] > 0.5 * l[0], "the rest is marked: {}", l[1]);
        // the queue stays bounded (no tail drop: the 100k-packet limit is never near)
        assert!(l[3] / l[0] / 1e6 < 60.0, "{} ms", l[3] / l[0] / 1e6);
    }

    #[test]
    fn an_idle_spell_decays_p_prime_as_the_updates_would_one_by_one() {
        let s = spec();
        let mut a = dualpi2(&s);
        let mut b = dualpi2(&s);
        for q in [&mut a, &mut b] {
            q.enqueue((0, 0), 0, 1500, Ecn::NotEct).unwrap();
            q.p_prime = 0.5;
            q.c.q.clear();
            q.c.bytes = 0;
        }
        // idle until a packet at 2 s: the 133 updates by then see empty queues, p' falls by
        // alpha * target = 0.00225 at each
        a.enqueue((1, 0), 2_000 * MS, 1500, Ecn::NotEct).unwrap();
        a.catch_up(2_000 * MS);
        assert!((a.p_prime - (0.5 - 133.0 * 0.15 * 0.015)).abs() < 1e-12, "{}", a.p_prime);
        a.catch_up(2_100 * MS);
        // the same, update by update
        let mut next = b.next_update_ns.unwrap();
        b.enqueue((1, 0), 2_000 * MS, 1500, Ecn::NotEct).unwrap();
        while next <= 2_100 * MS {
            b.update(next);
            next += b.t_update_ns;
        }
        assert!((a.p_prime - b.p_prime).abs() < 1e-12, "{} vs {}", a.p_prime, b.p_prime);
        assert_eq!(a.next_update_ns, Some(next));
        // a longer spell ends at rest
        a.c.q.clear();
        a.catch_up(100_000 * MS);
        assert_eq!(a.probabilities(), (0.0, 0.0, 0.0));
    }
}
