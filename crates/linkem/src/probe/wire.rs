//! What travels between a probe client and `serve`.
//!
//! UDP datagram (at least HEADER bytes, zero padded to the requested size):
//!   [0]      kind: b'E' echo (RTT probe), b'L' load (echoed too), b'D' data (sink)
//!   [4..8]   session id, u32 big endian (b'D' only)
//!   [8..16]  sequence number, u64 big endian
//!   [16..24] client send time, ns since the client started, u64 big endian
//!
//! TCP control: the client's first line says what the connection is for:
//!   "TCP <interval_ms>\n" then bulk bytes until EOF; the server answers with a report.
//!   "UDP <session> <interval_ms>\n" ... later "END <sent_packets>\n"; the server answers
//!   with the report of that UDP session.
//! A report is text lines `key value` and `interval <t_ms> <bytes> <packets>`, then EOF.

pub const HEADER: usize = 24;
pub const KIND_ECHO: u8 = b'E';
pub const KIND_LOAD: u8 = b'L';
pub const KIND_DATA: u8 = b'D';
/// IPv4 (20) + UDP (8) header bytes around a UDP payload: rates are in IP bits, as linkem's.
pub const UDP_IP_OVERHEAD: usize = 28;

pub fn encode(buf: &mut [u8], kind: u8, session: u32, seq: u64, sent_ns: u64) {
    buf[0] = kind;
    buf[4..8].copy_from_slice(&session.to_be_bytes());
    buf[8..16].copy_from_slice(&seq.to_be_bytes());
    buf[16..24].copy_from_slice(&sent_ns.to_be_bytes());
}

pub struct Header {
    pub kind: u8,
    pub session: u32,
    pub seq: u64,
    pub sent_ns: u64,
}

pub fn decode(buf: &[u8]) -> Option<Header> {
    if buf.len() < HEADER {
        return None;
    }
    Some(Header {
        kind: buf[0],
        session: u32::from_be_bytes(buf[4..8].try_into().unwrap()),
        seq: u64::from_be_bytes(buf[8..16].try_into().unwrap()),
        sent_ns: u64::from_be_bytes(buf[16..24].try_into().unwrap()),
    })
}
