//! Reading the few header fields linkem needs: IP total length (for sizes) and the
//! 5-tuple (for flows and middlebox rules). Only the first bytes of a packet are copied
//! from the kernel, so everything here works on a truncated header slice.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

pub const PROTO_TCP: u8 = 6;
pub const PROTO_UDP: u8 = 17;

/// A flow's identity. Ports are 0 for protocols without ports and for non-first fragments.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FlowKey {
    pub proto: u8,
    pub src: IpAddr,
    pub dst: IpAddr,
    pub sport: u16,
    pub dport: u16,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketInfo {
    /// IP total length in bytes (header + payload), as on the wire without L2 framing.
    pub ip_len: u32,
    pub key: FlowKey,
}

impl PacketInfo {
    pub fn is_udp(&self) -> bool {
        self.key.proto == PROTO_UDP
    }
}

fn ports(transport: &[u8]) -> (u16, u16) {
    if transport.len() >= 4 {
        (u16::from_be_bytes([transport[0], transport[1]]), u16::from_be_bytes([transport[2], transport[3]]))
    } else {
        (0, 0)
    }
}

fn has_ports(proto: u8) -> bool {
    // TCP, UDP, DCCP, SCTP, UDP-Lite all start with src/dst ports.
    matches!(proto, 6 | 17 | 33 | 132 | 136)
}

/// Parse an IPv4 or IPv6 header. `orig_len` is the length the kernel reported, used when
/// the header is unreadable (then the packet is still scheduled by its real size).
pub fn parse(bytes: &[u8], orig_len: u32) -> Option<PacketInfo> {
    match bytes.first()? >> 4 {
        4 => parse_v4(bytes),
        6 => parse_v6(bytes),
        _ => {
            let _ = orig_len;
            None
        }
    }
}

fn parse_v4(b: &[u8]) -> Option<PacketInfo> {
    if b.len() < 20 {
        return None;
    }
    let ihl = ((b[0] & 0x0f) as usize) * 4;
    let ip_len = u16::from_be_bytes([b[2], b[3]]) as u32;
    let frag_offset = u16::from_be_bytes([b[6], b[7]]) & 0x1fff;
    let proto = b[9];
    let src = IpAddr::V4(Ipv4Addr::new(b[12], b[13], b[14], b[15]));
    let dst = IpAddr::V4(Ipv4Addr::new(b[16], b[17], b[18], b[19]));
    let (sport, dport) = if has_ports(proto) && frag_offset == 0 && b.len() > ihl { ports(&b[ihl..]) } else { (0, 0) };
    Some(PacketInfo { ip_len, key: FlowKey { proto, src, dst, sport, dport } })
}

/// A ones'-complement sum folded to 16 bits.
pub fn fold(mut sum: u32) -> u16 {
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// RFC 1624 eqn. 3, a checksum after one 16-bit word changed: HC' = ~(~HC + ~m + m').
pub fn csum_update(hc: u16, old: u16, new: u16) -> u16 {
    !fold(u32::from(!hc) + u32::from(!old) + u32::from(new))
}

/// The IP ECN field (RFC 3168): 0 not ECN-capable, 1 ECT(1), 2 ECT(0), 3 CE; 0 when the
/// header cannot be read.
pub fn ecn(b: &[u8]) -> u8 {
    match b.first().map(|v| v >> 4) {
        Some(4) if b.len() >= 20 => b[1] & 0x03,
        Some(6) if b.len() >= 40 => (b[1] >> 4) & 0x03,
        _ => 0,
    }
}

/// The IP ECN codepoint (RFC 3168), as a classifier reads it: DualPI2 (RFC 9332) sends
/// ECT(1) and CE to its L4S queue and the rest to its Classic queue, and may mark only an
/// ECN-capable packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Ecn {
    #[default]
    NotEct,
    Ect1,
    Ect0,
    Ce,
}

impl Ecn {
    /// The codepoint of a packet (`ecn`): not-ECT when its header cannot be read.
    pub fn of(b: &[u8]) -> Ecn {
        match ecn(b) {
            1 => Ecn::Ect1,
            2 => Ecn::Ect0,
            3 => Ecn::Ce,
            _ => Ecn::NotEct,
        }
    }

    /// ECT(0), ECT(1) or CE: a router may mark it instead of dropping it.
    pub fn capable(self) -> bool {
        self != Ecn::NotEct
    }

    /// ECT(1) or CE, the L4S identifier (RFC 9331 §5.1; the low bit of the field): a CE
    /// packet may have been ECT(1) upstream, and sending it to the Classic queue would
    /// reorder an L4S flow's packets.
    pub fn l4s(self) -> bool {
        matches!(self, Ecn::Ect1 | Ecn::Ce)
    }
}

impl Ecn {
    /// The field's two bits (RFC 3168 §5).
    pub fn bits(self) -> u8 {
        match self {
            Ecn::NotEct => 0,
            Ecn::Ect1 => 1,
            Ecn::Ect0 => 2,
            Ecn::Ce => 3,
        }
    }
}

/// Write `e` into the IP ECN field, the rest of the byte (DSCP, IPv6's traffic class and flow
/// label bits) kept; false when the header cannot be read (too short, not IPv4 or IPv6).
/// IPv4's header checksum is updated incrementally (RFC 1624); no transport checksum covers
/// the field (IPv6's pseudo-header has no traffic class), so nothing else changes.
pub fn set_ecn(b: &mut [u8], e: Ecn) -> bool {
    match b.first().map(|v| v >> 4) {
        Some(4) if b.len() >= 20 => {
            let old = u16::from_be_bytes([b[0], b[1]]);
            b[1] = (b[1] & 0xfc) | e.bits();
            let new = u16::from_be_bytes([b[0], b[1]]);
            let hc = csum_update(u16::from_be_bytes([b[10], b[11]]), old, new);
            b[10..12].copy_from_slice(&hc.to_be_bytes());
            true
        }
        Some(6) if b.len() >= 40 => {
            b[1] = (b[1] & 0xcf) | (e.bits() << 4);
            true
        }
        _ => false,
    }
}

/// Set the ECN field to CE (congestion experienced); false when the packet is not
/// ECN-capable (a router must not mark it) or its header cannot be read.
pub fn set_ce(b: &mut [u8]) -> bool {
    Ecn::of(b).capable() && set_ecn(b, Ecn::Ce)
}

fn parse_v6(b: &[u8]) -> Option<PacketInfo> {
    if b.len() < 40 {
        return None;
    }
    let ip_len = u16::from_be_bytes([b[4], b[5]]) as u32 + 40;
    let proto = b[6]; // extension headers are not walked: such flows are keyed by next header
    let mut s = [0u8; 16];
    let mut d = [0u8; 16];
    s.copy_from_slice(&b[8..24]);
    d.copy_from_slice(&b[24..40]);
    let (sport, dport) = if has_ports(proto) { ports(&b[40..]) } else { (0, 0) };
    Some(PacketInfo {
        ip_len,
        key: FlowKey { proto, src: IpAddr::V6(Ipv6Addr::from(s)), dst: IpAddr::V6(Ipv6Addr::from(d)), sport, dport },
    })
}

/// Where the transport header starts in `bytes` (the copied prefix), for packets whose
/// transport header is there to read: IPv4 unfragmented (no offset, no more-fragments flag),
/// IPv6 with the transport directly after the fixed header. None otherwise.
pub fn transport_offset(bytes: &[u8]) -> Option<usize> {
    match bytes.first()? >> 4 {
        4 if bytes.len() >= 20 => {
            let ihl = ((bytes[0] & 0x0f) as usize) * 4;
            let frag = u16::from_be_bytes([bytes[6], bytes[7]]);
            (ihl >= 20 && frag & 0x3fff == 0).then_some(ihl)
        }
        6 if bytes.len() >= 40 && has_ports(bytes[6]) => Some(40),
        _ => None,
    }
}

pub fn proto_name(proto: u8) -> String {
    match proto {
        6 => "tcp".into(),
        17 => "udp".into(),
        1 => "icmp".into(),
        58 => "icmpv6".into(),
        n => n.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The RFC 1071 checksum of an IPv4 header, from scratch.
    fn header_checksum(h: &[u8]) -> u16 {
        let mut sum: u32 = 0;
        for (i, pair) in h.chunks(2).enumerate() {
            if i != 5 {
                sum += u16::from_be_bytes([pair[0], pair[1]]) as u32;
            }
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !(sum as u16)
    }

    #[test]
    fn ce_marking_keeps_the_ipv4_checksum_right_and_skips_not_ect() {
        let mut ip = vec![0u8; 20];
        ip[0] = 0x45;
        ip[2..4].copy_from_slice(&1500u16.to_be_bytes());
        ip[8] = 64;
        ip[9] = 17;
        ip[12..16].copy_from_slice(&[198, 18, 1, 2]);
        ip[16..20].copy_from_slice(&[198, 18, 2, 2]);
        for (tos, capable) in [(0x00u8, false), (0x02, true), (0x01, true), (0xb8 | 0x02, true), (0x03, true)] {
            let mut h = ip.clone();
            h[1] = tos;
            let c = header_checksum(&h);
            h[10..12].copy_from_slice(&c.to_be_bytes());
            assert_eq!(set_ce(&mut h), capable, "tos {tos:#x}");
            assert_eq!(ecn(&h), if capable { 3 } else { 0 });
            assert_eq!(h[1] & 0xfc, tos & 0xfc, "DSCP kept");
            assert_eq!(u16::from_be_bytes([h[10], h[11]]), header_checksum(&h), "tos {tos:#x}");
        }
        let mut v6 = vec![0u8; 40];
        v6[0] = 0x60;
        v6[1] = 0x20; // ECT(0)
        assert_eq!(ecn(&v6), 2);
        assert!(set_ce(&mut v6));
        assert_eq!(ecn(&v6), 3);
        assert!(!set_ce(&mut [0x45u8, 0, 0][..]));
    }

    #[test]
    fn set_ecn_writes_every_codepoint_over_every_other_in_ipv4_and_ipv6() {
        let all = [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce];
        // IPv4 with options (IHL 6) and a DSCP: the checksum recomputed from scratch agrees
        // with the incremental one, for each of the 16 transitions and several headers
        for (dscp, ttl, id) in [(0x00u8, 64u8, 0u16), (0xb8, 1, 0xffff), (0x28, 255, 0x1234)] {
            for from in all {
                for to in all {
                    let mut h = vec![0u8; 24];
                    h[0] = 0x46;
                    h[1] = dscp | from.bits();
                    h[2..4].copy_from_slice(&1500u16.to_be_bytes());
                    h[4..6].copy_from_slice(&id.to_be_bytes());
                    h[8] = ttl;
                    h[9] = PROTO_UDP;
                    h[12..16].copy_from_slice(&[198, 18, 1, 2]);
                    h[16..20].copy_from_slice(&[198, 18, 2, 2]);
                    h[20..24].copy_from_slice(&[0x94, 0x04, 0, 0]); // router alert
                    let c = header_checksum(&h);
                    h[10..12].copy_from_slice(&c.to_be_bytes());
                    let before = h.clone();
                    assert!(set_ecn(&mut h, to));
                    assert_eq!(Ecn::of(&h), to);
                    assert_eq!(h[1] & 0xfc, dscp, "DSCP kept");
                    assert_eq!(u16::from_be_bytes([h[10], h[11]]), header_checksum(&h), "{from:?} -> {to:?}");
                    // nothing but the TOS byte and the checksum changed
                    let changed: Vec<usize> = (0..24).filter(|&i| h[i] != before[i]).collect();
                    assert!(changed.iter().all(|i| [1, 10, 11].contains(i)), "{changed:?}");
                }
            }
        }
        // IPv6: the field is bits 4-5 of the second byte; the traffic class's DSCP and the
        // flow label beside it are kept, and there is no header checksum
        for from in all {
            for to in all {
                let mut v6 = [0u8; 48];
                v6[0] = 0x6b;
                v6[1] = 0xc0 | (from.bits() << 4) | 0x0a;
                v6[2..4].copy_from_slice(&[0x5a, 0xa5]);
                v6[4..6].copy_from_slice(&8u16.to_be_bytes());
                v6[6] = PROTO_UDP;
                let before = v6;
                assert!(set_ecn(&mut v6, to));
                assert_eq!(Ecn::of(&v6), to);
                assert_eq!((v6[0], v6[1] & 0xcf), (0x6b, 0xca), "traffic class and flow label kept");
                assert_eq!(v6[2..], before[2..]);
            }
        }
        // an unreadable header is left alone
        let mut short = [0x45u8, 0x02, 0, 0];
        assert!(!set_ecn(&mut short, Ecn::NotEct));
        assert_eq!(short, [0x45, 0x02, 0, 0]);
        let mut v6 = [0x60u8; 39];
        assert!(!set_ecn(&mut v6, Ecn::Ce));
        assert!(!set_ecn(&mut [], Ecn::Ce));
        let mut arp = [0u8; 40];
        assert!(!set_ecn(&mut arp, Ecn::Ce));
    }

    #[test]
    fn ecn_codepoints_classify_ipv4_and_ipv6() {
        let mut v4 = udp_v4(100, 1, 2);
        let mut v6 = [0u8; 48];
        v6[0] = 0x60;
        // the field is the low two bits of the TOS byte (v4), bits 4-5 of the second byte (v6),
        // whatever the DSCP beside it
        for (field, want, l4s, capable) in [
            (0u8, Ecn::NotEct, false, false),
            (1, Ecn::Ect1, true, true),
            (2, Ecn::Ect0, false, true),
            (3, Ecn::Ce, true, true),
        ] {
            v4[1] = 0xb8 | field;
            v6[0] = 0x6b; // traffic class 0xb_ above the field's nibble
            v6[1] = 0xc0 | (field << 4) | 0x0a; // DSCP bits above, the flow label's below
            for b in [&v4[..], &v6[..]] {
                let e = Ecn::of(b);
                assert_eq!(e, want, "{b:02x?}");
                assert_eq!((e.l4s(), e.capable()), (l4s, capable), "{e:?}");
            }
        }
        // too short to read: not ECN-capable, so a Classic packet that may only be dropped
        assert_eq!(Ecn::of(&v4[..19]), Ecn::NotEct);
        assert_eq!(Ecn::of(&v6[..39]), Ecn::NotEct);
        assert_eq!(Ecn::of(&[]), Ecn::NotEct);
    }

    pub fn udp_v4(len: u16, sport: u16, dport: u16) -> Vec<u8> {
        let mut b = vec![0u8; 28];
        b[0] = 0x45;
        b[2..4].copy_from_slice(&len.to_be_bytes());
        b[9] = PROTO_UDP;
        b[12..16].copy_from_slice(&[198, 18, 1, 2]);
        b[16..20].copy_from_slice(&[198, 18, 2, 2]);
        b[20..22].copy_from_slice(&sport.to_be_bytes());
        b[22..24].copy_from_slice(&dport.to_be_bytes());
        b
    }

    #[test]
    fn parses_udp_v4_header() {
        let p = parse(&udp_v4(1228, 51000, 4433), 1228).unwrap();
        assert_eq!(p.ip_len, 1228);
        assert!(p.is_udp());
        assert_eq!(p.key.sport, 51000);
        assert_eq!(p.key.dport, 4433);
        assert_eq!(p.key.src, "198.18.1.2".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn non_first_fragment_has_no_ports() {
        let mut b = udp_v4(600, 1, 2);
        b[7] = 10; // fragment offset 10
        let p = parse(&b, 600).unwrap();
        assert_eq!((p.key.sport, p.key.dport), (0, 0));
    }

    #[test]
    fn truncated_is_none() {
        assert!(parse(&[0x45, 0, 0], 3).is_none());
        assert!(parse(&[], 0).is_none());
    }
}
