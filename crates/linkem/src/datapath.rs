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

use std::io;
use std::os::fd::RawFd;

pub use crate::nfqueue::{QueueErrors, RxPacket, Verdict};

/// Packets taken per receive call (either datapath).
pub const RECV_BATCH: usize = crate::nfqueue::RECV_BATCH;

pub trait Datapath: Send {
    /// The descriptor that becomes readable when packets wait.
    fn fd(&self) -> RawFd;
    /// Take up to `RECV_BATCH` waiting packets without blocking, `f(packet)` for each; returns
    /// how many were taken (fewer than `RECV_BATCH`: nothing more is waiting).
    fn recv_batch<F: FnMut(&RxPacket)>(&mut self, f: F) -> io::Result<usize>;
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
