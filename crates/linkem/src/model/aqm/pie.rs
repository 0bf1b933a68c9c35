//! PIE (RFC 8033): drop (or mark) arriving packets at random with a probability that a
//! proportional-integral controller moves every `t_update` towards holding the queue delay
//! at `target`: p += alpha (qdelay - target) + beta (qdelay - qdelay_old), scaled down while
//! p is small (the RFC's auto-tuning), capped at 2% a step above 10%, decayed by 2% a step
//! while the queue stays empty, with a `max_burst` allowance after a quiet spell. ECN-capable
//! packets are marked instead while p <= `mark_ecn_threshold` (RFC 8033 §5.1).
//!
//! The queue delay is what a packet arriving at the update instant would wait: the time the
//! link needs to finish the packets it holds. That is the RFC's Little's-law estimate
//! (queue bytes / departure rate) with the departure rate known exactly, not estimated. The
//! timer is run lazily: each arrival first performs the updates due since the last one.
//! De-randomisation (the RFC's optional accumulated probability) is not done.

use super::{drop_or_mark, Action, Arrival};
use crate::config_aqm::PieSpec;
use crate::rng::Rng;

/// The RFC's MEAN_PKTSIZE: no early drop while at most two such packets are queued.
const MEAN_PACKET_BYTES: u64 = 1500;
/// Updates run per arrival at most; after a longer idle spell the controller has decayed
/// to rest (p falls by 2% a step: below 1e-6 of itself within 700 steps).
const MAX_CATCH_UP: u32 = 1_000;

pub struct Pie {
    target_s: f64,
    t_update_ns: u64,
    alpha: f64,
    beta: f64,
    max_burst_ns: u64,
    mark_threshold: f64,
    ecn: bool,
    pub(crate) drop_prob: f64,
    qdelay_old_s: f64,
    burst_allowance_ns: u64,
    next_update_ns: Option<u64>,
    /// When the link will have finished the packets it holds.
    link_free_ns: u64,
}

impl Pie {
    pub fn new(s: &PieSpec) -> Self {
        Pie {
            target_s: s.target_ms / 1e3,
            t_update_ns: (s.t_update_ms * 1e6) as u64,
            alpha: s.alpha,
            beta: s.beta,
            max_burst_ns: (s.max_burst_ms * 1e6) as u64,
            mark_threshold: s.mark_ecn_threshold,
            ecn: s.ecn,
            drop_prob: 0.0,
            qdelay_old_s: 0.0,
            burst_allowance_ns: (s.max_burst_ms * 1e6) as u64,
            next_update_ns: None,
            link_free_ns: 0,
        }
    }

    /// The RFC's `calculate_drop_prob`, at an update instant with queue delay `qdelay_s`.
    fn update(&mut self, qdelay_s: f64) {
        let mut p = self.alpha * (qdelay_s - self.target_s) + self.beta * (qdelay_s - self.qdelay_old_s);
        let scale = match self.drop_prob {
            d if d < 0.000001 => 1.0 / 2048.0,
            d if d < 0.00001 => 1.0 / 512.0,
            d if d < 0.0001 => 1.0 / 128.0,
            d if d < 0.001 => 1.0 / 32.0,
            d if d < 0.01 => 1.0 / 8.0,
            d if d < 0.1 => 1.0 / 2.0,
            _ => 1.0,
        };
        p *= scale;
        if self.drop_prob >= 0.1 && p > 0.02 {
            p = 0.02;
        }
        self.drop_prob += p;
        if qdelay_s == 0.0 && self.qdelay_old_s == 0.0 {
            self.drop_prob *= 0.98;
        }
        self.drop_prob = self.drop_prob.clamp(0.0, 1.0);
        self.burst_allowance_ns = self.burst_allowance_ns.saturating_sub(self.t_update_ns);
        let half = self.target_s / 2.0;
        if self.drop_prob == 0.0 && qdelay_s < half && self.qdelay_old_s < half {
            self.burst_allowance_ns = self.max_burst_ns;
        }
        self.qdelay_old_s = qdelay_s;
    }

    /// Run the updates due by `now_ns`.
    fn catch_up(&mut self, now_ns: u64) {
        let Some(mut next) = self.next_update_ns else {
            self.next_update_ns = Some(now_ns + self.t_update_ns);
            return;
        };
        let mut steps = 0;
        while next <= now_ns {
            if steps == MAX_CATCH_UP {
                // long idle: the controller is at rest; skip to the current period
                self.drop_prob = 0.0;
                self.qdelay_old_s = 0.0;
                self.burst_allowance_ns = self.max_burst_ns;
                next = now_ns + self.t_update_ns;
                break;
            }
            let qdelay_ns = self.link_free_ns.saturating_sub(next);
            self.update(qdelay_ns as f64 / 1e9);
            next += self.t_update_ns;
            steps += 1;
        }
        self.next_update_ns = Some(next);
    }

    pub fn decide(&mut self, a: &Arrival, rng: &mut Rng) -> Action {
        self.catch_up(a.now_ns);
        // the RFC's drop_early
        if self.burst_allowance_ns > 0 {
            return Action::Pass;
        }
        if self.qdelay_old_s < self.target_s / 2.0 && self.drop_prob < 0.2 {
            return Action::Pass;
        }
        if a.backlog_bytes <= 2 * MEAN_PACKET_BYTES {
            return Action::Pass;
        }
        if rng.unit() >= self.drop_prob {
            return Action::Pass;
        }
        drop_or_mark(self.ecn && self.drop_prob <= self.mark_threshold, a)
    }

    pub fn transmitted(&mut self, _start_ns: u64, departure_ns: u64) {
        self.link_free_ns = self.link_free_ns.max(departure_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn spec(ecn: bool) -> PieSpec {
        PieSpec {
            target_ms: 15.0,
            t_update_ms: 15.0,
            alpha: 0.125,
            beta: 1.25,
            max_burst_ms: 150.0,
            mark_ecn_threshold: 0.1,
            ecn,
        }
    }

    #[test]
    fn one_update_follows_the_rfc() {
        let mut p = Pie::new(&spec(false));
        // from rest, a 35 ms queue: (0.125 * 0.020 + 1.25 * 0.035) / 2048
        p.update(0.035);
        let want = (0.125 * 0.020 + 1.25 * 0.035) / 2048.0;
        assert!((p.drop_prob - want).abs() < 1e-15, "{}", p.drop_prob);
        // at 5%, the step is halved; at 30%, a big step is capped at 2%
        p.drop_prob = 0.05;
        p.qdelay_old_s = 0.035;
        p.update(0.035);
        assert!((p.drop_prob - (0.05 + 0.125 * 0.020 / 2.0)).abs() < 1e-12);
        p.drop_prob = 0.3;
        p.qdelay_old_s = 0.0;
        p.update(0.2);
        assert!((p.drop_prob - 0.32).abs() < 1e-12);
        // an empty queue decays it by 2% a step
        p.qdelay_old_s = 0.0;
        let before = p.drop_prob;
        p.update(0.0);
        let step = (0.125 * -0.015) * 1.0; // p >= 0.1: unscaled
        assert!((p.drop_prob - (before + step) * 0.98).abs() < 1e-12);
    }

    #[test]
    fn a_standing_queue_drives_the_probability_up_and_an_empty_one_back_down() {
        let mut p = Pie::new(&spec(false));
        // 60 ms of queue for 3 s of updates
        for i in 0..200u64 {
            let t = i * 15 * MS;
            p.link_free_ns = t + 60 * MS;
            p.catch_up(t);
        }
        let high = p.drop_prob;
        assert!(high > 0.05, "{high}");
        for i in 200..600u64 {
            p.catch_up(i * 15 * MS);
        }
        assert!(p.drop_prob < high / 100.0, "{}", p.drop_prob);
    }

    #[test]
    fn no_early_drop_during_the_burst_allowance_or_with_little_queued() {
        let mut p = Pie::new(&spec(false));
        let mut rng = Rng::new(1);
        p.catch_up(0);
        p.drop_prob = 1.0;
        p.qdelay_old_s = 0.1;
        let a = |now_ns, backlog_bytes| Arrival {
            now_ns,
            start_ns: now_ns,
            departure_ns: now_ns + MS,
            backlog_bytes,
            len: 1500,
            ecn_capable: false,
        };
        // the allowance starts at max_burst
        assert_eq!(p.decide(&a(MS, 100_000), &mut rng), Action::Pass);
        p.burst_allowance_ns = 0;
        assert_eq!(p.decide(&a(2 * MS, 3000), &mut rng), Action::Pass);
        assert_eq!(p.decide(&a(3 * MS, 100_000), &mut rng), Action::Drop);
    }

    #[test]
    fn drops_at_its_probability_and_marks_below_the_threshold() {
        let mut p = Pie::new(&spec(true));
        let mut rng = Rng::new(7);
        p.catch_up(0);
        p.burst_allowance_ns = 0;
        p.qdelay_old_s = 0.1;
        for (prob, ect) in [(0.05, true), (0.05, false), (0.3, true)] {
            let mut counts = [0u32; 3];
            for _ in 0..100_000 {
                p.drop_prob = prob;
                let a = Arrival {
                    now_ns: MS,
                    start_ns: MS,
                    departure_ns: 2 * MS,
                    backlog_bytes: 100_000,
                    len: 1500,
                    ecn_capable: ect,
                };
                counts[p.decide(&a, &mut rng) as usize] += 1;
            }
            let acted = (counts[1] + counts[2]) as f64 / 100_000.0;
            assert!((acted - prob).abs() < 0.005, "{prob}: {counts:?}");
            match (prob, ect) {
                (0.05, true) => assert_eq!(counts[1], 0, "marked, not dropped"),
                _ => assert_eq!(counts[2], 0, "dropped, not marked"),
            }
        }
    }
}
