//! Middlebox policies on UDP, applied before loss and the buffer (the middlebox sits in
//! front of the bottleneck). TCP and other protocols always pass.
//!
//! - `block_udp`: every UDP packet is dropped.
//! - `block_udp_after_packets = N`: the first N UDP packets of a flow (5-tuple, this
//!   direction) pass, later ones are dropped (counted on arrival, dropped ones included).
//! - `udp_rate_mbit = R`: a token bucket policer over all UDP of the direction, filled at R
//!   and `udp_burst_bytes` deep (0 = max(3000 bytes, 10 ms at R)), starting full; a packet
//!   that finds fewer tokens than its IP length is dropped and takes no tokens.
//! - `max_udp_datagram = M`: UDP packets with IP total length > M are dropped.

use crate::config::MiddleboxSpec;
use crate::packet::PacketInfo;

#[derive(Debug, Clone)]
pub struct Middlebox {
    spec: MiddleboxSpec,
    bytes_per_ns: f64,
    depth: f64,
    tokens: f64,
    last_ns: u64,
}

impl Middlebox {
    pub fn new(spec: &MiddleboxSpec) -> Self {
        let bytes_per_ns = spec.udp_rate_mbit * 1e6 / 8.0 / 1e9;
        let depth = if spec.udp_burst_bytes > 0 {
            spec.udp_burst_bytes as f64
        } else {
            (bytes_per_ns * 10e6).max(3000.0)
        };
        Middlebox { spec: spec.clone(), bytes_per_ns, depth, tokens: depth, last_ns: 0 }
    }

    pub fn is_active(&self) -> bool {
        let s = &self.spec;
        s.block_udp || s.block_udp_after_packets > 0 || s.udp_rate_mbit > 0.0 || s.max_udp_datagram > 0
    }

    /// Whether the packet passes. `udp_seen_in_flow` counts this flow's UDP packets so far in
    /// this direction, this one included.
    #[inline]
    pub fn passes(&mut self, now_ns: u64, pkt: &PacketInfo, udp_seen_in_flow: u64) -> bool {
        if !pkt.is_udp() {
            return true;
        }
        let s = &self.spec;
        if s.block_udp {
            return false;
        }
        if s.block_udp_after_packets > 0 && udp_seen_in_flow > s.block_udp_after_packets {
            return false;
        }
        if s.max_udp_datagram > 0 && pkt.ip_len as u64 > s.max_udp_datagram {
            return false;
        }
        if s.udp_rate_mbit > 0.0 {
            let elapsed = now_ns.saturating_sub(self.last_ns);
            self.last_ns = self.last_ns.max(now_ns);
            self.tokens = (self.tokens + elapsed as f64 * self.bytes_per_ns).min(self.depth);
            if self.tokens < pkt.ip_len as f64 {
                return false;
            }
            self.tokens -= pkt.ip_len as f64;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{FlowKey, PROTO_TCP, PROTO_UDP};

    fn pkt(proto: u8, len: u32) -> PacketInfo {
        let a = "198.18.1.2".parse().unwrap();
        PacketInfo { ip_len: len, key: FlowKey { proto, src: a, dst: a, sport: 1, dport: 2 } }
    }

    #[test]
    fn block_and_size_rules() {
        let mut m = Middlebox::new(&MiddleboxSpec { block_udp: true, ..Default::default() });
        assert!(!m.passes(0, &pkt(PROTO_UDP, 100), 1));
        assert!(m.passes(0, &pkt(PROTO_TCP, 100), 1));
        let mut m = Middlebox::new(&MiddleboxSpec { block_udp_after_packets: 3, ..Default::default() });
        let verdicts: Vec<bool> = (1..=5).map(|n| m.passes(0, &pkt(PROTO_UDP, 100), n)).collect();
        assert_eq!(verdicts, vec![true, true, true, false, false]);
        let mut m = Middlebox::new(&MiddleboxSpec { max_udp_datagram: 1280, ..Default::default() });
        assert!(m.passes(0, &pkt(PROTO_UDP, 1280), 1));
        assert!(!m.passes(0, &pkt(PROTO_UDP, 1281), 1));
    }

    #[test]
    fn token_bucket_throttles_to_rate() {
        // 1.2 Mbit/s = 150 bytes/ms; offer 1200-byte packets every 1 ms (9.6 Mbit) for 10 s
        let mut m = Middlebox::new(&MiddleboxSpec { udp_rate_mbit: 1.2, ..Default::default() });
        let mut passed = 0u64;
        for i in 0..10_000u64 {
            if m.passes(i * 1_000_000, &pkt(PROTO_UDP, 1200), 1) {
                passed += 1200;
            }
        }
        let mbit = passed as f64 * 8.0 / 10.0 / 1e6;
        assert!((mbit - 1.2).abs() < 0.02, "{mbit}");
    }
}
