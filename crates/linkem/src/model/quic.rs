//! What the first bytes of a UDP datagram say about QUIC (RFC 8999/9000 invariants, RFC 9369
//! for v2). Written by hand: only the first header byte and the version are read, nothing is
//! decrypted, and a parsing crate would want the whole (encrypted) packet.
//!
//! Only the first packet of a datagram is classified (coalesced packets after it are not
//! walked): a client's first datagram starts with its Initial, a server's first datagram
//! starts with its Initial (a Handshake packet may follow in the same datagram).

/// QUIC version 2 (RFC 9369), whose long-header type bits differ from v1.
const QUIC_V2: u32 = 0x6b33_43cf;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuicDatagram {
    /// Long header (first byte 0x80 set), version != 0, packet type Initial.
    Initial,
    /// Long header, version != 0, any other type (0-RTT, Handshake, Retry).
    OtherLong,
    /// Long header with version 0: Version Negotiation.
    VersionNegotiation,
    /// First byte 0x80 clear: a short-header (1-RTT) packet, if the flow is QUIC at all.
    Short,
    /// Too short to read a long header's version, or empty.
    Unreadable,
}

/// Classify a UDP payload. Initial = type bits (first byte >> 4 & 3) 0b00 for every version
/// but v2, where it is 0b01. The fixed bit (0x40) is not required (RFC 9287 lets peers
/// grease it).
pub fn classify(udp_payload: &[u8]) -> QuicDatagram {
    let Some(&first) = udp_payload.first() else { return QuicDatagram::Unreadable };
    if first & 0x80 == 0 {
        return QuicDatagram::Short;
    }
    if udp_payload.len() < 5 {
        return QuicDatagram::Unreadable;
    }
    let version = u32::from_be_bytes([udp_payload[1], udp_payload[2], udp_payload[3], udp_payload[4]]);
    if version == 0 {
        return QuicDatagram::VersionNegotiation;
    }
    let initial_type = if version == QUIC_V2 { 0b01 } else { 0b00 };
    if (first >> 4) & 0b11 == initial_type {
        QuicDatagram::Initial
    } else {
        QuicDatagram::OtherLong
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn long(first: u8, version: u32) -> Vec<u8> {
        let mut b = vec![first];
        b.extend_from_slice(&version.to_be_bytes());
        b.extend_from_slice(&[8, 1, 2, 3, 4, 5, 6, 7, 8]); // DCID length + DCID
        b
    }

    #[test]
    fn v1_long_header_types() {
        assert_eq!(classify(&long(0xc3, 1)), QuicDatagram::Initial); // 11 00 0011
        assert_eq!(classify(&long(0xd3, 1)), QuicDatagram::OtherLong); // 0-RTT
        assert_eq!(classify(&long(0xe3, 1)), QuicDatagram::OtherLong); // Handshake
        assert_eq!(classify(&long(0xf0, 1)), QuicDatagram::OtherLong); // Retry
        assert_eq!(classify(&long(0x83, 1)), QuicDatagram::Initial); // greased fixed bit
    }

    #[test]
    fn v2_initial_has_type_one() {
        assert_eq!(classify(&long(0xd3, QUIC_V2)), QuicDatagram::Initial);
        assert_eq!(classify(&long(0xc3, QUIC_V2)), QuicDatagram::OtherLong);
    }

    #[test]
    fn short_version_negotiation_and_garbage() {
        assert_eq!(classify(&[0x41, 1, 2, 3]), QuicDatagram::Short);
        assert_eq!(classify(&long(0xc0, 0)), QuicDatagram::VersionNegotiation);
        assert_eq!(classify(&[0xc3, 0, 0]), QuicDatagram::Unreadable);
        assert_eq!(classify(&[]), QuicDatagram::Unreadable);
    }
}
