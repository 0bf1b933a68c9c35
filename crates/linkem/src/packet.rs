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
