//! A minimal NFQUEUE client speaking netlink directly.
//!
//! Why not the `nfq` crate: it allocates on the receive path (an `Arc<Vec>` per receive
//! batch and a `Message` per packet held in a `VecDeque`), receives one packet per syscall,
//! and has no batch verdict. linkem needs (1) `recvmmsg` to take many packets per syscall,
//! (2) NFQNL_MSG_VERDICT_BATCH, which accepts every queued packet with id <= N in one
//! message, and (3) several verdict messages packed into one `sendto` (nfnetlink walks all
//! messages of a datagram), so a release slot costs one syscall whatever it carries.
//! The protocol is small and stable (linux/netfilter/nfnetlink_queue.h), so it is spoken here.

use std::io;
use std::os::fd::RawFd;

use crate::datapath::{cvt, Datapath, QueueErrors, RxPacket, Verdict, RECV_BATCH};

// linux/netfilter/nfnetlink.h, nfnetlink_queue.h
const NFNL_SUBSYS_QUEUE: u16 = 3;
const NFQNL_MSG_PACKET: u16 = 0;
const NFQNL_MSG_VERDICT: u16 = 1;
const NFQNL_MSG_CONFIG: u16 = 2;
const NFQNL_MSG_VERDICT_BATCH: u16 = 3;
const NFQA_PACKET_HDR: u16 = 1;
const NFQA_VERDICT_HDR: u16 = 2;
const NFQA_TIMESTAMP: u16 = 4;
const NFQA_PAYLOAD: u16 = 10;
const NFQA_CAP_LEN: u16 = 13;
const NFQA_SKB_INFO: u16 = 14;
const NFQA_SKB_GSO: u32 = 2;
const NFQA_CFG_CMD: u16 = 1;
const NFQA_CFG_PARAMS: u16 = 2;
const NFQA_CFG_QUEUE_MAXLEN: u16 = 3;
const NFQA_CFG_MASK: u16 = 4;
const NFQA_CFG_FLAGS: u16 = 5;
const NFQNL_CFG_CMD_BIND: u8 = 1;
const NFQNL_COPY_PACKET: u8 = 2;
const NFQA_CFG_F_FAIL_OPEN: u32 = 1;
const NFQA_CFG_F_GSO: u32 = 4;
const NF_DROP: u32 = 0;
const NF_ACCEPT: u32 = 1;

const NLMSG_HDRLEN: usize = 16;
const NFGENMSG_LEN: usize = 4;
const VERDICT_MSG_LEN: usize = NLMSG_HDRLEN + NFGENMSG_LEN + 4 + 8;
/// One received netlink datagram: metadata attributes + the copied packet bytes (2 KiB:
/// a whole 1500-byte packet fits, for `--copy-bytes` up to MAX_COPY_BYTES).
const RECV_SLOT: usize = 2048;
/// The most `--copy-bytes` may ask for: a slot less room for the attributes (~120 bytes).
pub const MAX_COPY_BYTES: u32 = (RECV_SLOT - 256) as u32;
const TX_CAPACITY: usize = 32 * 1024;

pub struct NfQueue {
    fd: RawFd,
    queue_num: u16,
    seq: u32,
    rx: Box<[[u8; RECV_SLOT]; RECV_BATCH]>,
    /// recvmmsg's headers, pointing into `rx`; built once (the kernel rewrites only their
    /// lengths and flags), so a receive call does no per-call set-up.
    rx_iov: Box<[libc::iovec; RECV_BATCH]>,
    rx_hdrs: Box<[libc::mmsghdr; RECV_BATCH]>,
    tx: Vec<u8>,
    pub errors: QueueErrors,
}

// The raw pointers in `rx_iov`/`rx_hdrs` point into the queue's own boxed buffers, which move
// with it; only the owning thread uses them.
unsafe impl Send for NfQueue {}

fn put_u16(b: &mut Vec<u8>, v: u16) {
    b.extend_from_slice(&v.to_ne_bytes());
}
fn put_u32(b: &mut Vec<u8>, v: u32) {
    b.extend_from_slice(&v.to_ne_bytes());
}

/// Append a netlink header + nfgenmsg; returns the offset of the header to patch its length.
fn begin_msg(b: &mut Vec<u8>, msg_type: u16, flags: u16, seq: u32, queue_num: u16) -> usize {
    let start = b.len();
    put_u32(b, 0); // nlmsg_len, patched by end_msg
    put_u16(b, (NFNL_SUBSYS_QUEUE << 8) | msg_type);
    put_u16(b, flags);
    put_u32(b, seq);
    put_u32(b, 0); // port id: kernel
    b.push(libc::AF_UNSPEC as u8); // nfgen_family
    b.push(0); // NFNETLINK_V0
    b.extend_from_slice(&queue_num.to_be_bytes()); // res_id
    start
}

fn put_attr(b: &mut Vec<u8>, attr_type: u16, payload: &[u8]) {
    put_u16(b, (4 + payload.len()) as u16);
    put_u16(b, attr_type);
    b.extend_from_slice(payload);
    while !b.len().is_multiple_of(4) {
        b.push(0);
    }
}

fn end_msg(b: &mut [u8], start: usize) {
    let len = (b.len() - start) as u32;
    b[start..start + 4].copy_from_slice(&len.to_ne_bytes());
}

impl NfQueue {
    /// Bind to `queue_num`, copying `copy_bytes` of each packet, with a kernel queue of
    /// `max_len` packets. Fail-open is explicitly off: if linkem is not there, packets drop.
    pub fn open(queue_num: u16, copy_bytes: u32, max_len: u32) -> io::Result<NfQueue> {
        let fd = cvt(unsafe {
            libc::socket(libc::AF_NETLINK, libc::SOCK_RAW | libc::SOCK_CLOEXEC, libc::NETLINK_NETFILTER)
        })?;
        let mut q = NfQueue {
            fd,
            queue_num,
            seq: 0,
            rx: vec![[0u8; RECV_SLOT]; RECV_BATCH].into_boxed_slice().try_into().unwrap(),
            rx_iov: Box::new(unsafe { std::mem::zeroed() }),
            rx_hdrs: Box::new(unsafe { std::mem::zeroed() }),
            tx: Vec::with_capacity(TX_CAPACITY + 256),
            errors: QueueErrors::default(),
        };
        for i in 0..RECV_BATCH {
            q.rx_iov[i].iov_base = q.rx[i].as_mut_ptr() as *mut libc::c_void;
            q.rx_iov[i].iov_len = RECV_SLOT;
            q.rx_hdrs[i].msg_hdr.msg_iov = &mut q.rx_iov[i];
            q.rx_hdrs[i].msg_hdr.msg_iovlen = 1;
        }
        let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        addr.nl_family = libc::AF_NETLINK as u16;
        cvt(unsafe {
            libc::bind(fd, &addr as *const _ as *const libc::sockaddr, std::mem::size_of_val(&addr) as u32)
        })?;
        // A deep receive buffer absorbs bursts while the thread is releasing.
        q.setsockopt(libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, 16 << 20)
            .or_else(|_| q.setsockopt(libc::SOL_SOCKET, libc::SO_RCVBUF, 16 << 20))?;
        q.setsockopt(libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, 4 << 20).ok();

        // 1. bind the queue
        let mut b = Vec::new();
        let s = begin_msg(
            &mut b,
            NFQNL_MSG_CONFIG,
            (libc::NLM_F_REQUEST | libc::NLM_F_ACK) as u16,
            q.next_seq(),
            queue_num,
        );
        put_attr(&mut b, NFQA_CFG_CMD, &[NFQNL_CFG_CMD_BIND, 0, 0, 0]); // cmd, _pad, pf (be16)
        end_msg(&mut b, s);
        q.send_config(&b).map_err(|e| {
            io::Error::new(e.kind(), format!("bind queue {queue_num}: {e} (is another process bound to it?)"))
        })?;

        // 2. queue length, flags (fail-open off; GSO on), then copy mode last: packets start
        //    flowing to us as soon as the copy mode is set. F_GSO also tells the kernel we
        //    take packets whose checksum is not filled in yet (CHECKSUM_PARTIAL): without it,
        //    it computes every checksum in software before queueing, and the receiver then
        //    verifies it in software too (5% of linkem's CPU at 1 Gbit/s; README,
        //    "Performance"). linkem never reads the L4 checksum (a RST rewrite computes its own).
        let mut b = Vec::new();
        let s = begin_msg(
            &mut b,
            NFQNL_MSG_CONFIG,
            (libc::NLM_F_REQUEST | libc::NLM_F_ACK) as u16,
            q.next_seq(),
            queue_num,
        );
        put_attr(&mut b, NFQA_CFG_QUEUE_MAXLEN, &max_len.to_be_bytes());
        put_attr(&mut b, NFQA_CFG_MASK, &(NFQA_CFG_F_FAIL_OPEN | NFQA_CFG_F_GSO).to_be_bytes());
        put_attr(&mut b, NFQA_CFG_FLAGS, &NFQA_CFG_F_GSO.to_be_bytes());
        let mut params = copy_bytes.to_be_bytes().to_vec();
        params.push(NFQNL_COPY_PACKET);
        put_attr(&mut b, NFQA_CFG_PARAMS, &params);
        end_msg(&mut b, s);
        q.send_config(&b).map_err(|e| io::Error::new(e.kind(), format!("configure queue {queue_num}: {e}")))?;
        Ok(q)
    }

    pub fn fd(&self) -> RawFd {
        self.fd
    }

    fn next_seq(&mut self) -> u32 {
        self.seq = self.seq.wrapping_add(1);
        self.seq
    }

    fn setsockopt(&self, level: i32, name: i32, value: i32) -> io::Result<()> {
        cvt(unsafe { libc::setsockopt(self.fd, level, name, &value as *const i32 as *const libc::c_void, 4) })
            .map(|_| ())
    }

    fn send_raw(&self, buf: &[u8]) -> io::Result<()> {
        let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        addr.nl_family = libc::AF_NETLINK as u16;
        loop {
            let r = unsafe {
                libc::sendto(
                    self.fd,
                    buf.as_ptr() as *const libc::c_void,
                    buf.len(),
                    0,
                    &addr as *const _ as *const libc::sockaddr,
                    std::mem::size_of_val(&addr) as u32,
                )
            };
            if r >= 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(e);
            }
        }
    }

    /// Send a config message and wait for its ACK. Packets that arrive meanwhile (after the
    /// copy mode is set) are dropped: linkem is not ready yet and fails closed.
    fn send_config(&mut self, msg: &[u8]) -> io::Result<()> {
        let seq = self.seq;
        self.send_raw(msg)?;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = cvt(unsafe { libc::recv(self.fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len(), 0) } as i32)?
                as usize;
            let mut off = 0;
            while off + NLMSG_HDRLEN <= n {
                let len = u32::from_ne_bytes(buf[off..off + 4].try_into().unwrap()) as usize;
                let typ = u16::from_ne_bytes(buf[off + 4..off + 6].try_into().unwrap());
                let mseq = u32::from_ne_bytes(buf[off + 8..off + 12].try_into().unwrap());
                if len < NLMSG_HDRLEN || off + len > n {
                    break;
                }
                if typ == libc::NLMSG_ERROR as u16 && mseq == seq {
                    let errno = i32::from_ne_bytes(buf[off + 16..off + 20].try_into().unwrap());
                    return if errno == 0 { Ok(()) } else { Err(io::Error::from_raw_os_error(-errno)) };
                }
                if typ == (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET {
                    if let Some(p) = parse_packet(&mut buf[off..off + len]) {
                        self.verdict(p.id, Verdict::Drop);
                    }
                }
                off += (len + 3) & !3;
            }
            self.flush()?;
        }
    }

    /// Receive up to RECV_BATCH packets without blocking; calls `f(packet)` for each.
    /// Returns how many datagrams were read (0 = nothing waiting).
    pub fn recv_batch(&mut self, mut f: impl FnMut(&mut RxPacket)) -> io::Result<usize> {
        let n = unsafe {
            libc::recvmmsg(
                self.fd,
                self.rx_hdrs.as_mut_ptr(),
                RECV_BATCH as u32,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(0),
                Some(libc::ENOBUFS) => {
                    self.errors.socket_overruns += 1;
                    Ok(0)
                }
                _ => Err(e),
            };
        }
        let n = n as usize;
        for (i, hdr) in self.rx_hdrs.iter().enumerate().take(n) {
            // The packet's bytes are this buffer's: a rewrite in place changes a copy only
            // (so this datapath hosts no NAT; main refuses one).
            let len = hdr.msg_len as usize;
            if hdr.msg_hdr.msg_flags & libc::MSG_TRUNC != 0 || len > RECV_SLOT {
                self.errors.malformed += 1;
                continue;
            }
            let mut off = 0;
            while off + NLMSG_HDRLEN <= len {
                let buf = &mut self.rx[i][..len];
                let mlen = u32::from_ne_bytes(buf[off..off + 4].try_into().unwrap()) as usize;
                let typ = u16::from_ne_bytes(buf[off + 4..off + 6].try_into().unwrap());
                if mlen < NLMSG_HDRLEN || off + mlen > len {
                    self.errors.malformed += 1;
                    break;
                }
                let msg = &mut buf[off..off + mlen];
                if typ == (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET {
                    match parse_packet(msg) {
                        Some(mut p) => {
                            self.errors.gso_unsegmented += p.gso as u64;
                            f(&mut p)
                        }
                        None => self.errors.malformed += 1,
                    }
                } else if typ == libc::NLMSG_ERROR as u16 && mlen >= NLMSG_HDRLEN + 4 {
                    let errno = i32::from_ne_bytes(msg[16..20].try_into().unwrap());
                    if errno != 0 {
                        self.errors.verdict_errors += 1;
                        self.errors.last_verdict_errno = -errno;
                    }
                }
                off += (mlen + 3) & !3;
            }
        }
        Ok(n)
    }

    fn push_verdict(&mut self, msg_type: u16, id: u32, verdict: Verdict) {
        if self.tx.len() + VERDICT_MSG_LEN > TX_CAPACITY {
            if let Err(e) = self.flush() {
                crate::say!("linkem: queue {}: verdict send failed: {e}", self.queue_num);
            }
        }
        let seq = self.next_seq();
        let b = &mut self.tx;
        let s = begin_msg(b, msg_type, libc::NLM_F_REQUEST as u16, seq, self.queue_num);
        let v = match verdict {
            Verdict::Accept => NF_ACCEPT,
            Verdict::Drop => NF_DROP,
        };
        put_u16(b, 12);
        put_u16(b, NFQA_VERDICT_HDR);
        b.extend_from_slice(&v.to_be_bytes());
        b.extend_from_slice(&id.to_be_bytes());
        end_msg(b, s);
    }

    /// Verdict one packet (queued; sent by `flush`).
    #[inline]
    pub fn verdict(&mut self, id: u32, verdict: Verdict) {
        self.push_verdict(NFQNL_MSG_VERDICT, id, verdict);
    }

    /// Accept one packet with its bytes replaced by `payload` (NFQA_PAYLOAD; the kernel
    /// trims or extends the packet to it and marks its checksum for full verification).
    pub fn accept_rewritten(&mut self, id: u32, payload: &[u8]) {
        if self.tx.len() + VERDICT_MSG_LEN + 4 + payload.len() + 3 > TX_CAPACITY {
            if let Err(e) = self.flush() {
                crate::say!("linkem: queue {}: verdict send failed: {e}", self.queue_num);
            }
        }
        let seq = self.next_seq();
        let b = &mut self.tx;
        let s = begin_msg(b, NFQNL_MSG_VERDICT, libc::NLM_F_REQUEST as u16, seq, self.queue_num);
        let mut hdr = [0u8; 8];
        hdr[..4].copy_from_slice(&NF_ACCEPT.to_be_bytes());
        hdr[4..].copy_from_slice(&id.to_be_bytes());
        put_attr(b, NFQA_VERDICT_HDR, &hdr);
        put_attr(b, NFQA_PAYLOAD, payload);
        end_msg(b, s);
    }

    /// Verdict every packet still queued in the kernel with id <= `max_id` (queued; sent by
    /// `flush`). Only correct when no packet with a smaller id is meant to stay queued.
    #[inline]
    pub fn verdict_upto(&mut self, max_id: u32, verdict: Verdict) {
        self.push_verdict(NFQNL_MSG_VERDICT_BATCH, max_id, verdict);
    }

    pub fn pending_tx(&self) -> bool {
        !self.tx.is_empty()
    }

    /// Send all queued verdicts in one datagram; the kernel applies them in order.
    pub fn flush(&mut self) -> io::Result<()> {
        if self.tx.is_empty() {
            return Ok(());
        }
        let r = self.send_raw(&self.tx);
        self.tx.clear();
        r
    }
}

impl Drop for NfQueue {
    fn drop(&mut self) {
        // Closing the socket unbinds the queue; the kernel drops what is still queued.
        unsafe { libc::close(self.fd) };
    }
}

fn parse_packet(msg: &mut [u8]) -> Option<RxPacket<'_>> {
    let mut off = NLMSG_HDRLEN + NFGENMSG_LEN;
    let mut id = None;
    let mut payload = 0..0;
    let mut cap_len = None;
    let mut stamp = None;
    let mut gso = false;
    while off + 4 <= msg.len() {
        let alen = u16::from_ne_bytes([msg[off], msg[off + 1]]) as usize;
        let atype = u16::from_ne_bytes([msg[off + 2], msg[off + 3]]) & 0x3fff;
        if alen < 4 || off + alen > msg.len() {
            return None;
        }
        let data = &msg[off + 4..off + alen];
        let be32 = |d: &[u8]| u32::from_be_bytes(d[..4].try_into().unwrap());
        let be64 = |d: &[u8]| u64::from_be_bytes(d[..8].try_into().unwrap());
        match atype {
            NFQA_PACKET_HDR if data.len() >= 4 => id = Some(be32(data)),
            NFQA_PAYLOAD => payload = off + 4..off + alen,
            NFQA_CAP_LEN if data.len() >= 4 => cap_len = Some(be32(data)),
            NFQA_SKB_INFO if data.len() >= 4 => gso = be32(data) & NFQA_SKB_GSO != 0,
            NFQA_TIMESTAMP if data.len() >= 16 => {
                stamp = Some(be64(data) * 1_000_000_000 + be64(&data[8..]) * 1000);
            }
            _ => {}
        }
        off += (alen + 3) & !3;
    }
    let payload_len = payload.len() as u32;
    Some(RxPacket {
        id: id?,
        bytes: &mut msg[payload],
        orig_len: cap_len.unwrap_or(payload_len),
        partial_csum: false,
        kernel_rx_realtime_ns: stamp.filter(|&t| t > 0),
        gso,
    })
}

/// Kernel-side counters of a queue from /proc/net/netfilter/nfnetlink_queue (this netns).
#[derive(Debug, Default, Clone, Copy, serde::Serialize)]
pub struct KernelQueueStats {
    pub waiting: u64,
    /// Dropped because the kernel queue was full (queue max length).
    pub queue_dropped: u64,
    /// Dropped because the netlink socket could not take them.
    pub user_dropped: u64,
}

pub fn kernel_queue_stats(queue_num: u16) -> Option<KernelQueueStats> {
    let text = std::fs::read_to_string("/proc/net/netfilter/nfnetlink_queue").ok()?;
    for line in text.lines() {
        let f: Vec<u64> = line.split_whitespace().filter_map(|x| x.parse().ok()).collect();
        // queue_num portid queue_total copy_mode copy_range queue_dropped user_dropped id_seq 1
        if f.len() >= 7 && f[0] == queue_num as u64 {
            return Some(KernelQueueStats { waiting: f[2], queue_dropped: f[5], user_dropped: f[6] });
        }
    }
    None
}

impl Datapath for NfQueue {
    fn fd(&self) -> RawFd {
        NfQueue::fd(self)
    }
    fn recv_batch<F: FnMut(&mut RxPacket)>(&mut self, f: F) -> io::Result<usize> {
        NfQueue::recv_batch(self, f)
    }
    fn held_ip(&mut self, _id: u32) -> Option<(&mut [u8], bool)> {
        None
    }
    fn verdict(&mut self, id: u32, verdict: Verdict) {
        NfQueue::verdict(self, id, verdict)
    }
    fn accept_rewritten(&mut self, id: u32, ip_packet: &[u8]) {
        NfQueue::accept_rewritten(self, id, ip_packet)
    }
    fn verdict_upto(&mut self, max_id: u32, verdict: Verdict) {
        NfQueue::verdict_upto(self, max_id, verdict)
    }
    fn flush(&mut self) -> io::Result<()> {
        NfQueue::flush(self)
    }
    fn errors(&mut self) -> QueueErrors {
        self.errors
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdict_message_layout() {
        let mut b = Vec::new();
        let s = begin_msg(&mut b, NFQNL_MSG_VERDICT_BATCH, 1, 7, 1);
        put_attr(&mut b, NFQA_VERDICT_HDR, &[0, 0, 0, 1, 0, 0, 0, 42]);
        end_msg(&mut b, s);
        assert_eq!(b.len(), VERDICT_MSG_LEN);
        assert_eq!(u32::from_ne_bytes(b[0..4].try_into().unwrap()) as usize, VERDICT_MSG_LEN);
        assert_eq!(u16::from_ne_bytes(b[4..6].try_into().unwrap()), 0x0303);
        assert_eq!(&b[18..20], &[0, 1]); // queue number, big endian
    }

    #[test]
    fn parses_packet_message() {
        let mut b = Vec::new();
        let s = begin_msg(&mut b, NFQNL_MSG_PACKET, 0, 0, 0);
        put_attr(&mut b, NFQA_PACKET_HDR, &[0, 0, 1, 2, 8, 0, 2, 0]);
        put_attr(&mut b, NFQA_CAP_LEN, &1500u32.to_be_bytes());
        put_attr(&mut b, NFQA_PAYLOAD, &[0x45, 0, 5, 0xdc, 1]);
        end_msg(&mut b, s);
        let p = parse_packet(&mut b).unwrap();
        assert_eq!(p.id, 0x0102);
        assert_eq!(p.bytes, &[0x45, 0, 5, 0xdc, 1]);
        assert_eq!(p.orig_len, 1500);
        assert_eq!(p.kernel_rx_realtime_ns, None);
    }
}
