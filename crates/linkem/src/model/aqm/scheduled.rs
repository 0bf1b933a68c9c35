//! The bottleneck as a scheduler the link serves (FQ-CoDel), where FIFO disciplines decide
//! at arrival. Packets that passed the stages before the queue are enqueued with their id and
//! flow; the direction then serves the link up to the time its arrivals are known: whenever
//! the link is free, the scheduler picks the next packet, the serializer times it, the delay
//! line gives its release. A packet dequeued at `t` could only have been preceded by packets
//! that arrived by `t`, so the link is never served past the last read of the datapath.

use std::hash::{Hash, Hasher};

use super::codel_queue::Queued;
use super::fq_codel::{FqCodel, LIMIT_PACKETS};
use crate::config::BufferLimit;
use crate::config_aqm::FqCodelSpec;
use crate::packet::FlowKey;

/// A packet in the scheduler: what the direction needs back when it leaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Item {
    pub id: u32,
    pub flow: u32,
    pub arrival_ns: u64,
    /// The middlebox rewrote it into a RST (its bytes are the direction's).
    pub rst: bool,
}

/// What serving the link did to one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Served {
    /// `at_ns`: its release (the departure until the delay line sets it, `Link::serve`).
    Release { item: Item, len: u32, start_ns: u64, departure_ns: u64, at_ns: u64, ce: bool },
    /// Dropped by its queue's CoDel at dequeue, or from the fattest queue when full.
    Drop { item: Item, full: bool },
}

pub struct Scheduled {
    fq: FqCodel<Item>,
    buckets: u64,
    hash_seed: u64,
    /// When the link can next send: when it is free, or when the first packet of an idle
    /// spell arrived.
    next_send_ns: u64,
    link_free_ns: u64,
    dropped: Vec<Queued<Item>>,
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
    /// `limit`: the direction's buffer, in packets (bytes / 1514 for a byte limit; the RFC's
    /// 10240 without one).
    pub fn new(spec: &FqCodelSpec, limit: BufferLimit, seed: u64) -> Self {
        let limit = match limit {
            BufferLimit::Packets(p) => p as usize,
            BufferLimit::Bytes(b) => (b as usize).div_ceil(1514).max(1),
            BufferLimit::Unlimited => LIMIT_PACKETS,
        };
        Scheduled {
            fq: FqCodel::new(&spec.codel, spec.flows as usize, spec.quantum_bytes as i64, limit),
            buckets: spec.flows as u64,
            hash_seed: seed ^ 0xcbf2_9ce4_8422_2325,
            next_send_ns: 0,
            link_free_ns: 0,
            dropped: Vec::new(),
        }
    }

    fn bucket(&self, key: &FlowKey) -> usize {
        let mut h = Fnv(self.hash_seed);
        key.hash(&mut h);
        (h.finish() % self.buckets) as usize
    }

    /// Queue a packet; one the full scheduler drops (from its fattest queue) goes to `out`.
    pub fn enqueue(&mut self, item: Item, key: &FlowKey, len: u32, ect: bool, out: &mut Vec<Served>) {
        if self.fq.is_empty() {
            self.next_send_ns = self.link_free_ns.max(item.arrival_ns);
        }
        let b = self.bucket(key);
        self.fq.enqueue(b, item, item.arrival_ns, len, ect, &mut self.dropped);
        out.extend(self.dropped.drain(..).map(|p| Served::Drop { item: p.item, full: true }));
    }

    /// When the link next sends, if anything is queued.
    pub fn next_send_ns(&self) -> Option<u64> {
        (!self.fq.is_empty()).then_some(self.next_send_ns)
    }

    /// Serve the link up to `until_ns` (every arrival before it is enqueued): `transmit`
    /// times a packet of `len` bytes the link starts at a time (start, departure).
    pub fn serve(&mut self, until_ns: u64, mut transmit: impl FnMut(u64, u32) -> (u64, u64), out: &mut Vec<Served>) {
        while !self.fq.is_empty() && self.next_send_ns <= until_ns {
            let t = self.next_send_ns;
            let next = self.fq.dequeue(t, &mut self.dropped);
            out.extend(self.dropped.drain(..).map(|p| Served::Drop { item: p.item, full: false }));
            let Some(p) = next else { break };
            let (start_ns, departure_ns) = transmit(t, p.len);
            self.link_free_ns = departure_ns;
            self.next_send_ns = departure_ns;
            out.push(Served::Release {
                item: p.item,
                len: p.len,
                start_ns,
                departure_ns,
                at_ns: departure_ns,
                ce: p.marked,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config_aqm::CoDelSpec;
    use std::net::{IpAddr, Ipv4Addr};

    const MS: u64 = 1_000_000;

    fn key(sport: u16) -> FlowKey {
        let a = IpAddr::V4(Ipv4Addr::new(198, 18, 2, 2));
        FlowKey { proto: 17, src: a, dst: a, sport, dport: 443 }
    }

    fn spec() -> FqCodelSpec {
        FqCodelSpec {
            codel: CoDelSpec { target_ms: 5.0, interval_ms: 100.0, ecn: false },
            quantum_bytes: 1514,
            flows: 1024,
        }
    }

    #[test]
    fn the_link_is_served_only_up_to_the_known_arrivals_and_idles_between_them() {
        let mut s = Scheduled::new(&spec(), BufferLimit::Unlimited, 1);
        let mut out = Vec::new();
        // 1 ms per packet
        let tx = |t: u64, len: u32| (t, t + len as u64 * MS / 1500);
        for i in 0..3 {
            s.enqueue(Item { id: i, flow: 0, arrival_ns: 10 * MS, rst: false }, &key(1), 1500, false, &mut out);
        }
        s.serve(10 * MS, tx, &mut out);
        // only the first leaves by 10 ms (the link then busy until 11 ms)
        assert_eq!(out.len(), 1);
        assert_eq!(s.next_send_ns(), Some(11 * MS));
        s.serve(20 * MS, tx, &mut out);
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
        s.enqueue(Item { id: 9, flow: 0, arrival_ns: 50 * MS, rst: false }, &key(1), 1500, false, &mut out);
        s.serve(60 * MS, tx, &mut out);
        assert!(matches!(out[0], Served::Release { start_ns, .. } if start_ns == 50 * MS));
    }

    #[test]
    fn a_new_flows_packet_overtakes_a_bulk_queue() {
        let mut s = Scheduled::new(&spec(), BufferLimit::Unlimited, 1);
        let mut out = Vec::new();
        let tx = |t: u64, len: u32| (t, t + len as u64 * MS / 1500);
        for i in 0..50 {
            s.enqueue(Item { id: i, flow: 0, arrival_ns: 0, rst: false }, &key(1), 1500, false, &mut out);
        }
        s.serve(5 * MS, tx, &mut out);
        s.enqueue(Item { id: 100, flow: 1, arrival_ns: 5 * MS, rst: false }, &key(2), 100, false, &mut out);
        s.serve(9 * MS, tx, &mut out);
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
        let mut s = Scheduled::new(&spec(), BufferLimit::Packets(4), 1);
        let mut out = Vec::new();
        for i in 0..6 {
            s.enqueue(Item { id: i, flow: 0, arrival_ns: 0, rst: false }, &key(1), 1500, false, &mut out);
        }
        let full: Vec<u32> = out
            .iter()
            .filter_map(|o| match o {
                Served::Drop { item, full: true } => Some(item.id),
                _ => None,
            })
            .collect();
        assert_eq!(full, vec![0, 1]);
    }
}
