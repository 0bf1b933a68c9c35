//! FQ-CoDel (RFC 8290): packets hashed by flow into queues, each under its own CoDel
//! (`codel_queue`), served by deficit round robin with a byte quantum, new queues ahead of old
//! ones (a sparse flow's packet waits for no bulk flow's queue). A full scheduler drops from
//! the head of its fattest queue. The RFC's defaults: 1024 queues, a 1514-byte quantum, a
//! limit of 10240 packets, CoDel's 5 ms target and 100 ms interval per queue.
//!
//! Unlike the FIFO disciplines this one cannot decide a packet's fate when it arrives: which
//! packet leaves next depends on the flows of the packets that arrive meanwhile. It is a
//! scheduler the link serves whenever it is free (`enqueue`, then `dequeue` at each moment
//! the link can send).

use std::collections::VecDeque;

use super::codel_queue::{CodelQueue, Out, Queued};
use crate::config_aqm::CoDelSpec;

pub const QUEUES: usize = 1024;
pub const QUANTUM: i64 = 1514;
pub const LIMIT_PACKETS: usize = 10_240;

#[derive(Clone, Copy, PartialEq, Eq)]
enum List {
    None,
    New,
    Old,
}

pub struct FqCodel<T> {
    queues: Vec<CodelQueue<T>>,
    deficit: Vec<i64>,
    list: Vec<List>,
    new_flows: VecDeque<usize>,
    old_flows: VecDeque<usize>,
    quantum: i64,
    limit: usize,
    packets: usize,
}

impl<T> FqCodel<T> {
    pub fn new(codel: &CoDelSpec, queues: usize, quantum: i64, limit: usize) -> Self {
        FqCodel {
            queues: (0..queues).map(|_| CodelQueue::new(codel)).collect(),
            deficit: vec![0; queues],
            list: vec![List::None; queues],
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            quantum,
            limit,
            packets: 0,
        }
    }

    pub fn queues(&self) -> usize {
        self.queues.len()
    }

    pub fn packets(&self) -> usize {
        self.packets
    }

    pub fn is_empty(&self) -> bool {
        self.packets == 0
    }

    /// Queue a packet of flow bucket `bucket` (its flow's hash modulo `queues()`); a packet
    /// the full scheduler drops (from its fattest queue) is appended to `dropped`.
    pub fn enqueue(&mut self, bucket: usize, item: T, now_ns: u64, len: u32, ect: bool, dropped: &mut Vec<Queued<T>>) {
        self.queues[bucket].push(item, now_ns, len, ect);
        self.packets += 1;
        if self.list[bucket] == List::None {
            self.list[bucket] = List::New;
            self.new_flows.push_back(bucket);
            self.deficit[bucket] = self.quantum;
        }
        if self.packets > self.limit {
            let fattest = (0..self.queues.len()).max_by_key(|&i| self.queues[i].bytes()).unwrap_or(bucket);
            if let Some(p) = self.queues[fattest].pop_head() {
                self.packets -= 1;
                dropped.push(p);
            }
        }
    }

    /// The next packet to send at `now_ns`, or None when every queue is empty; packets the
    /// queues' CoDel dropped on the way are appended to `dropped`.
    pub fn dequeue(&mut self, now_ns: u64, dropped: &mut Vec<Queued<T>>) -> Option<Out<T>> {
        loop {
            let (from_new, b) = match (self.new_flows.front(), self.old_flows.front()) {
                (Some(&b), _) => (true, b),
                (None, Some(&b)) => (false, b),
                (None, None) => return None,
            };
            if self.deficit[b] <= 0 {
                self.deficit[b] += self.quantum;
                self.pop_front(from_new);
                self.list[b] = List::Old;
                self.old_flows.push_back(b);
                continue;
            }
            let before = dropped.len();
            let out = self.queues[b].dequeue(now_ns, dropped);
            self.packets -= dropped.len() - before;
            match out {
                Some(p) => {
                    self.packets -= 1;
                    self.deficit[b] -= p.len as i64;
                    return Some(p);
                }
                None => {
                    // an emptied new queue goes behind the old ones once, so that it cannot
                    // take the link again at once; an emptied old queue leaves the rotation
                    self.pop_front(from_new);
                    if from_new && !self.old_flows.is_empty() {
                        self.list[b] = List::Old;
                        self.old_flows.push_back(b);
                    } else {
                        self.list[b] = List::None;
                    }
                }
            }
        }
    }

    fn pop_front(&mut self, from_new: bool) {
        if from_new {
            self.new_flows.pop_front();
        } else {
            self.old_flows.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn fq() -> FqCodel<(usize, u64)> {
        FqCodel::new(&CoDelSpec { target_ms: 5.0, interval_ms: 100.0, ecn: false }, QUEUES, QUANTUM, LIMIT_PACKETS)
    }

    /// A 12 Mbit/s link (1 ms per 1500 bytes) serving `fq` for `until` ns, fed by flows
    /// (bucket, packet bytes, ns between packets, first packet at). Returns per bucket the
    /// bytes sent and the sojourns of its packets.
    fn serve(fq: &mut FqCodel<(usize, u64)>, flows: &[(usize, u32, u64, u64)], until: u64) -> Vec<(u64, Vec<u64>)> {
        let mut out = vec![(0u64, Vec::new()); QUEUES];
        let mut next: Vec<u64> = flows.iter().map(|f| f.3).collect();
        let mut dropped = Vec::new();
        let mut t = 0u64;
        while t < until {
            for (i, &(bucket, len, gap, _)) in flows.iter().enumerate() {
                while next[i] <= t {
                    fq.enqueue(bucket, (bucket, next[i]), next[i], len, false, &mut dropped);
                    next[i] += gap;
                }
            }
            match fq.dequeue(t, &mut dropped) {
                Some(p) => {
                    let (bucket, at) = p.item;
                    out[bucket].0 += p.len as u64;
                    out[bucket].1.push(t - at);
                    t += p.len as u64 * MS / 1500;
                }
                None => t = *next.iter().min().unwrap(),
            }
        }
        out
    }

    #[test]
    fn a_sparse_flow_waits_for_no_bulk_queue() {
        let mut fq = fq();
        // a bulk flow at twice the link's rate, and a sparse one: 100 bytes every 50 ms
        let out = serve(&mut fq, &[(1, 1500, MS / 2, 0), (7, 100, 50 * MS, 3 * MS)], 3_000 * MS);
        let sparse = &out[7].1;
        assert!(sparse.len() >= 55, "{}", sparse.len());
        // each sparse packet waits at most for the packet on the link (1 ms), where the bulk
        // flow's own packets wait seconds (an unresponsive flow: its CoDel cannot hold it)
        assert!(sparse.iter().all(|&s| s <= MS), "{sparse:?}");
        let bulk = &out[1].1;
        assert!(bulk[bulk.len() - 1] > 100 * MS);
    }

    #[test]
    fn two_bulk_flows_share_by_bytes_whatever_their_packet_sizes() {
        let mut fq = fq();
        // both offer twice the link: one in 1500-byte packets, one in 500-byte ones
        let out = serve(&mut fq, &[(2, 1500, MS / 2, 0), (5, 500, MS / 6, 0)], 5_000 * MS);
        let (a, b) = (out[2].0 as f64, out[5].0 as f64);
        assert!((a / b - 1.0).abs() < 0.05, "bytes {a} vs {b}");
    }

    #[test]
    fn a_full_scheduler_drops_from_its_fattest_queue() {
        let mut fq: FqCodel<u32> =
            FqCodel::new(&CoDelSpec { target_ms: 5.0, interval_ms: 100.0, ecn: false }, QUEUES, QUANTUM, 10);
        let mut dropped = Vec::new();
        for i in 0..8 {
            fq.enqueue(3, i, 0, 1500, false, &mut dropped);
        }
        for i in 0..3 {
            fq.enqueue(9, 100 + i, 0, 1500, false, &mut dropped);
        }
        assert_eq!(fq.packets(), 10);
        assert_eq!(dropped.len(), 1);
        assert_eq!(dropped[0].item, 0); // the head of the fattest queue
    }
}
