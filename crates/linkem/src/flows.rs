//! Per-flow counters of one direction, keyed by 5-tuple.
//!
//! Flows get a dense index on first sight so the hot path updates a `Vec` slot; the map is
//! only consulted once per packet with a cheap hash (FxHash-style, no SipHash: the keys come
//! from our own testbed, not an adversary).

use crate::packet::FlowKey;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct FlowCounters {
    /// Packets and IP bytes forwarded (ACCEPT verdicts sent).
    pub packets: u64,
    pub bytes: u64,
    pub dropped_loss: u64,
    pub dropped_buffer: u64,
    pub dropped_middlebox: u64,
    /// Dropped at the NAT: for an external end with no live binding.
    pub dropped_nat: u64,
    /// Dropped because its path was down (`crate::handover`).
    pub dropped_path_down: u64,
    /// Dropped by the AQM discipline (`model::aqm`) before the buffer was full.
    pub dropped_aqm: u64,
    /// Forwarded with CE set by the AQM discipline.
    pub ce_marked: u64,
    /// Arrived with the IP ECN field ECT(0), ECT(1), CE (before the middlebox; not-ECT is
    /// the rest): what the sender (or a box upstream) marked.
    pub ect0_seen: u64,
    pub ect1_seen: u64,
    pub ce_seen: u64,
    /// UDP packets seen (any fate), for `block_udp_after_packets`.
    pub udp_seen: u64,
    /// Time in the bottleneck (waiting + own serialization), over scheduled packets.
    pub queue_delay_sum_ns: u64,
    pub queue_delay_max_ns: u64,
    pub scheduled: u64,
    /// Time waiting in the buffer (arrival to the start of transmission), per packet scheduled.
    pub sojourn: crate::sojourn::Sojourn,
    pub sojourn_interval_max: crate::sojourn::IntervalMax,
    /// The middlebox's per-flow state (flow choice, QUIC and TCP progress, RSTs made).
    pub mb: crate::model::middlebox::FlowMiddlebox,
}

impl FlowCounters {
    pub fn queue_delay_mean_ms(&self) -> f64 {
        if self.scheduled == 0 {
            0.0
        } else {
            self.queue_delay_sum_ns as f64 / self.scheduled as f64 / 1e6
        }
    }
}

#[derive(Default)]
pub struct FxHasher {
    hash: u64,
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut v = [0u8; 8];
            v[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_ne_bytes(v));
        }
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.hash = (self.hash.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.write_u64(i as u64)
    }
    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.write_u64(i as u64)
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.write_u64(i as u64)
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64)
    }
    fn finish(&self) -> u64 {
        self.hash
    }
}

pub struct FlowTable {
    index: HashMap<FlowKey, u32, BuildHasherDefault<FxHasher>>,
    pub keys: Vec<FlowKey>,
    pub counters: Vec<FlowCounters>,
    /// Cache of the last flow seen: bulk transfers hit it almost always.
    last: Option<(FlowKey, u32)>,
}

impl Default for FlowTable {
    fn default() -> Self {
        FlowTable {
            index: HashMap::with_capacity_and_hasher(1024, Default::default()),
            keys: Vec::with_capacity(1024),
            counters: Vec::with_capacity(1024),
            last: None,
        }
    }
}

impl FlowTable {
    #[inline]
    pub fn index_of(&mut self, key: &FlowKey) -> u32 {
        if let Some((k, i)) = self.last {
            if k == *key {
                return i;
            }
        }
        let i = match self.index.get(key) {
            Some(&i) => i,
            None => {
                let i = self.keys.len() as u32;
                self.index.insert(*key, i);
                self.keys.push(*key);
                self.counters.push(FlowCounters::default());
                i
            }
        };
        self.last = Some((*key, i));
        i
    }

    #[inline]
    pub fn get_mut(&mut self, i: u32) -> &mut FlowCounters {
        &mut self.counters[i as usize]
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// After a publish: the next interval's maxima start afresh.
    pub fn restart_sojourn_intervals(&mut self) {
        for c in &mut self.counters {
            c.sojourn_interval_max = Default::default();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_indices_per_five_tuple() {
        let a = "198.18.1.2".parse().unwrap();
        let b = "198.18.2.2".parse().unwrap();
        let k1 = FlowKey { proto: 6, src: a, dst: b, sport: 1, dport: 2 };
        let k2 = FlowKey { proto: 17, ..k1 };
        let mut t = FlowTable::default();
        assert_eq!(t.index_of(&k1), 0);
        assert_eq!(t.index_of(&k2), 1);
        assert_eq!(t.index_of(&k1), 0);
        t.get_mut(1).packets += 1;
        assert_eq!(t.counters[1].packets, 1);
        assert_eq!(t.len(), 2);
    }
}
