//! Where a direction's packets come from and how they leave: the interface `engine::Direction`
//! drives, with two implementations.
//!
//! - `nfqueue::NfQueue`: the kernel forwards; linkem reads each forwarded packet from an
//!   NFQUEUE and releases it with a (batch) verdict. The packet stays in the kernel meanwhile.
//! - `afpacket::PacketPath`: linkem forwards; it reads frames from a packet socket's receive
//!   ring on the incoming device (the kernel drops its own copy at the device's ingress),
//!   holds their bytes, and sends them on the outgoing device when due.
//!
//! Both hand the engine a packet's IP bytes, its length and the kernel's receive stamp, and
//! take verdicts by id with the same batch rule: `verdict_upto(N)` accepts every packet still
//! held with id <= N.
//!
//! This module holds the trait and everything the two share (the packet as received, the
//! verdict, the error counters, the batch size, the kernel's receive stamps); each
//! implementation imports only from here and never from the other, so adding a third
//! datapath touches neither.

use std::io;
use std::os::fd::RawFd;

/// Packets taken per receive call (either datapath).
pub const RECV_BATCH: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Accept,
    Drop,
}

/// One packet as received.
pub struct RxPacket<'a> {
    pub id: u32,
    /// The packet's bytes from its IP header on (NFQUEUE: up to the copy range; AF_PACKET: the
    /// whole packet). Changed in place, they leave changed on AF_PACKET only (NFQUEUE hands
    /// over a copy).
    pub bytes: &'a mut [u8],
    /// The packet's full length.
    pub orig_len: u32,
    /// Its L4 checksum is partial (the pseudo-header's sum, left for the device to finish).
    pub partial_csum: bool,
    /// When the kernel received it (CLOCK_REALTIME ns, µs resolution), if it was stamped.
    pub kernel_rx_realtime_ns: Option<u64>,
    /// A GSO super-packet handed over whole (NFQUEUE: NFQA_SKB_INFO, not segmented because
    /// linkem sets F_GSO).
    pub gso: bool,
}

/// Counters of things that should not happen; reported in stats.
#[derive(Debug, Default, Clone, Copy)]
pub struct QueueErrors {
    /// NLMSG_ERROR replies to verdicts (e.g. unknown packet id).
    pub verdict_errors: u64,
    /// Receive buffer overruns (ENOBUFS): the kernel dropped packets it could not deliver.
    pub socket_overruns: u64,
    /// Datagrams larger than a receive slot, or malformed.
    pub malformed: u64,
    /// GSO super-packets handed over whole (the testbed's links have offloads off, so none
    /// are expected); each is scheduled as one packet of its IP total length.
    pub gso_unsegmented: u64,
    pub last_verdict_errno: i32,
    /// Packets the kernel dropped before linkem read them, where the datapath counts them
    /// itself (AF_PACKET: its receive ring was full); NFQUEUE's are in /proc (`kernel_queue_stats`).
    pub kernel_dropped: Option<u64>,
    /// Packets dropped because linkem already held `--queue-maxlen` of them (AF_PACKET).
    pub held_overflow: u64,
}

pub trait Datapath: Send {
    /// The descriptor that becomes readable when packets wait.
    fn fd(&self) -> RawFd;
    /// Take up to `RECV_BATCH` waiting packets without blocking, `f(packet)` for each; returns
    /// how many were taken (fewer than `RECV_BATCH`: nothing more is waiting).
    fn recv_batch<F: FnMut(&mut RxPacket)>(&mut self, f: F) -> io::Result<usize>;
    /// A held packet's IP bytes, to change before it leaves, and whether its L4 checksum is
    /// partial; None if it is not held or this datapath cannot change it in place.
    fn held_ip(&mut self, id: u32) -> Option<(&mut [u8], bool)>;
    /// Verdict one packet (takes effect at `flush`).
    fn verdict(&mut self, id: u32, verdict: Verdict);
    /// Accept one packet with its IP bytes replaced (a middlebox's rewrite).
    fn accept_rewritten(&mut self, id: u32, ip_packet: &[u8]);
    /// Verdict every packet still held with id <= `max_id`.
    fn verdict_upto(&mut self, max_id: u32, verdict: Verdict);
    /// Carry out the verdicts given since the last flush, in order.
    fn flush(&mut self) -> io::Result<()>;
    /// Counters of what should not happen (read at each publish).
    fn errors(&mut self) -> QueueErrors;
}

/// A libc return value as a Result (negative: the thread's errno).
pub(crate) fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// Ask the kernel to timestamp every received packet (a host-wide switch that stays on
/// while the returned socket is open). The router's packets then carry the time they
/// entered the router, and linkem measures delay from there rather than from its own
/// wake-up, which lags by 50-200 µs when the thread was asleep. Both datapaths read the
/// stamp: NFQUEUE as NFQA_TIMESTAMP, AF_PACKET in its ring frame's header.
pub fn enable_rx_timestamps() -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    let fd = cvt(unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) })?;
    let sock = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
    let on: libc::c_int = 1;
    cvt(unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            &on as *const libc::c_int as *const libc::c_void,
            4,
        )
    })?;
    Ok(sock)
}
