//! linkem as the router: frames in from a packet socket's receive ring on one device, out
//! through a packet socket on the other, with the kernel's own forwarding switched off.
//!
//! Why: through NFQUEUE every packet costs a netlink message each way, its verdict is looked
//! up in the kernel's queue list, and the rest of its journey (the router's forwarding, the
//! veth, the receiver's stack) runs in linkem's thread when the verdict arrives; linkem's
//! own code was 2-3% of its CPU (README, "Performance"). Here a packet costs one copy into
//! the ring (no syscall: the thread scans frames the kernel marked as its), one copy into
//! linkem's hold, and its share of one `sendmmsg` per release slot.
//!
//! Set-up the testbed does (topology.py): an nftables `netdev` ingress rule drops IPv4 on
//! both router devices, so the kernel neither forwards nor answers; packet sockets
//! (ETH_P_ALL) see each frame before that hook. ARP still reaches the kernel, which answers
//! for the router's addresses, so the endpoints' view (gateway, addresses, routes) is the
//! NFQUEUE datapath's. linkem does what the kernel's forwarding did: it writes the next hop's
//! and the outgoing device's MAC addresses and decrements the TTL (RFC 1624 checksum update).
//!
//! Checksums: with PACKET_VNET_HDR the ring gives each frame a virtio-net header, which says
//! when the sender left its L4 checksum to be filled in (CHECKSUM_PARTIAL, as veths pass
//! packets); linkem sends the frame with the same header, so no one computes a checksum in
//! software, as with NFQUEUE's F_GSO.
//!
//! Holding: a frame is copied out of the ring when read and its ring slot returned at once
//! (a held ring slot would keep the socket readable and the kernel's ring full); linkem's
//! hold is a slab of 2 KiB slots reused last-freed first, so its working set is the packets
//! held, and an id map (`ids`: id -> slot) as long as NFQUEUE's queue (`--queue-maxlen`).

use crate::datapath::{cvt, Datapath, QueueErrors, RxPacket, Verdict, RECV_BATCH};
use std::io;
use std::os::fd::RawFd;

// linux/if_packet.h (stable ABI; not all in the libc crate)
const SOL_PACKET: libc::c_int = 263;
const PACKET_RX_RING: libc::c_int = 5;
const PACKET_STATISTICS: libc::c_int = 6;
const PACKET_VERSION: libc::c_int = 10;
const PACKET_VNET_HDR: libc::c_int = 15;
const PACKET_QDISC_BYPASS: libc::c_int = 20;
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
const TPACKET_V2: libc::c_int = 1;
const TP_STATUS_KERNEL: u32 = 0;
const TP_STATUS_USER: u32 = 1;
const ETH_P_IP: u16 = 0x0800;
const ETH_HLEN: usize = 14;
/// struct virtio_net_hdr (no mergeable buffers): flags, gso_type, hdr_len, gso_size,
/// csum_start, csum_offset.
const VNET_HDR_LEN: usize = 10;
const VIRTIO_NET_HDR_GSO_NONE: u8 = 0;
/// virtio_net_hdr.flags: the L4 checksum is partial, for the device to finish.
const VIRTIO_NET_HDR_F_NEEDS_CSUM: u8 = 1;

/// One ring frame and one hold slot: room for the ring's header and a 1514-byte frame.
const FRAME_SIZE: usize = 2048;
/// Ring blocks of 64 KiB: 32 frames each, allocated without high-order pages.
const BLOCK_SIZE: usize = 64 * 1024;
/// The kernel's ring: 4096 frames (8 MiB) absorb 50 ms at 1 Gbit/s while the thread sleeps.
const RING_FRAMES: usize = 4096;
/// sendmmsg messages per call.
const TX_BATCH: usize = 256;
/// The virtio-net header of a frame whose checksums are all filled in (a middlebox's rewrite).
static NO_OFFLOAD: [u8; VNET_HDR_LEN] = [0; VNET_HDR_LEN];

#[repr(C)]
#[derive(Clone, Copy)]
struct Tpacket2Hdr {
    tp_status: u32,
    tp_len: u32,
    tp_snaplen: u32,
    tp_mac: u16,
    tp_net: u16,
    tp_sec: u32,
    tp_nsec: u32,
    tp_vlan_tci: u16,
    tp_vlan_tpid: u16,
    tp_padding: [u8; 4],
}

#[repr(C)]
struct TpacketReq {
    tp_block_size: u32,
    tp_block_nr: u32,
    tp_frame_size: u32,
    tp_frame_nr: u32,
}

#[repr(C)]
#[derive(Default)]
struct TpacketStats {
    tp_packets: u32,
    tp_drops: u32,
}

/// The devices of one direction and the next hop's MAC address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ports {
    pub ingress: String,
    pub egress: String,
    pub next_hop: [u8; 6],
}

impl Ports {
    /// `IN,OUT,MAC`, e.g. `r0,r1,02:00:00:00:00:02`.
    pub fn parse(s: &str) -> Result<Ports, String> {
        let parts: Vec<&str> = s.split(',').collect();
        let [ingress, egress, mac] = parts[..] else {
            return Err(format!("expected IN,OUT,MAC (devices and the next hop's MAC), got {s:?}"));
        };
        let bad = |what: &str| format!("{what} in {s:?}");
        if ingress.is_empty() || egress.is_empty() || ingress.len() >= libc::IFNAMSIZ || egress.len() >= libc::IFNAMSIZ
        {
            return Err(bad("a device name is empty or too long"));
        }
        let bytes: Vec<u8> =
            mac.split(':').filter_map(|h| (h.len() == 2).then(|| u8::from_str_radix(h, 16).ok()).flatten()).collect();
        let next_hop: [u8; 6] = bytes.try_into().map_err(|_| bad("not a MAC address (aa:bb:cc:dd:ee:ff)"))?;
        Ok(Ports { ingress: ingress.to_string(), egress: egress.to_string(), next_hop })
    }
}

#[derive(Clone, Copy)]
struct Held {
    slot: u32,
    /// Frame length (Ethernet header included).
    len: u16,
}

enum Out {
    /// A hold slot and its frame's length.
    Held(u32, u16),
    Rewritten(Vec<u8>),
}

pub struct PacketPath {
    rx_fd: RawFd,
    tx_fd: RawFd,
    ring: *mut u8,
    ring_len: usize,
    head: usize,
    /// Next id to give; ids count frames read, so they rise with arrival order.
    next_id: u32,
    /// id & mask -> held packet (None: verdicted, or never given).
    ids: Vec<Option<Held>>,
    mask: u32,
    /// Hold slots, FRAME_SIZE bytes each (the frame's virtio-net header, then the frame), and
    /// the free ones (reused last-freed first).
    slab: Vec<u8>,
    free: Vec<u32>,
    /// Lowest id `verdict_upto` has not covered yet.
    upto: u32,
    out: Vec<Out>,
    tx_iov: Vec<[libc::iovec; 2]>,
    tx_hdrs: Vec<libc::mmsghdr>,
    egress_index: i32,
    src_mac: [u8; 6],
    next_hop: [u8; 6],
    pub errors: QueueErrors,
}

// The raw pointers (the ring, the iovecs) belong to this value; only the owning thread uses them.
unsafe impl Send for PacketPath {}

fn setsockopt<T>(fd: RawFd, level: libc::c_int, name: libc::c_int, value: &T) -> io::Result<()> {
    cvt(unsafe {
        libc::setsockopt(fd, level, name, value as *const T as *const libc::c_void, std::mem::size_of::<T>() as u32)
    })
    .map(|_| ())
}

fn packet_socket(what: &str) -> io::Result<RawFd> {
    cvt(unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) })
        .map_err(|e| io::Error::new(e.kind(), format!("{what}: packet socket: {e}")))
}

fn if_index(name: &str) -> io::Result<i32> {
    let c = std::ffi::CString::new(name).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "device name"))?;
    match unsafe { libc::if_nametoindex(c.as_ptr()) } {
        0 => Err(io::Error::new(io::ErrorKind::NotFound, format!("no device {name} in this namespace"))),
        i => Ok(i as i32),
    }
}

fn hw_addr(fd: RawFd, name: &str) -> io::Result<[u8; 6]> {
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in req.ifr_name.iter_mut().zip(name.bytes()) {
        *d = s as libc::c_char;
    }
    cvt(unsafe { libc::ioctl(fd, libc::SIOCGIFHWADDR as _, &mut req) })?;
    let sa = unsafe { req.ifr_ifru.ifru_hwaddr };
    let mut mac = [0u8; 6];
    for (m, b) in mac.iter_mut().zip(sa.sa_data.iter()) {
        *m = *b as u8;
    }
    Ok(mac)
}

fn bind(fd: RawFd, index: i32, protocol: u16) -> io::Result<()> {
    let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    addr.sll_family = libc::AF_PACKET as u16;
    addr.sll_protocol = protocol.to_be();
    addr.sll_ifindex = index;
    cvt(unsafe { libc::bind(fd, &addr as *const _ as *const libc::sockaddr, std::mem::size_of_val(&addr) as u32) })
        .map(|_| ())
}

/// The IPv4 TTL decremented with its header checksum updated (RFC 1624: HC' = ~(~HC + ~m + m'));
/// false if the packet's time is up (the kernel would drop it and say so by ICMP).
fn decrement_ttl(ip: &mut [u8]) -> bool {
    if ip.len() < 20 || ip[8] <= 1 {
        return false;
    }
    let old = u16::from_be_bytes([ip[8], ip[9]]);
    ip[8] -= 1;
    let new = u16::from_be_bytes([ip[8], ip[9]]);
    let hc = crate::packet::csum_update(u16::from_be_bytes([ip[10], ip[11]]), old, new);
    ip[10..12].copy_from_slice(&hc.to_be_bytes());
    true
}

impl PacketPath {
    /// Frames from `ports.ingress`, out on `ports.egress`; `max_held` packets at most held at
    /// once (rounded up to a power of two).
    pub fn open(ports: &Ports, max_held: u32) -> io::Result<PacketPath> {
        let in_index = if_index(&ports.ingress)?;
        let egress_index = if_index(&ports.egress)?;
        let rx_fd = packet_socket(&ports.ingress)?;
        let tx_fd = packet_socket(&ports.egress)?;
        let ids_len = max_held.max(1024).next_power_of_two();
        let mut p = PacketPath {
            rx_fd,
            tx_fd,
            ring: std::ptr::null_mut(),
            ring_len: 0,
            head: 0,
            next_id: 0,
            ids: vec![None; ids_len as usize],
            mask: ids_len - 1,
            slab: Vec::new(),
            free: Vec::new(),
            upto: 0,
            out: Vec::with_capacity(TX_BATCH),
            tx_iov: Vec::with_capacity(TX_BATCH),
            tx_hdrs: Vec::with_capacity(TX_BATCH),
            egress_index,
            src_mac: hw_addr(tx_fd, &ports.egress)?,
            next_hop: ports.next_hop,
            errors: QueueErrors { kernel_dropped: Some(0), ..QueueErrors::default() },
        };
        let ctx = |what: &'static str| {
            move |e: io::Error| io::Error::new(e.kind(), format!("{}: {what}: {e}", ports.ingress))
        };
        setsockopt(rx_fd, SOL_PACKET, PACKET_VERSION, &TPACKET_V2).map_err(ctx("TPACKET_V2"))?;
        let on: libc::c_int = 1;
        setsockopt(rx_fd, SOL_PACKET, PACKET_VNET_HDR, &on).map_err(ctx("PACKET_VNET_HDR"))?;
        setsockopt(rx_fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &on).map_err(ctx("PACKET_IGNORE_OUTGOING"))?;
        let req = TpacketReq {
            tp_block_size: BLOCK_SIZE as u32,
            tp_block_nr: (RING_FRAMES * FRAME_SIZE / BLOCK_SIZE) as u32,
            tp_frame_size: FRAME_SIZE as u32,
            tp_frame_nr: RING_FRAMES as u32,
        };
        setsockopt(rx_fd, SOL_PACKET, PACKET_RX_RING, &req).map_err(ctx("PACKET_RX_RING"))?;
        p.ring_len = RING_FRAMES * FRAME_SIZE;
        let ring = unsafe {
            libc::mmap(std::ptr::null_mut(), p.ring_len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, rx_fd, 0)
        };
        if ring == libc::MAP_FAILED {
            return Err(ctx("mmap of the ring")(io::Error::last_os_error()));
        }
        p.ring = ring as *mut u8;
        // Bound last: frames flow from here on.
        bind(rx_fd, in_index, libc::ETH_P_ALL as u16).map_err(ctx("bind"))?;
        setsockopt(tx_fd, SOL_PACKET, PACKET_VNET_HDR, &on)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: PACKET_VNET_HDR: {e}", ports.egress)))?;
        // Straight to the device's transmit: a veth has no queue to use.
        setsockopt(tx_fd, SOL_PACKET, PACKET_QDISC_BYPASS, &on).ok();
        // Room for a whole release slot's frames (a full send buffer would block the sender).
        let sndbuf: libc::c_int = 4 << 20;
        setsockopt(tx_fd, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, &sndbuf)
            .or_else(|_| setsockopt(tx_fd, libc::SOL_SOCKET, libc::SO_SNDBUF, &sndbuf))
            .ok();
        // Protocol 0: the sending socket receives nothing.
        bind(tx_fd, egress_index, 0).map_err(|e| io::Error::new(e.kind(), format!("{}: bind: {e}", ports.egress)))?;
        Ok(p)
    }

    fn frame(&self, i: usize) -> *mut u8 {
        unsafe { self.ring.add(i * FRAME_SIZE) }
    }

    fn slot_bytes(&mut self, slot: u32) -> &mut [u8] {
        let start = slot as usize * FRAME_SIZE;
        &mut self.slab[start..start + FRAME_SIZE]
    }

    fn alloc_slot(&mut self) -> u32 {
        self.free.pop().unwrap_or_else(|| {
            let slot = (self.slab.len() / FRAME_SIZE) as u32;
            self.slab.resize(self.slab.len() + FRAME_SIZE, 0);
            slot
        })
    }

    fn release_id(&mut self, id: u32) -> Option<Held> {
        let h = self.ids[(id & self.mask) as usize].take();
        if let Some(h) = h {
            self.free.push(h.slot);
        }
        h
    }

    fn kernel_stats(&mut self) {
        let mut st = TpacketStats::default();
        let mut len = std::mem::size_of::<TpacketStats>() as libc::socklen_t;
        // Reading the counters resets them in the kernel: keep the running sum.
        let r = unsafe {
            libc::getsockopt(
                self.rx_fd,
                SOL_PACKET,
                PACKET_STATISTICS,
                &mut st as *mut _ as *mut libc::c_void,
                &mut len,
            )
        };
        if r == 0 {
            self.errors.kernel_dropped = Some(self.errors.kernel_dropped.unwrap_or(0) + st.tp_drops as u64);
        }
    }

    /// Send what `out` holds, in order, `TX_BATCH` per `sendmmsg`.
    fn send_out(&mut self) -> io::Result<()> {
        let mut result = Ok(());
        let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_protocol = ETH_P_IP.to_be();
        addr.sll_ifindex = self.egress_index;
        addr.sll_halen = 6;
        addr.sll_addr[..6].copy_from_slice(&self.next_hop);
        let out = std::mem::take(&mut self.out);
        for chunk in out.chunks(TX_BATCH) {
            self.tx_iov.clear();
            self.tx_hdrs.clear();
            for o in chunk {
                let (vnet, base, len): (*const u8, *const u8, usize) = match o {
                    Out::Held(slot, len) => {
                        let start = *slot as usize * FRAME_SIZE;
                        (self.slab[start..].as_ptr(), self.slab[start + VNET_HDR_LEN..].as_ptr(), *len as usize)
                    }
                    Out::Rewritten(b) => (NO_OFFLOAD.as_ptr(), b.as_ptr(), b.len()),
                };
                self.tx_iov.push([
                    libc::iovec { iov_base: vnet as *mut libc::c_void, iov_len: VNET_HDR_LEN },
                    libc::iovec { iov_base: base as *mut libc::c_void, iov_len: len },
                ]);
            }
            for iov in self.tx_iov.iter_mut() {
                let mut h: libc::mmsghdr = unsafe { std::mem::zeroed() };
                h.msg_hdr.msg_name = &mut addr as *mut _ as *mut libc::c_void;
                h.msg_hdr.msg_namelen = std::mem::size_of_val(&addr) as u32;
                h.msg_hdr.msg_iov = iov.as_mut_ptr();
                h.msg_hdr.msg_iovlen = 2;
                self.tx_hdrs.push(h);
            }
            let mut sent = 0;
            while sent < self.tx_hdrs.len() {
                let n = unsafe {
                    libc::sendmmsg(self.tx_fd, self.tx_hdrs[sent..].as_mut_ptr(), (self.tx_hdrs.len() - sent) as u32, 0)
                };
                if n < 0 {
                    let e = io::Error::last_os_error();
                    if e.raw_os_error() == Some(libc::EINTR) {
                        continue;
                    }
                    // The rest of this batch is lost; count it as the kernel's refusal.
                    self.errors.verdict_errors += (self.tx_hdrs.len() - sent) as u64;
                    self.errors.last_verdict_errno = e.raw_os_error().unwrap_or(0);
                    result = Err(e);
                    break;
                }
                sent += n as usize;
            }
        }
        for o in &out {
            if let Out::Held(slot, _) = o {
                self.free.push(*slot);
            }
        }
        self.out = out;
        self.out.clear();
        result
    }

    /// Queue a held packet to leave: the router's rewrite (MACs, TTL) in its slot, now.
    fn accept(&mut self, id: u32) {
        let Some(h) = self.ids[(id & self.mask) as usize].take() else { return };
        let (src, dst) = (self.src_mac, self.next_hop);
        let b = self.slot_bytes(h.slot);
        let frame = &mut b[VNET_HDR_LEN..VNET_HDR_LEN + h.len as usize];
        frame[..6].copy_from_slice(&dst);
        frame[6..12].copy_from_slice(&src);
        if decrement_ttl(&mut frame[ETH_HLEN..]) {
            self.out.push(Out::Held(h.slot, h.len));
        } else {
            self.free.push(h.slot);
        }
    }
}

impl Datapath for PacketPath {
    fn fd(&self) -> RawFd {
        self.rx_fd
    }

    fn recv_batch<F: FnMut(&mut RxPacket)>(&mut self, mut f: F) -> io::Result<usize> {
        let mut n = 0;
        while n < RECV_BATCH {
            let frame = self.frame(self.head);
            let hdr = unsafe { std::ptr::read_volatile(frame as *const Tpacket2Hdr) };
            if hdr.tp_status & TP_STATUS_USER == 0 {
                break;
            }
            // Acquire: the frame's bytes are the kernel's before its status said so.
            std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
            n += 1;
            let id = self.next_id;
            self.next_id = self.next_id.wrapping_add(1);
            let mac = hdr.tp_mac as usize;
            let snap = hdr.tp_snaplen as usize;
            // Whole frames only: a longer one was cut to the frame (never on a 1500-byte MTU).
            let whole = snap == hdr.tp_len as usize
                && snap > ETH_HLEN
                && mac >= VNET_HDR_LEN
                && mac + snap <= FRAME_SIZE
                && VNET_HDR_LEN + snap <= FRAME_SIZE;
            let ethertype = if mac + ETH_HLEN <= FRAME_SIZE && snap >= ETH_HLEN {
                unsafe { u16::from_be_bytes([*frame.add(mac + 12), *frame.add(mac + 13)]) }
            } else {
                0
            };
            let slot_free = self.ids[(id & self.mask) as usize].is_none();
            if ethertype == ETH_P_IP && whole && slot_free {
                // The virtio-net header the kernel put just before the frame, then the frame.
                let data = unsafe { std::slice::from_raw_parts(frame.add(mac - VNET_HDR_LEN), VNET_HDR_LEN + snap) };
                if data[1] != VIRTIO_NET_HDR_GSO_NONE {
                    self.errors.gso_unsegmented += 1;
                }
                let slot = self.alloc_slot();
                let start = slot as usize * FRAME_SIZE;
                self.slab[start..start + VNET_HDR_LEN + snap].copy_from_slice(data);
                self.ids[(id & self.mask) as usize] = Some(Held { slot, len: snap as u16 });
                let stamp = hdr.tp_sec as u64 * 1_000_000_000 + hdr.tp_nsec as u64;
                let partial_csum = data[0] & VIRTIO_NET_HDR_F_NEEDS_CSUM != 0;
                let ip = &mut self.slab[start + VNET_HDR_LEN + ETH_HLEN..start + VNET_HDR_LEN + snap];
                f(&mut RxPacket {
                    id,
                    bytes: ip,
                    orig_len: (snap - ETH_HLEN) as u32,
                    partial_csum,
                    kernel_rx_realtime_ns: (stamp > 0).then_some(stamp),
                    gso: false,
                });
            } else if ethertype == ETH_P_IP {
                // Cut short, or the hold is full: dropped, and counted. (ARP goes to the
                // kernel, which answers for the router's addresses; it is not forwarded.)
                self.errors.malformed += (!whole) as u64;
                self.errors.held_overflow += (!slot_free) as u64;
            }
            // Release: the kernel may write this frame again once it reads the new status.
            std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
            unsafe { std::ptr::write_volatile(frame as *mut u32, TP_STATUS_KERNEL) };
            self.head = (self.head + 1) % RING_FRAMES;
        }
        Ok(n)
    }

    fn held_ip(&mut self, id: u32) -> Option<(&mut [u8], bool)> {
        let h = self.ids[(id & self.mask) as usize]?;
        let b = self.slot_bytes(h.slot);
        let partial = b[0] & VIRTIO_NET_HDR_F_NEEDS_CSUM != 0;
        Some((&mut b[VNET_HDR_LEN + ETH_HLEN..VNET_HDR_LEN + h.len as usize], partial))
    }

    fn verdict(&mut self, id: u32, verdict: Verdict) {
        match verdict {
            Verdict::Accept => self.accept(id),
            Verdict::Drop => {
                self.release_id(id);
            }
        }
    }

    fn accept_rewritten(&mut self, id: u32, ip_packet: &[u8]) {
        if self.release_id(id).is_none() {
            return;
        }
        let mut b = Vec::with_capacity(ETH_HLEN + ip_packet.len());
        b.extend_from_slice(&self.next_hop);
        b.extend_from_slice(&self.src_mac);
        b.extend_from_slice(&ETH_P_IP.to_be_bytes());
        b.extend_from_slice(ip_packet);
        if decrement_ttl(&mut b[ETH_HLEN..]) {
            // The rewrite computed its own checksums: no checksum left to the kernel.
            self.out.push(Out::Rewritten(b));
        }
    }

    fn verdict_upto(&mut self, max_id: u32, verdict: Verdict) {
        // Every id from the last covered one up to max_id that is still held (ids below were
        // covered, or verdicted one by one). Ids wrap: compare by distance.
        let end = max_id.wrapping_add(1);
        while end.wrapping_sub(self.upto) as i32 > 0 {
            let id = self.upto;
            self.upto = self.upto.wrapping_add(1);
            if self.ids[(id & self.mask) as usize].is_some() {
                self.verdict(id, verdict);
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.out.is_empty() {
            return Ok(());
        }
        self.send_out()
    }

    fn errors(&mut self) -> QueueErrors {
        self.kernel_stats();
        self.errors
    }
}

impl Drop for PacketPath {
    fn drop(&mut self) {
        unsafe {
            if !self.ring.is_null() {
                libc::munmap(self.ring as *mut libc::c_void, self.ring_len);
            }
            libc::close(self.rx_fd);
            libc::close(self.tx_fd);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttl_decrement_keeps_the_header_checksum_right() {
        // A real IPv4 header (checksum 0xb1e6 for TTL 64), recomputed from scratch after.
        let mut ip = [0x45u8, 0, 0, 0x73, 0, 0, 0x40, 0, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8, 0, 1, 0xc0, 0xa8, 0, 0xc7];
        let full = |h: &[u8]| {
            let mut s: u32 = h
                .chunks(2)
                .enumerate()
                .filter(|(i, _)| *i != 5)
                .map(|(_, c)| u16::from_be_bytes([c[0], c[1]]) as u32)
                .sum();
            while s >> 16 != 0 {
                s = (s & 0xffff) + (s >> 16);
            }
            !(s as u16)
        };
        assert_eq!(full(&ip), 0xb861);
        assert!(decrement_ttl(&mut ip));
        assert_eq!(ip[8], 63);
        assert_eq!(u16::from_be_bytes([ip[10], ip[11]]), full(&ip));
        ip[8] = 1;
        assert!(!decrement_ttl(&mut ip));
    }

    #[test]
    fn ports_parse_and_refuse() {
        let p = Ports::parse("r0,r1,02:00:0a:0b:0c:ff").unwrap();
        assert_eq!((p.ingress.as_str(), p.egress.as_str()), ("r0", "r1"));
        assert_eq!(p.next_hop, [2, 0, 0x0a, 0x0b, 0x0c, 0xff]);
        for bad in ["r0,r1", "r0,r1,02:00", ",r1,02:00:0a:0b:0c:ff", "r0,r1,zz:00:0a:0b:0c:ff"] {
            assert!(Ports::parse(bad).is_err(), "{bad}");
        }
    }
}
