//! A packet queue under CoDel run at dequeue, as RFC 8289 §5's pseudo-code runs it (with
//! Linux's re-entry and ECN rules): the queue FQ-CoDel keeps per flow (`fq_codel`), and the
//! reference the arrival-time emulation of a CoDel FIFO (`codel`) is checked against. Unlike
//! that emulation it holds the packets, so it sees the backlog each dequeue leaves behind.

use std::collections::VecDeque;

use super::codel::Control;
use crate::config_aqm::CoDelSpec;

#[derive(Debug)]
pub struct Queued<T> {
    pub item: T,
    pub enqueued_ns: u64,
    pub len: u32,
    /// ECN-capable: may be marked instead of dropped.
    pub ect: bool,
}

/// A packet leaving the queue.
#[derive(Debug)]
pub struct Out<T> {
    pub item: T,
    pub len: u32,
    pub enqueued_ns: u64,
    pub marked: bool,
}

pub struct CodelQueue<T> {
    q: VecDeque<Queued<T>>,
    bytes: u64,
    c: Control,
}

impl<T> CodelQueue<T> {
    pub fn new(s: &CoDelSpec) -> Self {
        CodelQueue { q: VecDeque::new(), bytes: 0, c: Control::new(s) }
    }

    pub fn push(&mut self, item: T, now_ns: u64, len: u32, ect: bool) {
        self.c.max_packet = self.c.max_packet.max(len as u64);
        self.bytes += len as u64;
        self.q.push_back(Queued { item, enqueued_ns: now_ns, len, ect });
    }

    pub fn len(&self) -> usize {
        self.q.len()
    }

    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Take the packet at the head without CoDel (a full FQ-CoDel drops from its fattest
    /// queue's head).
    pub fn pop_head(&mut self) -> Option<Queued<T>> {
        let p = self.q.pop_front()?;
        self.bytes -= p.len as u64;
        Some(p)
    }

    /// The RFC's `dodequeue`: the head packet, and whether CoDel may drop it.
    fn dodequeue(&mut self, now_ns: u64) -> (Option<Queued<T>>, bool) {
        let Some(p) = self.pop_head() else {
            self.c.emptied();
            return (None, false);
        };
        let ok = self.c.ok_to_drop(now_ns, now_ns.saturating_sub(p.enqueued_ns), self.bytes);
        (Some(p), ok)
    }

    /// The RFC's `dequeue` at `now_ns`: the packet to send (marked CE when CoDel marks it),
    /// the packets CoDel dropped on the way appended to `dropped`.
    pub fn dequeue(&mut self, now_ns: u64, dropped: &mut Vec<Queued<T>>) -> Option<Out<T>> {
        let (mut r, mut ok) = self.dodequeue(now_ns);
        r.as_ref()?;
        let c = &mut self.c;
        if c.dropping {
            if !ok {
                c.dropping = false;
            }
            while self.c.dropping && now_ns >= self.c.drop_next_ns {
                self.c.count += 1;
                let p = r.take()?;
                if self.c.ecn && p.ect {
                    self.c.drop_next_ns = self.c.control_law(self.c.drop_next_ns, self.c.count);
                    return Some(Out { item: p.item, len: p.len, enqueued_ns: p.enqueued_ns, marked: true });
                }
                dropped.push(p);
                (r, ok) = self.dodequeue(now_ns);
                if ok {
                    self.c.drop_next_ns = self.c.control_law(self.c.drop_next_ns, self.c.count);
                } else {
                    self.c.dropping = false;
                }
            }
        } else if ok {
            let p = r.take()?;
            let marked = c.ecn && p.ect;
            if marked {
                r = Some(p);
            } else {
                dropped.push(p);
                r = self.dodequeue(now_ns).0;
            }
            self.c.enter(now_ns);
            return r.map(|p| Out { item: p.item, len: p.len, enqueued_ns: p.enqueued_ns, marked });
        }
        r.map(|p| Out { item: p.item, len: p.len, enqueued_ns: p.enqueued_ns, marked: false })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::aqm::codel::CoDel;
    use crate::model::aqm::{Action, Arrival};

    const MS: u64 = 1_000_000;

    fn spec(ecn: bool) -> CoDelSpec {
        CoDelSpec { target_ms: 5.0, interval_ms: 100.0, ecn }
    }

    /// A link of `gap` ns per 1500-byte packet fed by arrivals at `arrivals` (ns, sorted):
    /// the dequeue-time queue, served whenever the link is free. Returns the arrival index
    /// of each packet dropped and the sojourn of each sent.
    fn served(arrivals: &[u64], gap: u64) -> (Vec<usize>, Vec<u64>) {
        let mut q: CodelQueue<usize> = CodelQueue::new(&spec(false));
        let (mut dropped, mut sojourns) = (Vec::new(), Vec::new());
        let mut out = Vec::new();
        let (mut next, mut free) = (0usize, 0u64);
        loop {
            // every packet that arrived by the time the link is free is queued first
            let t = if q.is_empty() { arrivals.get(next).copied().map_or(free, |a| a.max(free)) } else { free };
            while next < arrivals.len() && arrivals[next] <= t {
                q.push(next, arrivals[next], 1500, false);
                next += 1;
            }
            if q.is_empty() && next >= arrivals.len() {
                break;
            }
            match q.dequeue(t, &mut out) {
                Some(p) => {
                    sojourns.push(t - p.enqueued_ns);
                    free = t + gap;
                }
                None => free = t,
            }
            dropped.extend(out.drain(..).map(|p| p.item));
        }
        dropped.sort_unstable();
        (dropped, sojourns)
    }

    /// The same arrivals through the arrival-time emulation (`codel::CoDel` on a FIFO).
    fn emulated(arrivals: &[u64], gap: u64) -> (Vec<usize>, Vec<u64>) {
        let mut c = CoDel::new(&spec(false));
        let (mut dropped, mut sojourns) = (Vec::new(), Vec::new());
        let (mut free, mut held): (u64, VecDeque<(u64, u64)>) = (0, VecDeque::new());
        for (i, &a) in arrivals.iter().enumerate() {
            while held.front().is_some_and(|&(dep, _)| dep <= a) {
                held.pop_front();
            }
            let start = free.max(a);
            let backlog = held.iter().map(|&(_, len)| len).sum();
            let arrival = Arrival {
                now_ns: a,
                start_ns: start,
                departure_ns: start + gap,
                backlog_bytes: backlog,
                len: 1500,
                ecn_capable: false,
            };
            if c.decide(&arrival) == Action::Drop {
                dropped.push(i);
                continue;
            }
            c.transmitted(start + gap);
            held.push_back((start + gap, 1500));
            sojourns.push(start - a);
            free = start + gap;
        }
        (dropped, sojourns)
    }

    #[test]
    fn the_arrival_time_emulation_drops_like_the_real_queue() {
        // 12 Mbit/s (1 ms per packet); arrivals at 1.2 per ms for 2 s, then 0.5 per ms for
        // 1 s (the queue drains), then 1.1 per ms for 3 s
        let mut arrivals = Vec::new();
        let mut t = 0u64;
        for (until, gap) in [(2_000 * MS, MS * 10 / 12), (3_000 * MS, 2 * MS), (6_000 * MS, MS * 10 / 11)] {
            while t < until {
                arrivals.push(t);
                t += gap;
            }
        }
        let (real_drops, real_sojourn) = served(&arrivals, MS);
        let (emu_drops, emu_sojourn) = emulated(&arrivals, MS);
        let mean = |v: &[u64]| v.iter().sum::<u64>() as f64 / v.len() as f64 / 1e6;
        // drop counts within 5%, mean sojourns within 10% (the real queue sees the backlog
        // behind a packet, the emulation the one ahead of it)
        let (r, e) = (real_drops.len() as f64, emu_drops.len() as f64);
        eprintln!(
            "drops real {r} emulated {e}; mean sojourn real {:.2} ms emulated {:.2} ms",
            mean(&real_sojourn),
            mean(&emu_sojourn)
        );
        assert!(r > 50.0 && (r - e).abs() / r < 0.05, "drops: real {r}, emulated {e}");
        let (rs, es) = (mean(&real_sojourn), mean(&emu_sojourn));
        assert!((rs - es).abs() / rs < 0.10, "mean sojourn: real {rs:.2} ms, emulated {es:.2} ms");
    }

    #[test]
    fn marks_instead_of_drops_when_ect() {
        let mut q: CodelQueue<u32> = CodelQueue::new(&spec(true));
        let mut dropped = Vec::new();
        // a standing queue of 20 packets, 1 ms apart at dequeue, each waited 20 ms
        let mut marks = 0;
        for i in 0..20u64 {
            q.push(i as u32, 0, 1500, true);
        }
        for i in 0..400u64 {
            let now = 20 * MS + i * MS;
            q.push((20 + i) as u32, now, 1500, true);
            let p = q.dequeue(now, &mut dropped).unwrap();
            marks += p.marked as u32;
        }
        assert!(dropped.is_empty());
        assert!(marks >= 3, "{marks}");
    }
}
