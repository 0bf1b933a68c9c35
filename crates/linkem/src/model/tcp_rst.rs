//! A DPI box that resets TCP connections after N bytes of a flow's payload (as ooni's netem
//! does with injected RSTs). NFQUEUE cannot inject packets, but a verdict may replace a
//! packet's bytes, so linkem rewrites the crossing packet itself into a RST: the receiver
//! gets a RST with exactly the sequence number it expects next and resets.
//!
//! Counting is by sequence number, so retransmissions are not counted twice: a flow's
//! offset 0 is its SYN's sequence number + 1 (or, if no SYN was seen in this direction, the
//! first packet's sequence number). A packet "crosses" when its payload ends beyond offset N,
//! i.e. it carries payload byte N+1 or later. From the first crossing packet on, every packet
//! of the flow in this direction is rewritten into a RST (sticky), so that if the first RST
//! is lost, or arrives while an earlier segment is missing (it is then out of window and only
//! draws a challenge ACK), the retransmissions reset the receiver.
//!
//! The rewritten packet: the IP header unchanged except the total length (IPv4: header
//! checksum recomputed; IPv6: payload length 20), then a 20-byte TCP header with the same
//! ports, sequence and acknowledgment numbers, flags RST (+ ACK if the packet had ACK), data
//! offset 5 (options stripped), window 0, urgent pointer 0, checksum recomputed. No payload.
//! Written by hand: it is a few fixed header offsets and the RFC 1071 checksum.

use crate::packet::transport_offset;

const FLAG_SYN: u8 = 0x02;
const FLAG_RST: u8 = 0x04;
const FLAG_ACK: u8 = 0x10;

/// The fields of a TCP segment the rule needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub seq: u32,
    pub flags: u8,
    pub payload_len: u32,
}

/// Read a TCP segment's header from the copied prefix; `ip_len` is the IP total length.
pub fn segment(bytes: &[u8], ip_len: u32) -> Option<Segment> {
    let off = transport_offset(bytes)?;
    let tcp = bytes.get(off..off + 20)?;
    let data_offset = ((tcp[12] >> 4) as u32) * 4;
    let payload_len = ip_len.saturating_sub(off as u32 + data_offset);
    Some(Segment { seq: u32::from_be_bytes([tcp[4], tcp[5], tcp[6], tcp[7]]), flags: tcp[13], payload_len })
}

/// One flow's progress through its first N bytes (one direction).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct RstTracker {
    base: Option<u32>,
    pub crossed: bool,
}

impl RstTracker {
    /// Account one segment; true once the flow has crossed `limit` bytes (sticky).
    pub fn observe(&mut self, seg: &Segment, limit: u64) -> bool {
        if self.crossed {
            return true;
        }
        if seg.flags & FLAG_SYN != 0 {
            self.base = Some(seg.seq.wrapping_add(1));
            return false;
        }
        let base = *self.base.get_or_insert(seg.seq);
        let end = seg.seq.wrapping_add(seg.payload_len).wrapping_sub(base);
        // A distance above 2^31 is a segment from before the base (never crossing).
        if end <= i32::MAX as u32 && end as u64 > limit {
            self.crossed = true;
        }
        self.crossed
    }
}

/// IP total length of the RST that `rewrite` would make, if the packet can be rewritten.
pub fn rst_len(bytes: &[u8]) -> Option<u32> {
    let off = transport_offset(bytes)?;
    (bytes.len() >= off + 20).then_some(off as u32 + 20)
}

/// The packet rewritten into a RST (see the module docs); None if its headers were not copied.
pub fn rewrite(bytes: &[u8]) -> Option<Vec<u8>> {
    let off = transport_offset(bytes)?;
    let mut out = bytes.get(..off + 20)?.to_vec();
    let v6 = out[0] >> 4 == 6;
    if v6 {
        out[4..6].copy_from_slice(&20u16.to_be_bytes());
    } else {
        out[2..4].copy_from_slice(&((off + 20) as u16).to_be_bytes());
        out[10..12].copy_from_slice(&[0, 0]);
        let c = checksum(0, &out[..off]);
        out[10..12].copy_from_slice(&c.to_be_bytes());
    }
    let ack = out[off + 13] & FLAG_ACK;
    let tcp = &mut out[off..];
    tcp[12] = 5 << 4;
    tcp[13] = FLAG_RST | ack;
    tcp[14..20].fill(0); // window, checksum, urgent pointer
    let pseudo = if v6 {
        let mut s = sum16(0, &bytes[8..40]);
        s += 20 + 6;
        s
    } else {
        let mut s = sum16(0, &bytes[12..20]);
        s += 6 + 20;
        s
    };
    let c = checksum(pseudo, &out[off..]);
    out[off + 16..off + 18].copy_from_slice(&c.to_be_bytes());
    Some(out)
}

/// Ones'-complement sum of 16-bit big-endian words (RFC 1071), unfolded.
fn sum16(mut acc: u32, data: &[u8]) -> u32 {
    for pair in data.chunks(2) {
        let hi = pair[0] as u32;
        let lo = pair.get(1).copied().unwrap_or(0) as u32;
        acc += (hi << 8) | lo;
    }
    acc
}

/// The Internet checksum of `data` plus a partial sum (the pseudo-header).
fn checksum(acc: u32, data: &[u8]) -> u16 {
    let mut s = sum16(acc, data);
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// An IPv4 TCP packet header (no options) with `payload` bytes of payload after it.
    pub fn tcp_v4(seq: u32, flags: u8, payload: usize) -> Vec<u8> {
        let len = 40 + payload;
        let mut b = vec![0u8; len];
        b[0] = 0x45;
        b[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        b[6] = 0x40; // DF
        b[8] = 64;
        b[9] = 6;
        b[12..16].copy_from_slice(&[198, 18, 2, 2]);
        b[16..20].copy_from_slice(&[198, 18, 1, 2]);
        let c = checksum(0, &b[..20]);
        b[10..12].copy_from_slice(&c.to_be_bytes());
        b[20..22].copy_from_slice(&4433u16.to_be_bytes());
        b[22..24].copy_from_slice(&51000u16.to_be_bytes());
        b[24..28].copy_from_slice(&seq.to_be_bytes());
        b[28..32].copy_from_slice(&77u32.to_be_bytes());
        b[32] = 5 << 4;
        b[33] = flags;
        b[34..36].copy_from_slice(&500u16.to_be_bytes());
        b
    }

    fn seg(b: &[u8]) -> Segment {
        segment(b, b.len() as u32).unwrap()
    }

    #[test]
    fn crossing_is_by_sequence_from_the_syn() {
        let mut t = RstTracker::default();
        assert!(!t.observe(&seg(&tcp_v4(1000, FLAG_SYN, 0)), 3000));
        // payload bytes 1..=1448, 1449..=2896, 2897..=4344: the third carries byte 3001
        assert!(!t.observe(&seg(&tcp_v4(1001, FLAG_ACK, 1448)), 3000));
        assert!(!t.observe(&seg(&tcp_v4(2449, FLAG_ACK, 1448)), 3000));
        // a retransmission of old data does not count again
        assert!(!t.observe(&seg(&tcp_v4(1001, FLAG_ACK, 1448)), 3000));
        assert!(t.observe(&seg(&tcp_v4(3897, FLAG_ACK, 1448)), 3000));
        // sticky: even a pure ACK afterwards
        assert!(t.observe(&seg(&tcp_v4(5345, FLAG_ACK, 0)), 3000));
    }

    #[test]
    fn exactly_n_bytes_pass_and_wraparound_is_fine() {
        let mut t = RstTracker::default();
        let isn = u32::MAX - 100;
        t.observe(&seg(&tcp_v4(isn, FLAG_SYN, 0)), 1000);
        assert!(!t.observe(&seg(&tcp_v4(isn.wrapping_add(1), FLAG_ACK, 1000)), 1000));
        assert!(t.observe(&seg(&tcp_v4(isn.wrapping_add(1001), FLAG_ACK, 1)), 1000));
        // no SYN seen: the first packet's sequence number is offset 0
        let mut t = RstTracker::default();
        assert!(!t.observe(&seg(&tcp_v4(50, FLAG_ACK, 600)), 1000));
        assert!(t.observe(&seg(&tcp_v4(650, FLAG_ACK, 600)), 1000));
    }

    #[test]
    fn rewrite_makes_a_valid_rst() {
        let b = tcp_v4(123_456, FLAG_ACK | 0x08, 1448);
        let r = rewrite(&b[..128]).unwrap();
        assert_eq!(r.len(), 40);
        assert_eq!(rst_len(&b[..128]), Some(40));
        assert_eq!(u16::from_be_bytes([r[2], r[3]]), 40);
        assert_eq!(checksum(0, &r[..20]), 0, "IPv4 header checksum verifies");
        assert_eq!(&r[24..28], &123_456u32.to_be_bytes());
        assert_eq!(&r[28..32], &77u32.to_be_bytes());
        assert_eq!(r[33], FLAG_RST | FLAG_ACK);
        assert_eq!(r[32], 0x50);
        // TCP checksum over pseudo-header + segment verifies to 0
        let mut pseudo = sum16(0, &r[12..20]);
        pseudo += 6 + 20;
        assert_eq!(checksum(pseudo, &r[20..40]), 0);
        // headers not copied: no rewrite
        assert!(rewrite(&b[..30]).is_none());
    }

    #[test]
    fn checksum_matches_a_known_header() {
        // RFC 1071 style example: a real IPv4 header whose checksum is 0xb861
        let h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8,
            0x00, 0xc7,
        ];
        assert_eq!(checksum(0, &h), 0xb861);
    }
}
