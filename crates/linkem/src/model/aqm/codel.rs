//! CoDel (RFC 8289): drop (or mark) at dequeue once the queue's sojourn time has stayed above
//! `target` for a whole `interval`, then at intervals shrinking as interval / sqrt(count)
//! until the sojourn falls below target. The state machine is RFC 8289 §5's pseudo-code with
//! Linux's re-entry rule (the RFC's own choice, "more widely deployed and tested") and Linux's
//! ECN rule: a packet that can carry a mark is marked and forwarded instead of dropped, and
//! the next mark is scheduled at once.
//!
//! Run at each packet's dequeue time (see `super`). Two facts stand in for what only a real
//! dequeue sees:
//! - the queue ran empty before this packet (the RFC's "dequeue found nothing", which resets
//!   `first_above_time` and leaves the dropping state) when the packet arrived after the link
//!   had finished the last one it took;
//! - the RFC's `bytes() <= MAXPACKET` (too little left behind the packet to call it a
//!   standing queue) is read from the bytes ahead of the packet when it arrived.

use super::{drop_or_mark, Action, Arrival};
use crate::config_aqm::CoDelSpec;

/// CoDel's control state (RFC 8289 §5): whether the sojourn has been above target for an
/// interval, the dropping state, and the schedule of its drops. Shared by this emulation and
/// the dequeue-time queue (`codel_queue`), which differ only in when they consult it.
pub(crate) struct Control {
    target_ns: u64,
    interval_ns: u64,
    pub ecn: bool,
    /// The largest packet seen (the RFC's MAXPACKET, as Linux learns it).
    pub max_packet: u64,
    /// When the sojourn time will have been above target for an interval (0: it is not).
    first_above_ns: u64,
    pub drop_next_ns: u64,
    pub count: u32,
    last_count: u32,
    pub dropping: bool,
}

impl Control {
    pub fn new(s: &CoDelSpec) -> Self {
        Control {
            target_ns: (s.target_ms * 1e6) as u64,
            interval_ns: (s.interval_ms * 1e6) as u64,
            ecn: s.ecn,
            max_packet: 0,
            first_above_ns: 0,
            drop_next_ns: 0,
            count: 0,
            last_count: 0,
            dropping: false,
        }
    }

    pub fn control_law(&self, t_ns: u64, count: u32) -> u64 {
        t_ns + (self.interval_ns as f64 / (count.max(1) as f64).sqrt()) as u64
    }

    /// The RFC's `dodequeue` test for a packet leaving at `now_ns`: is its sojourn above
    /// target, with more than a packet left behind, and has it been for an interval?
    pub fn ok_to_drop(&mut self, now_ns: u64, sojourn_ns: u64, backlog_bytes: u64) -> bool {
        if sojourn_ns < self.target_ns || backlog_bytes <= self.max_packet {
            self.first_above_ns = 0;
            return false;
        }
        if self.first_above_ns == 0 {
            self.first_above_ns = now_ns + self.interval_ns;
            return false;
        }
        now_ns >= self.first_above_ns
    }

    /// The dequeue found the queue empty.
    pub fn emptied(&mut self) {
        self.first_above_ns = 0;
        self.dropping = false;
    }

    /// Enter the dropping state at `now_ns`, with the drop (or mark) just made: the count
    /// resumes near the last cycle's when the queue went above target again soon (the RFC's
    /// Linux variant), and the next drop is scheduled.
    pub fn enter(&mut self, now_ns: u64) {
        self.dropping = true;
        let delta = self.count.wrapping_sub(self.last_count);
        self.count = 1;
        let since_ns = now_ns as i128 - self.drop_next_ns as i128;
        if delta > 1 && delta < u32::MAX / 2 && since_ns < 16 * self.interval_ns as i128 {
            self.count = delta;
        }
        self.drop_next_ns = self.control_law(now_ns, self.count);
        self.last_count = self.count;
    }
}

pub struct CoDel {
    c: Control,
    /// A packet was dropped in the dropping state: the next drop is scheduled when the next
    /// packet dequeued is still above target (the RFC's loop), not before.
    reschedule: bool,
    /// The dropping state was just entered by a drop: the packet after it leaves whatever
    /// it sees (the RFC dequeues and returns it).
    entered: bool,
    /// When the link finished the last packet it took (or the last drop left it idle).
    free_ns: u64,
}

impl CoDel {
    pub fn new(s: &CoDelSpec) -> Self {
        CoDel { c: Control::new(s), reschedule: false, entered: false, free_ns: 0 }
    }

    pub fn decide(&mut self, a: &Arrival) -> Action {
        let c = &mut self.c;
        c.max_packet = c.max_packet.max(a.len as u64);
        if a.now_ns > self.free_ns {
            // the queue ran empty before this packet came: the dequeue found nothing
            c.emptied();
            self.reschedule = false;
            self.entered = false;
        }
        let now = a.start_ns;
        let ok = c.ok_to_drop(now, a.start_ns - a.now_ns, a.backlog_bytes);
        if std::mem::take(&mut self.entered) {
            return Action::Pass;
        }
        if c.dropping {
            if !ok {
                c.dropping = false;
                self.reschedule = false;
                return Action::Pass;
            }
            if std::mem::take(&mut self.reschedule) {
                c.drop_next_ns = c.control_law(c.drop_next_ns, c.count);
            }
            if now >= c.drop_next_ns {
                c.count += 1;
                let action = drop_or_mark(c.ecn, a);
                if action == Action::Mark {
                    c.drop_next_ns = c.control_law(c.drop_next_ns, c.count);
                } else {
                    self.reschedule = true;
                    self.free_ns = self.free_ns.max(now);
                }
                return action;
            }
            return Action::Pass;
        }
        if ok {
            let action = drop_or_mark(c.ecn, a);
            if action == Action::Drop {
                self.entered = true;
                self.free_ns = self.free_ns.max(now);
            }
            c.enter(now);
            return action;
        }
        Action::Pass
    }

    pub fn transmitted(&mut self, departure_ns: u64) {
        self.free_ns = departure_ns;
    }

    #[cfg(test)]
    fn dropping(&self) -> bool {
        self.c.dropping
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn codel(ecn: bool) -> CoDel {
        CoDel::new(&CoDelSpec { target_ms: 5.0, interval_ms: 100.0, ecn })
    }

    /// A standing queue from time 0: 1500-byte packets leave every `gap` ns, each having
    /// waited `wait` ns behind 30 KB. Returns the dequeue times of the packets dropped (or
    /// marked), counted from the first dequeue.
    fn standing(c: &mut CoDel, until_ns: u64, gap: u64, wait: u64, ect: bool) -> Vec<(u64, Action)> {
        let mut out = Vec::new();
        // dequeue times start at `wait`, so the first packet arrived at 0
        let mut t = wait;
        let until_ns = until_ns + wait;
        while t < until_ns {
            let a = Arrival {
                now_ns: t - wait,
                start_ns: t,
                departure_ns: t + gap,
                backlog_bytes: 30_000,
                len: 1500,
                ecn_capable: ect,
            };
            let act = c.decide(&a);
            if act == Action::Drop {
                out.push((t - wait, act));
                continue; // the next packet leaves at the same instant
            }
            if act == Action::Mark {
                out.push((t - wait, act));
            }
            c.transmitted(t + gap);
            t += gap;
        }
        out
    }

    #[test]
    fn no_drop_below_target_or_before_an_interval() {
        let mut c = codel(false);
        // 4 ms sojourn: never above target
        assert!(standing(&mut c, 2_000 * MS, MS, 4 * MS, false).is_empty());
        let mut c = codel(false);
        // 6 ms sojourn: the first drop comes one interval after the first packet above target
        let drops = standing(&mut c, 2_000 * MS, MS, 6 * MS, false);
        assert_eq!(drops[0].0, 100 * MS);
    }

    #[test]
    fn drops_follow_the_control_law() {
        // a queue that stays above target: drops at 100 ms, then interval / sqrt(count) apart
        let mut c = codel(false);
        let drops: Vec<u64> = standing(&mut c, 400 * MS, MS / 10, 20 * MS, false).iter().map(|d| d.0).collect();
        let mut want = vec![100 * MS];
        let mut next = 100 * MS;
        for count in 1..=5u32 {
            next += (100.0 * MS as f64 / (count as f64).sqrt()) as u64;
            want.push(next);
        }
        // each drop happens at the first dequeue at or after its scheduled time (0.1 ms apart)
        for (got, want) in drops.iter().zip(want.iter()) {
            assert!(*got >= *want && *got - *want <= MS / 10, "{drops:?} vs {want:?}");
        }
        assert!(drops.len() >= 5, "{drops:?}");
        assert!(c.dropping());
    }

    #[test]
    fn leaves_dropping_when_the_sojourn_falls_below_target() {
        let mut c = codel(false);
        standing(&mut c, 300 * MS, MS, 20 * MS, false);
        assert!(c.dropping());
        let a = Arrival {
            now_ns: 300 * MS - MS,
            start_ns: 300 * MS,
            departure_ns: 301 * MS,
            backlog_bytes: 30_000,
            len: 1500,
            ecn_capable: false,
        };
        assert_eq!(c.decide(&a), Action::Pass);
        assert!(!c.dropping());
    }

    #[test]
    fn an_empty_queue_resets_the_clock() {
        let mut c = codel(false);
        standing(&mut c, 300 * MS, MS, 20 * MS, false);
        assert!(c.dropping());
        // the link goes idle; a packet arrives after it finished the last one and waits 20 ms
        // for the link's next chance to send (a trace's next delivery opportunity)
        let mut t = 420 * MS;
        let a = Arrival {
            now_ns: 400 * MS,
            start_ns: t,
            departure_ns: t + MS,
            backlog_bytes: 30_000,
            len: 1500,
            ecn_capable: false,
        };
        assert_eq!(c.decide(&a), Action::Pass);
        assert!(!c.dropping());
        c.transmitted(t + MS);
        // above target from then on: no drop for an interval
        t += MS;
        while t < 520 * MS {
            let a = Arrival {
                now_ns: t - 20 * MS,
                start_ns: t,
                departure_ns: t + MS,
                backlog_bytes: 30_000,
                len: 1500,
                ecn_capable: false,
            };
            assert_eq!(c.decide(&a), Action::Pass, "at {t}");
            c.transmitted(t + MS);
            t += MS;
        }
    }

    #[test]
    fn too_little_behind_is_not_a_standing_queue() {
        // one packet's worth queued: a slow link's own serialization, not a queue to fight
        let mut c = codel(false);
        let mut t = 0;
        while t < 1_000 * MS {
            let a = Arrival {
                now_ns: t.saturating_sub(12 * MS),
                start_ns: t,
                departure_ns: t + 12 * MS,
                backlog_bytes: 1500,
                len: 1500,
                ecn_capable: false,
            };
            assert_eq!(c.decide(&a), Action::Pass);
            c.transmitted(t + 12 * MS);
            t += 12 * MS;
        }
    }

    #[test]
    fn ecn_capable_packets_are_marked_not_dropped() {
        let mut c = codel(true);
        let acts = standing(&mut c, 400 * MS, MS / 10, 20 * MS, true);
        assert!(acts.len() >= 5);
        assert!(acts.iter().all(|a| a.1 == Action::Mark));
        // same schedule as drops: the first at 100 ms, the second interval / sqrt(1) later
        assert_eq!(acts[0].0, 100 * MS);
        assert!(acts[1].0 >= 200 * MS && acts[1].0 <= 200 * MS + MS / 10);
        // not ECN-capable: dropped even with ECN on
        let mut c = codel(true);
        assert!(standing(&mut c, 400 * MS, MS / 10, 20 * MS, false).iter().all(|a| a.1 == Action::Drop));
    }

    #[test]
    fn reentry_resumes_near_the_last_drop_rate() {
        let mut c = codel(false);
        let first = standing(&mut c, 1_000 * MS, MS / 10, 20 * MS, false).len() as u32;
        assert!(first > 3);
        // below target briefly, then above again within 16 intervals
        let t0 = 1_000 * MS;
        let a = Arrival {
            now_ns: t0 - MS,
            start_ns: t0,
            departure_ns: t0 + MS,
            backlog_bytes: 30_000,
            len: 1500,
            ecn_capable: false,
        };
        c.decide(&a);
        c.transmitted(t0 + MS);
        assert!(!c.dropping());
        let mut t = t0 + MS;
        let mut dropped = false;
        while !dropped {
            let a = Arrival {
                now_ns: t - 20 * MS,
                start_ns: t,
                departure_ns: t + MS / 10,
                backlog_bytes: 30_000,
                len: 1500,
                ecn_capable: false,
            };
            dropped = c.decide(&a) == Action::Drop;
            if !dropped {
                c.transmitted(t + MS / 10);
                t += MS / 10;
            }
        }
        // count resumes at (count - lastcount), not 1
        assert!(c.c.count > 1, "count {}", c.c.count);
    }
}
