//! Drop-tail bottleneck buffer.
//!
//! The buffer holds packets admitted to the bottleneck whose serialization has not finished
//! (departure > now), like a tbf/bfifo qdisc whose `limit` counts the bytes it holds: a
//! packet leaves the buffer when its last bit leaves the link. An arriving packet is dropped
//! when (bytes held + its size) > buffer_bytes, or when packets held >= buffer_packets.

use crate::config::BufferLimit;
use std::collections::VecDeque;

#[derive(Debug, Clone)]
pub struct DropTailBuffer {
    limit: BufferLimit,
    /// (departure_ns, bytes) of packets still in the buffer, in departure order.
    held: VecDeque<(u64, u32)>,
    bytes: u64,
}

impl DropTailBuffer {
    pub fn new(limit: BufferLimit) -> Self {
        DropTailBuffer { limit, held: VecDeque::with_capacity(4096), bytes: 0 }
    }

    /// Forget packets whose serialization ended by `now_ns`.
    #[inline]
    pub fn drain(&mut self, now_ns: u64) {
        while let Some(&(dep, len)) = self.held.front() {
            if dep > now_ns {
                break;
            }
            self.bytes -= len as u64;
            self.held.pop_front();
        }
    }

    #[inline]
    pub fn has_room(&self, len: u32) -> bool {
        match self.limit {
            BufferLimit::Unlimited => true,
            BufferLimit::Bytes(b) => self.bytes + len as u64 <= b,
            BufferLimit::Packets(p) => (self.held.len() as u64) < p,
        }
    }

    #[inline]
    pub fn push(&mut self, departure_ns: u64, len: u32) {
        if self.limit == BufferLimit::Unlimited {
            return; // nothing to enforce: skip the bookkeeping
        }
        self.held.push_back((departure_ns, len));
        self.bytes += len as u64;
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    pub fn packets(&self) -> usize {
        self.held.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::rate::FixedRate;

    #[test]
    fn byte_limit_drop_tail() {
        // 12 Mbit: 1500 B = 1 ms; 30 KB buffer = 20 full packets
        let mut buf = DropTailBuffer::new(BufferLimit::Bytes(30_000));
        let mut rate = FixedRate::new(12.0);
        let (mut admitted, mut dropped) = (0, 0);
        for _ in 0..30 {
            buf.drain(0);
            if buf.has_room(1500) {
                buf.push(rate.departure(0, 1500), 1500);
                admitted += 1;
            } else {
                dropped += 1;
            }
        }
        assert_eq!((admitted, dropped), (20, 10));
        assert_eq!(buf.bytes(), 30_000);
        // after 1 ms one packet has left: room for exactly one more
        buf.drain(1_000_000);
        assert_eq!(buf.packets(), 19);
        assert!(buf.has_room(1500));
        assert!(!buf.has_room(1501));
    }

    #[test]
    fn packet_limit() {
        let mut buf = DropTailBuffer::new(BufferLimit::Packets(2));
        buf.push(10, 64);
        buf.push(20, 64);
        assert!(!buf.has_room(1));
        buf.drain(10);
        assert!(buf.has_room(1));
    }

    #[test]
    fn unlimited_admits_all() {
        let mut buf = DropTailBuffer::new(BufferLimit::Unlimited);
        for i in 0..10_000 {
            assert!(buf.has_room(1500));
            buf.push(i, 1500);
        }
    }
}
