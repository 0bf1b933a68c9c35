//! The bottleneck as a scheduler the link serves (FQ-CoDel, DualPI2), where FIFO disciplines
//! decide at arrival. Packets that passed the stages before the queue are enqueued with their
//! id, flow and ECN codepoint; the direction then serves the link up to the time its arrivals
//! are known: whenever the link is free, the discipline picks the next packet, the serializer
//! times it, the delay line gives its release. A packet dequeued at `t` could only have been
//! preceded by packets that arrived by `t`, so the link is never served past the last read of
//! the datapath.
//!
//! The direction reads its arrivals in batches (lazy reading, `crate::engine`), so a batch
//! can hold a packet that arrives after the link's next send. Such a packet waits here,
//! outside the discipline, until the link is served up to its arrival: the discipline sees
//! arrivals and dequeues in time order, as a real queue would, and never sends a packet
//! before it arrived.
//!
//! Which discipline runs is the direction's `aqm` (`Scheduled::new`); the engine and `Link`
//! see only `enqueue`, `serve` and what they report (`Served`).

use std::collections::VecDeque;
use std::hash::{Hash, Hasher};

use super::codel_queue::Queued;
use super::dualpi2::{self, DualPi2, DualQueue};
use super::fq_codel::{FqCodel, LIMIT_PACKETS};
use crate::config::{BufferLimit, DirectionProfile, RateSpec};
use crate::config_aqm::AqmSpec;
use crate::packet::{Ecn, FlowKey};
use crate::rng::Rng;

/// A packet in the scheduler: what the direction needs back when it leaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Item {
    pub id: u32,
    pub flow: u32,
    pub arrival_ns: u64,
    /// The middlebox rewrote it into a RST (its bytes are the direction's).
    pub rst: bool,
}

/// What serving the link did to one packet. `queue`: DualPI2's queue it was in (None for
/// FQ-CoDel).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Served {
    /// `at_ns`: its release (the departure until the delay line sets it, `Link::serve`).
    Release { item: Item, len: u32, start_ns: u64, departure_ns: u64, at_ns: u64, ce: bool, queue: Option<DualQueue> },
    /// Dropped by the AQM at dequeue, or (`full`) because the scheduler was full: FQ-CoDel
    /// drops from its fattest queue, DualPI2 the arriving packet.
    Drop { item: Item, full: bool, queue: Option<DualQueue> },
}

enum Discipline {
    FqCodel { fq: FqCodel<Item>, buckets: u64, hash_seed: u64, dropped: Vec<Queued<Item>> },
    DualPi2 { q: DualPi2<Item>, dropped: Vec<(Queued<Item>, DualQueue)> },
}

/// An arrival the discipline has not seen yet (see the module doc).
struct Pending {
    item: Item,
    /// FQ-CoDel's queue for its flow.
    bucket: usize,
    len: u32,
    ecn: Ecn,
}

pub struct Scheduled {
    discipline: Discipline,
    /// Arrivals after the link's next send, in arrival order.
    pending: VecDeque<Pending>,
    /// When the link next sends while the discipline holds packets: when it is free, or
    /// when the first packet of an idle spell arrived.
    next_send_ns: u64,
    link_free_ns: u64,
}

/// FNV-1a over the flow key: stable across runs and platforms, seeded per direction (the
/// RFC's perturbation), so two flows share a queue only by the hash's chance.
struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= *b as u64;
            self.0 = self.0.wrapping_mul(0x100_0000_01b3);
        }
    }
}

impl Scheduled {
    /// The direction's scheduler, None when its discipline (if any) is a FIFO's. The limit
    /// is the direction's buffer: FQ-CoDel counts packets (bytes / 1514 for a byte limit,
    /// the RFC's 10240 without one); DualPI2 takes either, and without one the RFC's 250 ms
    /// at the link's rate (a trace's mean rate).
    pub fn new(profile: &DirectionProfile, seed: u64) -> Option<Self> {
        let discipline = match profile.aqm.as_ref()? {
            AqmSpec::FqCodel(spec) => {
                let limit = match profile.buffer {
                    BufferLimit::Packets(p) => p as usize,
                    BufferLimit::Bytes(b) => (b as usize).div_ceil(1514).max(1),
                    BufferLimit::Unlimited => LIMIT_PACKETS,
                };
                Discipline::FqCodel {
                    fq: FqCodel::new(&spec.codel, spec.flows as usize, spec.quantum_bytes as i64, limit),
                    buckets: spec.flows as u64,
                    hash_seed: seed ^ 0xcbf2_9ce4_8422_2325,
                    dropped: Vec::new(),
                }
            }
            AqmSpec::DualPi2(spec) => {
                let limit = match profile.buffer {
                    BufferLimit::Packets(p) => dualpi2::Limit::Packets(p as usize),
                    BufferLimit::Bytes(b) => dualpi2::Limit::Bytes(b),
                    BufferLimit::Unlimited => {
                        let mbit = match &profile.rate {
                            RateSpec::Fixed { rate_mbit } => *rate_mbit,
                            RateSpec::Trace { mean_mbit, .. } => *mean_mbit,
                        };
                        let bytes = (mbit * 1e6 / 8.0 * 0.250) as u64;
                        dualpi2::Limit::Bytes(bytes.max(2 * dualpi2::MTU))
                    }
                };
                Discipline::DualPi2 { q: DualPi2::new(spec, limit), dropped: Vec::new() }
            }
            AqmSpec::CoDel(_) | AqmSpec::Pie(_) => return None,
        };
        Some(Scheduled { discipline, pending: VecDeque::new(), next_send_ns: 0, link_free_ns: 0 })
    }

    fn discipline_empty(&self) -> bool {
        match &self.discipline {
            Discipline::FqCodel { fq, .. } => fq.is_empty(),
            Discipline::DualPi2 { q, .. } => q.is_empty(),
        }
    }

    /// Queue a packet of flow `key` with ECN codepoint `ecn`; one the full scheduler drops
    /// goes to `out`.
    pub fn enqueue(&mut self, item: Item, key: &FlowKey, len: u32, ecn: Ecn, out: &mut Vec<Served>) {
        let bucket = match &self.discipline {
            Discipline::FqCodel { buckets, hash_seed, .. } => {
                let mut h = Fnv(*hash_seed);
                key.hash(&mut h);
                (h.finish() % buckets) as usize
            }
            Discipline::DualPi2 { .. } => 0,
        };
        let p = Pending { item, bucket, len, ecn };
        let empty = self.discipline_empty();
        if self.pending.is_empty() && (empty || item.arrival_ns <= self.next_send_ns) {
            if empty {
                self.next_send_ns = self.link_free_ns.max(item.arrival_ns);
            }
            self.admit(p, out);
        } else {
            self.pending.push_back(p);
        }
    }

    /// The discipline takes an arrival, at its arrival time.
    fn admit(&mut self, p: Pending, out: &mut Vec<Served>) {
        let now = p.item.arrival_ns;
        match &mut self.discipline {
            Discipline::FqCodel { fq, dropped, .. } => {
                fq.enqueue(p.bucket, p.item, now, p.len, p.ecn.capable(), dropped);
                out.extend(dropped.drain(..).map(|d| Served::Drop { item: d.item, full: true, queue: None }));
            }
            Discipline::DualPi2 { q, .. } => {
                if let Err(item) = q.enqueue(p.item, now, p.len, p.ecn) {
                    out.push(Served::Drop { item, full: true, queue: Some(DualQueue::of(p.ecn)) });
                }
            }
        }
    }

    /// When the link next sends, if anything is queued.
    pub fn next_send_ns(&self) -> Option<u64> {
        if !self.discipline_empty() {
            return Some(self.next_send_ns);
        }
        self.pending.front().map(|p| self.link_free_ns.max(p.item.arrival_ns))
    }

    /// Serve the link up to `until_ns` (every arrival before it is enqueued): `transmit`
    /// times a packet of `len` bytes the link starts at a time (start, departure); `rng`
    /// is the direction's AQM stream.
    pub fn serve(
        &mut self,
        until_ns: u64,
        mut transmit: impl FnMut(u64, u32) -> (u64, u64),
        rng: &mut Rng,
        out: &mut Vec<Served>,
    ) {
        while let Some(t) = self.next_send_ns() {
            if t > until_ns {
                break;
            }
            // the arrivals by then join the queues first
            while self.pending.front().is_some_and(|p| p.item.arrival_ns <= t) {
                let p = self.pending.pop_front().expect("checked");
                self.admit(p, out);
            }
            self.next_send_ns = t;
            let sent = match &mut self.discipline {
                Discipline::FqCodel { fq, dropped, .. } => {
                    let next = fq.dequeue(t, dropped);
                    out.extend(dropped.drain(..).map(|d| Served::Drop { item: d.item, full: false, queue: None }));
                    next.map(|p| (p.item, p.len, p.marked, None))
                }
                Discipline::DualPi2 { q, dropped } => {
                    let next = q.dequeue(t, rng, dropped);
                    out.extend(dropped.drain(..).map(|(d, queue)| Served::Drop {
                        item: d.item,
                        full: false,
                        queue: Some(queue),
                    }));
                    next.map(|p| (p.item, p.len, p.marked, Some(p.queue)))
                }
            };
            // nothing left to send (all dropped): the next arrival restarts the link
            let Some((item, len, ce, queue)) = sent else { continue };
            let (start_ns, departure_ns) = transmit(t, len);
            self.link_free_ns = departure_ns;
            self.next_send_ns = departure_ns;
            out.push(Served::Release { item, len, start_ns, departure_ns, at_ns: departure_ns, ce, queue });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::LinkConfig;
    use std::net::{IpAddr, Ipv4Addr};
    use std::path::Path;

    const MS: u64 = 1_000_000;

    fn key(sport: u16) -> FlowKey {
        let a = IpAddr::V4(Ipv4Addr::new(198, 18, 2, 2));
        FlowKey { proto: 17, src: a, dst: a, sport, dport: 443 }
    }

    /// The scheduler of a 12 Mbit/s direction: `extra` top-level keys, then the aqm table.
    fn sched(extra: &str, aqm: &str) -> Scheduled {
        let c = LinkConfig::parse(&format!("rate_mbit = 12\n{extra}[aqm]\n{aqm}\n"), "t.toml", Path::new(".")).unwrap();
        Scheduled::new(&c.up, 1).unwrap()
    }

    fn fq(extra: &str) -> Scheduled {
        sched(extra, "discipline = \"fq_codel\"")
    }

    fn item(id: u32, arrival_ns: u64) -> Item {
        Item { id, flow: 0, arrival_ns, rst: false }
    }

    #[test]
    fn the_link_is_served_only_up_to_the_known_arrivals_and_idles_between_them() {
        let mut s = fq("");
        let (mut out, mut rng) = (Vec::new(), Rng::new(1));
        // 1 ms per packet
        let tx = |t: u64, len: u32| (t, t + len as u64 * MS / 1500);
        for i in 0..3 {
            s.enqueue(Item { id: i, flow: 0, arrival_ns: 10 * MS, rst: false }, &key(1), 1500, Ecn::NotEct, &mut out);
        }
        s.serve(10 * MS, tx, &mut rng, &mut out);
        // only the first leaves by 10 ms (the link then busy until 11 ms)
        assert_eq!(out.len(), 1);
        assert_eq!(s.next_send_ns(), Some(11 * MS));
        s.serve(20 * MS, tx, &mut rng, &mut out);
        let starts: Vec<u64> = out
            .iter()
            .map(|o| match o {
                Served::Release { start_ns, .. } => *start_ns,
                Served::Drop { .. } => panic!(),
            })
            .collect();
        assert_eq!(starts, vec![10 * MS, 11 * MS, 12 * MS]);
        assert_eq!(s.next_send_ns(), None);
        // an arrival after an idle spell starts at its arrival
        out.clear();
        s.enqueue(Item { id: 9, flow: 0, arrival_ns: 50 * MS, rst: false }, &key(1), 1500, Ecn::NotEct, &mut out);
        s.serve(60 * MS, tx, &mut rng, &mut out);
        assert!(matches!(out[0], Served::Release { start_ns, .. } if start_ns == 50 * MS));
    }

    #[test]
    fn a_new_flows_packet_overtakes_a_bulk_queue() {
        let mut s = fq("");
        let (mut out, mut rng) = (Vec::new(), Rng::new(1));
        let tx = |t: u64, len: u32| (t, t + len as u64 * MS / 1500);
        for i in 0..50 {
            s.enqueue(Item { id: i, flow: 0, arrival_ns: 0, rst: false }, &key(1), 1500, Ecn::NotEct, &mut out);
        }
        s.serve(5 * MS, tx, &mut rng, &mut out);
        s.enqueue(Item { id: 100, flow: 1, arrival_ns: 5 * MS, rst: false }, &key(2), 100, Ecn::NotEct, &mut out);
        s.serve(9 * MS, tx, &mut rng, &mut out);
        let ids: Vec<u32> = out
            .iter()
            .filter_map(|o| match o {
                Served::Release { item, .. } => Some(item.id),
                Served::Drop { .. } => None,
            })
            .collect();
        // the bulk flow's first packets, then the sparse one as soon as the link is free
        let at = ids.iter().position(|&i| i == 100).unwrap();
        assert!(at <= 7, "{ids:?}");
    }

    #[test]
    fn a_full_scheduler_drops_and_says_so() {
        let mut s = fq("buffer_packets = 4\n");
        let mut out = Vec::new();
        for i in 0..6 {
            s.enqueue(Item { id: i, flow: 0, arrival_ns: 0, rst: false }, &key(1), 1500, Ecn::NotEct, &mut out);
        }
        let full: Vec<u32> = out
            .iter()
            .filter_map(|o| match o {
                Served::Drop { item, full: true, .. } => Some(item.id),
                _ => None,
            })
            .collect();
        assert_eq!(full, vec![0, 1]);
    }

    #[test]
    fn a_packet_read_in_a_batch_is_never_sent_before_it_arrived() {
        for aqm in ["discipline = \"fq_codel\"", "discipline = \"dualpi2\""] {
            let mut s = sched("", aqm);
            let (mut out, mut rng) = (Vec::new(), Rng::new(1));
            let tx = |t: u64, len: u32| (t, t + len as u64 * MS / 1500);
            // one read brings two packets: one at 0, one at 5 ms, after the link has sent
            // the first (done at 1 ms) and idled
            s.enqueue(item(1, 0), &key(1), 1500, Ecn::NotEct, &mut out);
            s.enqueue(item(2, 5 * MS), &key(1), 1500, Ecn::NotEct, &mut out);
            assert_eq!(s.next_send_ns(), Some(0));
            s.serve(3 * MS, tx, &mut rng, &mut out);
            assert_eq!(s.next_send_ns(), Some(5 * MS), "{aqm}");
            s.serve(10 * MS, tx, &mut rng, &mut out);
            let starts: Vec<(u32, u64)> = out
                .iter()
                .map(|o| match o {
                    Served::Release { item, start_ns, .. } => (item.id, *start_ns),
                    Served::Drop { .. } => panic!(),
                })
                .collect();
            assert_eq!(starts, vec![(1, 0), (2, 5 * MS)], "{aqm}");
        }
    }

    #[test]
    fn dualpi2_serves_its_l4s_queue_first_and_says_which_queue() {
        let mut s = sched("buffer_packets = 11\n", "discipline = \"dualpi2\"");
        let (mut out, mut rng) = (Vec::new(), Rng::new(1));
        let tx = |t: u64, len: u32| (t, t + len as u64 * MS / 1500);
        for i in 0..10 {
            s.enqueue(item(i, 0), &key(1), 1500, Ecn::NotEct, &mut out);
        }
        // at 0.5 ms, while the first Classic packet is on the link, three L4S packets arrive:
        // the 11-packet buffer takes two
        s.serve(MS / 2, tx, &mut rng, &mut out);
        for i in 0..3 {
            s.enqueue(item(100 + i, MS / 2), &key(2), 1500, Ecn::Ect1, &mut out);
        }
        s.serve(20 * MS, tx, &mut rng, &mut out);
        let order: Vec<(u32, Option<DualQueue>, bool)> = out
            .iter()
            .map(|o| match o {
                Served::Release { item, queue, .. } => (item.id, *queue, false),
                Served::Drop { item, queue, full } => (item.id, *queue, *full),
            })
            .collect();
        assert_eq!(order[0], (0, Some(DualQueue::C), false));
        assert_eq!(order[1], (102, Some(DualQueue::L), true), "the full buffer's tail drop");
        assert_eq!(order[2..4], [(100, Some(DualQueue::L), false), (101, Some(DualQueue::L), false)]);
        assert_eq!(order.len(), 13);
        assert_eq!(s.next_send_ns(), None);
    }
}
