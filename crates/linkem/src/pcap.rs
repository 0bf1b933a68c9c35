//! `--pcap`: a packet log of arrivals at the router (both directions, one file), in the
//! classic pcap format with LINKTYPE_RAW (packets start at the IP header). Only the bytes
//! copied from the queue are stored (headers, or whole packets: `--copy-bytes`); the
//! record's original length is the IP total length. Timestamps are the packets' arrival
//! times (wall clock). With a size cap, packets that would grow the file past it are
//! counted, not written (the file stays a valid pcap).
//! Fates are not marked: compare with the receiver's capture or the stats for drops.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Mutex;

const FILE_HEADER: u64 = 24;
const RECORD_HEADER: u64 = 16;

const LINKTYPE_RAW: u32 = 101;

struct Out {
    file: BufWriter<File>,
    written: u64,
    skipped: u64,
}

pub struct PcapLog {
    out: Mutex<Out>,
    max_bytes: u64,
}

impl PcapLog {
    pub fn create(path: &Path, snaplen: u32, max_bytes: u64) -> std::io::Result<PcapLog> {
        let mut out = BufWriter::with_capacity(1 << 20, File::create(path)?);
        out.write_all(&0xa1b2_c3d4u32.to_le_bytes())?; // µs timestamps, little endian
        out.write_all(&2u16.to_le_bytes())?;
        out.write_all(&4u16.to_le_bytes())?;
        out.write_all(&0i32.to_le_bytes())?;
        out.write_all(&0u32.to_le_bytes())?;
        out.write_all(&snaplen.to_le_bytes())?;
        out.write_all(&LINKTYPE_RAW.to_le_bytes())?;
        Ok(PcapLog { out: Mutex::new(Out { file: out, written: FILE_HEADER, skipped: 0 }), max_bytes })
    }

    /// Append one record; errors are reported once by `flush`, never on the hot path.
    pub fn record(&self, realtime_ns: u64, bytes: &[u8], orig_len: u32) {
        if let Ok(mut out) = self.out.lock() {
            let size = RECORD_HEADER + bytes.len() as u64;
            if out.written + size > self.max_bytes {
                out.skipped += 1;
                return;
            }
            out.written += size;
            let mut hdr = [0u8; 16];
            hdr[0..4].copy_from_slice(&((realtime_ns / 1_000_000_000) as u32).to_le_bytes());
            hdr[4..8].copy_from_slice(&(((realtime_ns % 1_000_000_000) / 1000) as u32).to_le_bytes());
            hdr[8..12].copy_from_slice(&(bytes.len() as u32).to_le_bytes());
            hdr[12..16].copy_from_slice(&orig_len.max(bytes.len() as u32).to_le_bytes());
            let _ = out.file.write_all(&hdr);
            let _ = out.file.write_all(bytes);
        }
    }

    pub fn flush(&self) -> std::io::Result<()> {
        self.out.lock().map(|mut o| o.file.flush()).unwrap_or(Ok(()))
    }

    /// Packets left out by the size cap.
    pub fn skipped(&self) -> u64 {
        self.out.lock().map(|o| o.skipped).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_header_and_records() {
        let path = std::env::temp_dir().join(format!("linkem-pcap-test-{}.pcap", std::process::id()));
        let log = PcapLog::create(&path, 128, u64::MAX).unwrap();
        log.record(1_500_000_000_123_456_789, &[0x45, 0, 0, 20], 1500);
        log.flush().unwrap();
        let b = std::fs::read(&path).unwrap();
        std::fs::remove_file(&path).ok();
        assert_eq!(b.len(), 24 + 16 + 4);
        assert_eq!(&b[0..4], &0xa1b2_c3d4u32.to_le_bytes());
        assert_eq!(u32::from_le_bytes(b[20..24].try_into().unwrap()), LINKTYPE_RAW);
        assert_eq!(u32::from_le_bytes(b[28..32].try_into().unwrap()), 123_456); // µs
        assert_eq!(u32::from_le_bytes(b[36..40].try_into().unwrap()), 1500);
    }

    #[test]
    fn size_cap_keeps_whole_records() {
        let path = std::env::temp_dir().join(format!("linkem-pcap-cap-{}.pcap", std::process::id()));
        let log = PcapLog::create(&path, 128, 24 + 2 * (16 + 100) + 50).unwrap();
        for _ in 0..5 {
            log.record(1, &[0x45; 100], 100);
        }
        log.flush().unwrap();
        let len = std::fs::metadata(&path).unwrap().len();
        std::fs::remove_file(&path).ok();
        assert_eq!(len, 24 + 2 * (16 + 100));
        assert_eq!(log.skipped(), 3);
    }
}
