//! A NAT in front of the bottleneck: the client's IPv4 address and port translated to a
//! public one, as a home router does, so that a path can rebind under a live connection
//! (Langley et al. §3.7: "NAT timeout and rebinding (which tend to be more aggressive for
//! UDP than for TCP)").
//!
//! - Mapping is endpoint-independent (RFC 4787 REQ-1, RFC 5382 REQ-1): one binding per
//!   (protocol, internal address, internal port), whatever the remote end; filtering too
//!   (a packet from any remote reaches a live binding's external port).
//! - A binding expires after its protocol's idle time: UDP's, TCP's while established, and
//!   TCP's transitory one once a FIN or RST was seen or before the handshake completed
//!   (RFC 5382 REQ-5). The next outbound packet of that internal end gets a new external
//!   port: a rebinding, as a real NAT does after a timeout.
//! - A scheduled rebinding (`rebind_at_ns`, `rebind_every_ns`) moves a live binding, on its
//!   own clock, to a new external port or to the other public address as well: the same
//!   rebinding without the wait, at the client's next packet or at its time
//!   (`rebind_on_outbound`).
//! - An inbound packet for no live binding is not forwarded (`Inbound::NoBinding`: the
//!   datapath drops it).
//!
//! Checksums are updated incrementally (RFC 1624), the IPv4 header's always and the L4 one
//! as the packet carries it: a full checksum over the changed address and port words; a
//! partial one (CHECKSUM_PARTIAL, the pseudo-header sum the sender's kernel left for the
//! device to finish) over the address words only, uncomplemented; a UDP checksum of 0
//! (none) stays 0. Why by hand: the rewrite is a few words in place, on the packet path.

use crate::packet::{csum_update, fold, PROTO_TCP, PROTO_UDP};
use std::collections::HashMap;
use std::net::Ipv4Addr;

const NS: u64 = 1_000_000_000;
/// TCP flags (byte 13 of the header).
const FIN: u8 = 0x01;
const SYN: u8 = 0x02;
const RST: u8 = 0x04;
const ACK: u8 = 0x10;

/// The NAT's settings. Defaults: RFC 4787 REQ-5 asks UDP bindings to last at least 2 min
/// (many home routers keep 30-60 s; scenarios set their own), RFC 5382 REQ-5 at least 2 h
/// 4 min for an established TCP connection and 4 min for a transitory one.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct NatConfig {
    pub public: Ipv4Addr,
    /// External ports handed out, in turn, wrapping.
    pub ports: (u16, u16),
    pub udp_timeout_ns: u64,
    pub tcp_established_timeout_ns: u64,
    pub tcp_transitory_timeout_ns: u64,
    /// Scheduled rebindings, each binding's own: this long after the binding was made (its
    /// flow's first packet), it moves. A binding's clock, not linkem's, so every run of an
    /// experiment on one linkem meets its rebinding at the same point of its transfer.
    pub rebind_at_ns: Vec<u64>,
    /// Then again every this long after the last of `rebind_at_ns` (0: no more).
    pub rebind_every_ns: u64,
    /// A scheduled rebinding moves a binding between `public` and this address (a new
    /// address, not only a new port); None: the port only.
    pub rebind_public: Option<Ipv4Addr>,
    /// When a due rebinding happens: at the client's next packet (true: the NAT gives that
    /// packet a new mapping, and the old one reached the client until then, as the interop
    /// runner's rebinding scenarios let every server packet through), or at its time (false:
    /// the old mapping dies then, and the server's packets to it are dropped until the
    /// client speaks; a client that only receives may never learn of it).
    pub rebind_on_outbound: bool,
    /// A moving client's second path behind a NAT of its own (`crate::handover`): its
    /// internal address, and the public address its bindings get (a phone's LTE behind the
    /// carrier's NAT, its Wi-Fi behind the home router's `public`).
    pub second_path: Option<(Ipv4Addr, Ipv4Addr)>,
}

impl Default for NatConfig {
    fn default() -> Self {
        NatConfig {
            public: DEFAULT_PUBLIC,
            ports: (20000, 59999),
            udp_timeout_ns: 120 * NS,
            tcp_established_timeout_ns: 7440 * NS,
            tcp_transitory_timeout_ns: 240 * NS,
            rebind_at_ns: Vec::new(),
            rebind_every_ns: 0,
            rebind_public: None,
            rebind_on_outbound: true,
            second_path: None,
        }
    }
}

/// The public address by default, and the second one an address rebinding moves to: in the
/// benchmarking range (RFC 2544) beside the testbed's own subnets, and on none of them.
pub const DEFAULT_PUBLIC: Ipv4Addr = Ipv4Addr::new(198, 18, 5, 1);
pub const DEFAULT_REBIND_PUBLIC: Ipv4Addr = Ipv4Addr::new(198, 18, 6, 1);

impl NatConfig {
    /// When a binding made at 0 moves for the `n`th time (from 0), if it ever does.
    fn move_at(&self, n: usize) -> Option<u64> {
        if let Some(&t) = self.rebind_at_ns.get(n) {
            return Some(t);
        }
        if self.rebind_every_ns == 0 {
            return None;
        }
        let base = self.rebind_at_ns.last().copied().unwrap_or(0);
        let k = (n - self.rebind_at_ns.len()) as u64 + 1;
        Some(base.saturating_add(k.saturating_mul(self.rebind_every_ns)))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Internal {
    proto: u8,
    addr: Ipv4Addr,
    port: u16,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct External {
    proto: u8,
    addr: Ipv4Addr,
    port: u16,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TcpPhase {
    /// Before the handshake completed, or after a FIN or RST: the short idle time.
    Transitory,
    Established,
}

#[derive(Clone, Copy, Debug)]
struct Binding {
    external: External,
    last_ns: u64,
    tcp: TcpPhase,
    created_ns: u64,
    /// Scheduled rebindings done.
    moves: usize,
    /// When it moves next (u64::MAX: never).
    next_move_ns: u64,
}

/// Why a binding changed its external end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Cause {
    /// Its idle time passed; the internal end's next packet made a new one.
    Expired,
    /// A scheduled rebinding.
    Scheduled,
}

/// One rebinding, for the stats: which flow's end moved, from where to where, when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NatEvent {
    /// linkem's clock (ns since start).
    pub t_ns: u64,
    pub proto: u8,
    pub internal: (Ipv4Addr, u16),
    pub from: (Ipv4Addr, u16),
    pub to: (Ipv4Addr, u16),
    pub cause: Cause,
}

/// Events kept (the counters go on past it).
pub const MAX_EVENTS: usize = 10_000;

/// What the NAT did to an outbound packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outbound {
    /// Translated on an existing binding.
    Translated,
    /// Translated on a new binding; `rebound`: its internal end had one before (expired or
    /// moved), so the remote end sees the connection arrive from a new port.
    NewBinding { rebound: bool },
    /// Not IPv4 TCP or UDP with a readable header: passed as it is.
    Passed,
}

/// What the NAT did to an inbound packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inbound {
    Translated,
    /// For a port with no live binding: not to be forwarded.
    NoBinding,
    Passed,
}

/// The counters the stats report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NatCounters {
    pub bindings_created: u64,
    pub rebindings: u64,
    pub expired: u64,
    pub scheduled_rebindings: u64,
    pub inbound_without_binding: u64,
    /// Rebindings beyond `MAX_EVENTS`, not in `events`.
    pub events_not_kept: u64,
}

#[derive(Debug)]
pub struct Nat {
    cfg: NatConfig,
    by_internal: HashMap<Internal, Binding>,
    by_external: HashMap<External, Internal>,
    /// Internal ends that had a binding once, and its last external end: a new one for
    /// them is a rebinding.
    seen: HashMap<Internal, External>,
    next_port: u16,
    /// The earliest `next_move_ns` of any binding (u64::MAX: none due).
    next_move_ns: u64,
    /// Sweep for idle bindings no more often than this (ns); a binding looked up is
    /// checked for idleness at once, so this only frees the table.
    last_sweep_ns: u64,
    pub counters: NatCounters,
    pub events: Vec<NatEvent>,
}

/// Idle bindings no packet asks for are swept this often.
const SWEEP_NS: u64 = 100_000_000;

impl Nat {
    pub fn new(cfg: NatConfig) -> Nat {
        let mut cfg = cfg;
        cfg.rebind_at_ns.sort_unstable();
        Nat {
            next_port: cfg.ports.0,
            cfg,
            by_internal: HashMap::new(),
            by_external: HashMap::new(),
            seen: HashMap::new(),
            next_move_ns: u64::MAX,
            last_sweep_ns: 0,
            counters: NatCounters::default(),
            events: Vec::new(),
        }
    }

    pub fn config(&self) -> &NatConfig {
        &self.cfg
    }

    /// Live bindings.
    pub fn len(&self) -> usize {
        self.by_internal.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_internal.is_empty()
    }

    /// Client to server: the source becomes the binding's public address and port.
    pub fn outbound(&mut self, ip: &mut [u8], partial_csum: bool, now_ns: u64) -> Outbound {
        let Some(h) = Header::read(ip) else { return Outbound::Passed };
        self.advance(now_ns);
        let internal = Internal { proto: h.proto, addr: h.src, port: h.sport };
        self.expire_if_idle(internal, now_ns);
        if self.by_internal.get(&internal).is_some_and(|b| b.next_move_ns <= now_ns) {
            self.move_binding(internal, now_ns);
        }
        let mut outcome = Outbound::Translated;
        if !self.by_internal.contains_key(&internal) {
            let before = self.seen.get(&internal).copied();
            let external = self.allocate(h.proto, self.public_of(h.src));
            self.bind(internal, external, now_ns);
            self.counters.bindings_created += 1;
            if let Some(from) = before {
                self.counters.rebindings += 1;
                self.record(now_ns, internal, from, external, Cause::Expired);
            }
            outcome = Outbound::NewBinding { rebound: before.is_some() };
        }
        let binding = self.by_internal.get_mut(&internal).expect("bound above");
        binding.last_ns = now_ns;
        binding.tcp = tcp_phase(binding.tcp, h.tcp_flags, h.proto);
        let ext = binding.external;
        rewrite(ip, &h, End::Source, ext.addr, ext.port, partial_csum);
        outcome
    }

    /// Server to client: a live binding's public address and port become the internal end.
    pub fn inbound(&mut self, ip: &mut [u8], partial_csum: bool, now_ns: u64) -> Inbound {
        let Some(h) = Header::read(ip) else { return Inbound::Passed };
        self.advance(now_ns);
        let external = External { proto: h.proto, addr: h.dst, port: h.dport };
        if let Some(&internal) = self.by_external.get(&external) {
            self.expire_if_idle(internal, now_ns);
        }
        let Some(&internal) = self.by_external.get(&external) else {
            self.counters.inbound_without_binding += 1;
            return Inbound::NoBinding;
        };
        let binding = self.by_internal.get_mut(&internal).expect("both maps agree");
        binding.last_ns = now_ns;
        binding.tcp = tcp_phase(binding.tcp, h.tcp_flags, h.proto);
        rewrite(ip, &h, End::Destination, internal.addr, internal.port, partial_csum);
        Inbound::Translated
    }

    fn idle_limit(&self, proto: u8, b: &Binding) -> u64 {
        match (proto, b.tcp) {
            (PROTO_UDP, _) => self.cfg.udp_timeout_ns,
            (_, TcpPhase::Established) => self.cfg.tcp_established_timeout_ns,
            _ => self.cfg.tcp_transitory_timeout_ns,
        }
    }

    /// The binding of `internal`, gone if it was idle too long by `now_ns`.
    fn expire_if_idle(&mut self, internal: Internal, now_ns: u64) {
        let Some(b) = self.by_internal.get(&internal) else { return };
        if now_ns.saturating_sub(b.last_ns) >= self.idle_limit(internal.proto, b) {
            self.unbind(internal);
            self.counters.expired += 1;
        }
    }

    /// Sweep idle bindings now and then, and carry out the scheduled rebindings due by
    /// `now_ns`.
    fn advance(&mut self, now_ns: u64) {
        if now_ns.saturating_sub(self.last_sweep_ns) >= SWEEP_NS {
            self.last_sweep_ns = now_ns;
            let gone: Vec<Internal> = self
                .by_internal
                .iter()
                .filter(|(k, b)| now_ns.saturating_sub(b.last_ns) >= self.idle_limit(k.proto, b))
                .map(|(k, _)| *k)
                .collect();
            for k in gone {
                self.unbind(k);
                self.counters.expired += 1;
            }
        }
        if self.cfg.rebind_on_outbound || now_ns < self.next_move_ns {
            return; // on the client's next packet: `outbound` moves its own binding
        }
        let due: Vec<Internal> =
            self.by_internal.iter().filter(|(_, b)| b.next_move_ns <= now_ns).map(|(k, _)| *k).collect();
        for internal in due {
            self.move_binding(internal, now_ns);
        }
        self.next_move_ns = self.by_internal.values().map(|b| b.next_move_ns).min().unwrap_or(u64::MAX);
    }

    /// A scheduled rebinding: the binding to a new external port (and to the other public
    /// address, when configured), so the remote end sees the flow arrive from elsewhere.
    /// Moves missed while no packet passed are one move, at the last of them.
    fn move_binding(&mut self, internal: Internal, now_ns: u64) {
        let Some(old) = self.by_internal.get(&internal).copied() else { return };
        let mut moves = old.moves + 1;
        // at its time, or at the packet that found it due
        let mut at_ns = if self.cfg.rebind_on_outbound { now_ns } else { old.next_move_ns };
        let mut next_move_ns = self.cfg.move_at(moves).map_or(u64::MAX, |t| old.created_ns.saturating_add(t));
        while next_move_ns <= now_ns {
            if !self.cfg.rebind_on_outbound {
                at_ns = next_move_ns;
            }
            moves += 1;
            next_move_ns = self.cfg.move_at(moves).map_or(u64::MAX, |t| old.created_ns.saturating_add(t));
        }
        let addr = match self.cfg.rebind_public {
            Some(other) if old.external.addr == other => self.cfg.public,
            Some(other) => other,
            None => old.external.addr,
        };
        self.by_external.remove(&old.external);
        let external = self.allocate(internal.proto, addr);
        self.by_external.insert(external, internal);
        self.by_internal.insert(internal, Binding { external, moves, next_move_ns, ..old });
        self.seen.insert(internal, external);
        self.counters.scheduled_rebindings += 1;
        self.record(at_ns, internal, old.external, external, Cause::Scheduled);
    }

    fn record(&mut self, t_ns: u64, internal: Internal, from: External, to: External, cause: Cause) {
        if self.events.len() >= MAX_EVENTS {
            self.counters.events_not_kept += 1;
            return;
        }
        self.events.push(NatEvent {
            t_ns,
            proto: internal.proto,
            internal: (internal.addr, internal.port),
            from: (from.addr, from.port),
            to: (to.addr, to.port),
            cause,
        });
    }

    fn bind(&mut self, internal: Internal, external: External, now_ns: u64) {
        let tcp = TcpPhase::Transitory;
        let next_move_ns = self.cfg.move_at(0).map_or(u64::MAX, |t| now_ns.saturating_add(t));
        self.next_move_ns = self.next_move_ns.min(next_move_ns);
        let b = Binding { external, last_ns: now_ns, tcp, created_ns: now_ns, moves: 0, next_move_ns };
        self.by_internal.insert(internal, b);
        self.by_external.insert(external, internal);
        self.seen.insert(internal, external);
    }

    fn unbind(&mut self, internal: Internal) {
        if let Some(b) = self.by_internal.remove(&internal) {
            self.by_external.remove(&b.external);
        }
    }

    /// The public address a new binding of internal address `addr` gets.
    fn public_of(&self, addr: Ipv4Addr) -> Ipv4Addr {
        match self.cfg.second_path {
            Some((internal, public)) if internal == addr => public,
            _ => self.cfg.public,
        }
    }

    /// The next free external port of the range on `public`, in turn (a port is not reused
    /// while bound).
    fn allocate(&mut self, proto: u8, public: Ipv4Addr) -> External {
        let (lo, hi) = self.cfg.ports;
        let span = u32::from(hi - lo) + 1;
        for _ in 0..span {
            let port = self.next_port;
            self.next_port = if port >= hi { lo } else { port + 1 };
            let candidate = External { proto, addr: public, port };
            if !self.by_external.contains_key(&candidate) {
                return candidate;
            }
        }
        // every port of this address bound: its oldest binding gives way, as a full NAT
        // table does
        let oldest = self
            .by_internal
            .iter()
            .filter(|(k, b)| k.proto == proto && b.external.addr == public)
            .min_by_key(|(_, b)| b.last_ns)
            .map(|(k, _)| *k)
            .expect("a full port range has bindings on its address");
        let external = self.by_internal[&oldest].external;
        self.unbind(oldest);
        external
    }
}

fn tcp_phase(now: TcpPhase, flags: u8, proto: u8) -> TcpPhase {
    if proto != PROTO_TCP {
        return now;
    }
    if flags & (FIN | RST) != 0 {
        TcpPhase::Transitory
    } else if flags & ACK != 0 && flags & SYN == 0 {
        TcpPhase::Established
    } else {
        now
    }
}

/// The fields of an IPv4 TCP or UDP packet the NAT reads.
struct Header {
    ihl: usize,
    proto: u8,
    src: Ipv4Addr,
    dst: Ipv4Addr,
    sport: u16,
    dport: u16,
    tcp_flags: u8,
}

impl Header {
    fn read(ip: &[u8]) -> Option<Header> {
        if ip.len() < 20 || ip[0] >> 4 != 4 {
            return None;
        }
        let ihl = usize::from(ip[0] & 0x0f) * 4;
        let proto = ip[9];
        let fragment = u16::from_be_bytes([ip[6], ip[7]]) & 0x1fff != 0;
        let l4_len = if proto == PROTO_TCP { 20 } else { 8 };
        if ihl < 20 || fragment || !matches!(proto, PROTO_TCP | PROTO_UDP) || ip.len() < ihl + l4_len {
            return None;
        }
        let word = |i: usize| u16::from_be_bytes([ip[i], ip[i + 1]]);
        Some(Header {
            ihl,
            proto,
            src: Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]),
            dst: Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]),
            sport: word(ihl),
            dport: word(ihl + 2),
            tcp_flags: if proto == PROTO_TCP { ip[ihl + 13] } else { 0 },
        })
    }

    /// Where the L4 checksum lives.
    fn csum_at(&self) -> usize {
        self.ihl + if self.proto == PROTO_TCP { 16 } else { 6 }
    }
}

enum End {
    Source,
    Destination,
}

/// The packet's source or destination set to `addr`:`port`, its checksums kept right.
fn rewrite(ip: &mut [u8], h: &Header, end: End, addr: Ipv4Addr, port: u16, partial_csum: bool) {
    let (addr_at, port_at, old_addr, old_port) = match end {
        End::Source => (12, h.ihl, h.src, h.sport),
        End::Destination => (16, h.ihl + 2, h.dst, h.dport),
    };
    let old_words = addr_words(old_addr);
    let new_words = addr_words(addr);
    ip[addr_at..addr_at + 4].copy_from_slice(&addr.octets());
    ip[port_at..port_at + 2].copy_from_slice(&port.to_be_bytes());
    let mut header = u16::from_be_bytes([ip[10], ip[11]]);
    for (o, n) in old_words.iter().zip(&new_words) {
        header = csum_update(header, *o, *n);
    }
    ip[10..12].copy_from_slice(&header.to_be_bytes());

    let at = h.csum_at();
    let mut l4 = u16::from_be_bytes([ip[at], ip[at + 1]]);
    if h.proto == PROTO_UDP && l4 == 0 && !partial_csum {
        return; // a UDP datagram sent without a checksum keeps none
    }
    if partial_csum {
        // the pseudo-header's sum, uncomplemented: the device adds the rest
        for (o, n) in old_words.iter().zip(&new_words) {
            l4 = partial_update(l4, *o, *n);
        }
    } else {
        for (o, n) in old_words.iter().zip(&new_words).chain([(&old_port, &port)]) {
            l4 = csum_update(l4, *o, *n);
        }
        if h.proto == PROTO_UDP && l4 == 0 {
            l4 = 0xffff; // 0 means "no checksum" in UDP: its one's-complement twin is sent
        }
    }
    ip[at..at + 2].copy_from_slice(&l4.to_be_bytes());
}

fn addr_words(a: Ipv4Addr) -> [u16; 2] {
    let o = a.octets();
    [u16::from_be_bytes([o[0], o[1]]), u16::from_be_bytes([o[2], o[3]])]
}

/// A sum that is not complemented (a partial checksum): S' = S + ~m + m'.
fn partial_update(sum: u16, old: u16, new: u16) -> u16 {
    fold(u32::from(sum) + u32::from(!old) + u32::from(new))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLIENT: Ipv4Addr = Ipv4Addr::new(198, 18, 1, 2);
    const SERVER: Ipv4Addr = Ipv4Addr::new(198, 18, 2, 2);
    const MS: u64 = 1_000_000;

    /// The Internet checksum of `data` (one's-complement sum of 16-bit words, complemented).
    fn checksum(data: &[u8]) -> u16 {
        let mut sum = 0u32;
        for c in data.chunks(2) {
            sum += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
        }
        !fold(sum)
    }

    fn pseudo_sum(ip: &[u8]) -> Vec<u8> {
        let ihl = usize::from(ip[0] & 0x0f) * 4;
        let len = (ip.len() - ihl) as u16;
        let mut p = Vec::new();
        p.extend_from_slice(&ip[12..20]);
        p.extend_from_slice(&[0, ip[9]]);
        p.extend_from_slice(&len.to_be_bytes());
        p
    }

    /// An IPv4 packet with correct checksums: UDP or TCP (with `flags`), payload bytes.
    fn packet(proto: u8, src: Ipv4Addr, sport: u16, dst: Ipv4Addr, dport: u16, flags: u8) -> Vec<u8> {
        let l4_len = if proto == PROTO_TCP { 20 } else { 8 };
        let payload = b"longlook nat test payload!";
        let total = 20 + l4_len + payload.len();
        let mut ip = vec![0u8; total];
        ip[0] = 0x45;
        ip[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        ip[8] = 64;
        ip[9] = proto;
        ip[12..16].copy_from_slice(&src.octets());
        ip[16..20].copy_from_slice(&dst.octets());
        ip[20..22].copy_from_slice(&sport.to_be_bytes());
        ip[22..24].copy_from_slice(&dport.to_be_bytes());
        if proto == PROTO_UDP {
            ip[24..26].copy_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        } else {
            ip[32] = 5 << 4;
            ip[33] = flags;
        }
        ip[20 + l4_len..].copy_from_slice(payload);
        let hc = checksum(&ip[..20]);
        ip[10..12].copy_from_slice(&hc.to_be_bytes());
        fill_l4(&mut ip);
        ip
    }

    fn csum_at(ip: &[u8]) -> usize {
        20 + if ip[9] == PROTO_TCP { 16 } else { 6 }
    }

    fn fill_l4(ip: &mut [u8]) {
        let at = csum_at(ip);
        ip[at..at + 2].copy_from_slice(&[0, 0]);
        let mut data = pseudo_sum(ip);
        data.extend_from_slice(&ip[20..]);
        let c = checksum(&data);
        ip[at..at + 2].copy_from_slice(&c.to_be_bytes());
    }

    /// Both checksums verify (the sum over a checksummed range is 0).
    fn checksums_ok(ip: &[u8]) -> bool {
        let mut data = pseudo_sum(ip);
        data.extend_from_slice(&ip[20..]);
        checksum(&ip[..20]) == 0 && checksum(&data) == 0
    }

    fn src(ip: &[u8]) -> (Ipv4Addr, u16) {
        (Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]), u16::from_be_bytes([ip[20], ip[21]]))
    }

    fn dst(ip: &[u8]) -> (Ipv4Addr, u16) {
        (Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]), u16::from_be_bytes([ip[22], ip[23]]))
    }

    fn nat(udp_timeout_ms: u64) -> Nat {
        Nat::new(NatConfig { udp_timeout_ns: udp_timeout_ms * MS, ..NatConfig::default() })
    }

    #[test]
    fn a_flow_keeps_one_binding_both_ways_with_checksums_right() {
        for proto in [PROTO_UDP, PROTO_TCP] {
            let mut n = nat(30_000);
            let mut up = packet(proto, CLIENT, 51000, SERVER, 443, ACK);
            assert_eq!(n.outbound(&mut up, false, 0), Outbound::NewBinding { rebound: false });
            let public = src(&up);
            assert_eq!(public.0, NatConfig::default().public);
            assert!(checksums_ok(&up), "outbound checksums, proto {proto}");
            let mut again = packet(proto, CLIENT, 51000, SERVER, 443, ACK);
            assert_eq!(n.outbound(&mut again, false, 5 * MS), Outbound::Translated);
            assert_eq!(src(&again), public);

            let mut down = packet(proto, SERVER, 443, public.0, public.1, ACK);
            assert_eq!(n.inbound(&mut down, false, 6 * MS), Inbound::Translated);
            assert_eq!(dst(&down), (CLIENT, 51000));
            assert!(checksums_ok(&down), "inbound checksums, proto {proto}");
        }
    }

    #[test]
    fn a_second_path_gets_its_own_public_address_and_the_first_keeps_the_nat_s() {
        let second = (Ipv4Addr::new(198, 18, 1, 3), Ipv4Addr::new(100, 64, 0, 2));
        let mut n = Nat::new(NatConfig { second_path: Some(second), ..NatConfig::default() });
        let mut wifi = packet(PROTO_UDP, CLIENT, 51000, SERVER, 443, 0);
        n.outbound(&mut wifi, false, 0);
        assert_eq!(src(&wifi).0, NatConfig::default().public);
        // the same socket's next datagram from its new address: a new binding, on the other address
        let mut lte = packet(PROTO_UDP, second.0, 51000, SERVER, 443, 0);
        assert_eq!(n.outbound(&mut lte, false, MS), Outbound::NewBinding { rebound: false });
        let public = src(&lte);
        assert_eq!(public.0, second.1);
        assert!(checksums_ok(&lte));
        let mut down = packet(PROTO_UDP, SERVER, 443, public.0, public.1, 0);
        assert_eq!(n.inbound(&mut down, false, 2 * MS), Inbound::Translated);
        assert_eq!(dst(&down), (second.0, 51000));
        assert!(checksums_ok(&down));
    }

    #[test]
    fn an_idle_udp_binding_expires_and_the_next_packet_is_rebound() {
        let mut n = nat(30_000);
        let mut p = packet(PROTO_UDP, CLIENT, 51000, SERVER, 443, 0);
        n.outbound(&mut p, false, 0);
        let first = src(&p);
        // still alive just before its idle time
        let mut p = packet(PROTO_UDP, CLIENT, 51000, SERVER, 443, 0);
        assert_eq!(n.outbound(&mut p, false, 29_999 * MS), Outbound::Translated);
        // the server's packets for the old port, after the binding timed out: not forwarded
        let mut late = packet(PROTO_UDP, SERVER, 443, first.0, first.1, 0);
        assert_eq!(n.inbound(&mut late, false, 60_000 * MS), Inbound::NoBinding);
        assert_eq!(n.counters.expired, 1);
        let mut p = packet(PROTO_UDP, CLIENT, 51000, SERVER, 443, 0);
        assert_eq!(n.outbound(&mut p, false, 60_001 * MS), Outbound::NewBinding { rebound: true });
        assert_ne!(src(&p).1, first.1, "a new external port");
        assert_eq!(n.counters.rebindings, 1);
    }

    #[test]
    fn tcp_keeps_an_established_binding_longer_than_udp_and_drops_it_soon_after_a_fin() {
        let mut n = nat(30_000);
        let mut syn = packet(PROTO_TCP, CLIENT, 40000, SERVER, 443, SYN);
        n.outbound(&mut syn, false, 0);
        let mut ack = packet(PROTO_TCP, CLIENT, 40000, SERVER, 443, ACK);
        n.outbound(&mut ack, false, MS);
        // established: alive after an hour idle (UDP's would be long gone)
        let mut p = packet(PROTO_TCP, CLIENT, 40000, SERVER, 443, ACK);
        assert_eq!(n.outbound(&mut p, false, 3_600_000 * MS), Outbound::Translated);
        let mut fin = packet(PROTO_TCP, CLIENT, 40000, SERVER, 443, FIN | ACK);
        n.outbound(&mut fin, false, 3_600_001 * MS);
        let mut p = packet(PROTO_TCP, CLIENT, 40000, SERVER, 443, ACK);
        let after = (3_600_001 + 240_000) * MS;
        assert_eq!(n.outbound(&mut p, false, after), Outbound::NewBinding { rebound: true });
    }

    #[test]
    fn a_scheduled_rebinding_moves_live_bindings_to_new_ports_or_a_new_address() {
        let new_public = Ipv4Addr::new(198, 18, 6, 1);
        for rebind_public in [None, Some(new_public)] {
            let cfg = NatConfig { rebind_at_ns: vec![1000 * MS], rebind_public, ..NatConfig::default() };
            let mut n = Nat::new(cfg);
            let mut p = packet(PROTO_UDP, CLIENT, 51000, SERVER, 443, 0);
            n.outbound(&mut p, false, 0);
            let before = src(&p);
            let mut p = packet(PROTO_UDP, CLIENT, 51000, SERVER, 443, 0);
            assert_eq!(n.outbound(&mut p, false, 1000 * MS), Outbound::Translated, "moved, not a new binding");
            let after = src(&p);
            assert_ne!(after.1, before.1);
            assert_eq!(after.0, rebind_public.unwrap_or(before.0));
            assert!(checksums_ok(&p));
            // the old external end is dead, the new one reaches the client
            let mut old = packet(PROTO_UDP, SERVER, 443, before.0, before.1, 0);
            assert_eq!(n.inbound(&mut old, false, 1001 * MS), Inbound::NoBinding);
            let mut new = packet(PROTO_UDP, SERVER, 443, after.0, after.1, 0);
            assert_eq!(n.inbound(&mut new, false, 1002 * MS), Inbound::Translated);
            assert_eq!(n.counters.scheduled_rebindings, 1);
            let e = n.events[0];
            assert_eq!(
                (e.t_ns, e.cause, e.internal, e.from, e.to),
                (1000 * MS, Cause::Scheduled, (CLIENT, 51000), before, after)
            );
        }
    }

    #[test]
    fn each_binding_moves_on_its_own_clock_then_periodically_between_two_addresses() {
        let other = Ipv4Addr::new(198, 18, 6, 1);
        let cfg = NatConfig {
            rebind_at_ns: vec![500 * MS],
            rebind_every_ns: 1000 * MS,
            rebind_public: Some(other),
            rebind_on_outbound: false,
            ..NatConfig::default()
        };
        let mut n = Nat::new(cfg);
        // two flows made 300 ms apart: each moves 500 ms after its own start, then every 1 s
        let addr_at = |n: &mut Nat, sport: u16, t: u64| {
            let mut p = packet(PROTO_UDP, CLIENT, sport, SERVER, 443, 0);
            n.outbound(&mut p, false, t * MS);
            src(&p).0
        };
        let public = NatConfig::default().public;
        assert_eq!(addr_at(&mut n, 1, 0), public);
        assert_eq!(addr_at(&mut n, 2, 300), public);
        assert_eq!(addr_at(&mut n, 1, 499), public);
        assert_eq!(addr_at(&mut n, 1, 500), other);
        assert_eq!(addr_at(&mut n, 2, 799), public);
        assert_eq!(addr_at(&mut n, 2, 800), other);
        assert_eq!(addr_at(&mut n, 1, 1500), public, "back, 1 s later");
        assert_eq!(addr_at(&mut n, 2, 1800), public);
        // no packet at flow 1's move at 2500: it moved then all the same
        assert_eq!(addr_at(&mut n, 1, 2600), other);
        let moves: Vec<(u16, u64)> = n.events.iter().map(|e| (e.internal.1, e.t_ns / MS)).collect();
        assert_eq!(moves, vec![(1, 500), (2, 800), (1, 1500), (2, 1800), (1, 2500)]);
        assert!(n.events.iter().all(|e| e.cause == Cause::Scheduled));
    }

    #[test]
    fn a_due_rebinding_waits_for_the_clients_next_packet_or_kills_the_old_end_at_its_time() {
        for on_outbound in [true, false] {
            let cfg =
                NatConfig { rebind_at_ns: vec![1000 * MS], rebind_on_outbound: on_outbound, ..NatConfig::default() };
            let mut n = Nat::new(cfg);
            let mut p = packet(PROTO_UDP, CLIENT, 51000, SERVER, 443, 0);
            n.outbound(&mut p, false, 0);
            let old = src(&p);
            // past its time, the server's packet to the old end: through only while the NAT
            // waits for the client
            let mut down = packet(PROTO_UDP, SERVER, 443, old.0, old.1, 0);
            let expect = if on_outbound { Inbound::Translated } else { Inbound::NoBinding };
            assert_eq!(n.inbound(&mut down, false, 1200 * MS), expect, "on_outbound {on_outbound}");
            let mut p = packet(PROTO_UDP, CLIENT, 51000, SERVER, 443, 0);
            n.outbound(&mut p, false, 1300 * MS);
            assert_ne!(src(&p), old);
            let mut down = packet(PROTO_UDP, SERVER, 443, old.0, old.1, 0);
            assert_eq!(n.inbound(&mut down, false, 1301 * MS), Inbound::NoBinding);
            let at = if on_outbound { 1300 } else { 1000 };
            assert_eq!(n.events[0].t_ns, at * MS);
        }
    }

    #[test]
    fn a_rebinding_after_expiry_is_an_event_with_the_old_and_new_ends() {
        let mut n = nat(30_000);
        let mut p = packet(PROTO_UDP, CLIENT, 51000, SERVER, 443, 0);
        n.outbound(&mut p, false, 0);
        let first = src(&p);
        let mut p = packet(PROTO_UDP, CLIENT, 51000, SERVER, 443, 0);
        // looked up at once, not at the next sweep
        assert_eq!(n.outbound(&mut p, false, 30_000 * MS), Outbound::NewBinding { rebound: true });
        let e = n.events[0];
        assert_eq!((e.cause, e.from, e.to, e.t_ns), (Cause::Expired, first, src(&p), 30_000 * MS));
    }

    #[test]
    fn flows_get_their_own_bindings_and_a_full_range_gives_up_its_oldest() {
        let cfg = NatConfig { ports: (30000, 30001), ..NatConfig::default() };
        let mut n = Nat::new(cfg);
        let mut ports = Vec::new();
        for (i, sport) in [5001u16, 5002, 5003].iter().enumerate() {
            let mut p = packet(PROTO_UDP, CLIENT, *sport, SERVER, 443, 0);
            n.outbound(&mut p, false, i as u64 * MS);
            ports.push(src(&p).1);
        }
        assert_eq!(&ports[..2], &[30000, 30001]);
        assert_eq!(ports[2], 30000, "the oldest binding's port, taken over");
        assert_eq!(n.len(), 2);
        let mut old = packet(PROTO_UDP, SERVER, 443, NatConfig::default().public, 30000, 0);
        n.inbound(&mut old, false, 3 * MS);
        assert_eq!(dst(&old), (CLIENT, 5003));
    }

    #[test]
    fn a_partial_checksum_gets_the_address_change_and_no_port_change() {
        let mut p = packet(PROTO_TCP, CLIENT, 40000, SERVER, 443, SYN);
        // the sender's kernel left the pseudo-header's sum, uncomplemented, for the device
        let at = csum_at(&p);
        let partial =
            |ip: &[u8]| fold(pseudo_sum(ip).chunks(2).map(|c| u32::from(u16::from_be_bytes([c[0], c[1]]))).sum());
        let seed = partial(&p);
        p[at..at + 2].copy_from_slice(&seed.to_be_bytes());
        let mut n = nat(30_000);
        n.outbound(&mut p, true, 0);
        assert_eq!(u16::from_be_bytes([p[at], p[at + 1]]), partial(&p), "the new pseudo-header's sum");
        assert_eq!(checksum(&p[..20]), 0);
    }

    #[test]
    fn a_udp_datagram_without_a_checksum_keeps_none_and_others_pass() {
        let mut p = packet(PROTO_UDP, CLIENT, 51000, SERVER, 443, 0);
        p[26..28].copy_from_slice(&[0, 0]);
        let mut n = nat(30_000);
        n.outbound(&mut p, false, 0);
        assert_eq!(&p[26..28], &[0, 0]);
        assert_eq!(checksum(&p[..20]), 0);
        let mut icmp = packet(PROTO_UDP, CLIENT, 1, SERVER, 2, 0);
        icmp[9] = 1;
        assert_eq!(n.outbound(&mut icmp, false, 0), Outbound::Passed);
        let mut v6 = vec![0x60u8; 60];
        assert_eq!(n.inbound(&mut v6, false, 0), Inbound::Passed);
    }

    #[test]
    fn rfc1624_update_matches_a_full_recomputation() {
        let mut p = packet(PROTO_UDP, CLIENT, 51000, SERVER, 443, 0);
        let h = Header::read(&p).unwrap();
        rewrite(&mut p, &h, End::Source, Ipv4Addr::new(203, 0, 113, 77), 65535, false);
        let mut fresh = p.clone();
        fresh[10..12].copy_from_slice(&[0, 0]);
        let hc = checksum(&fresh[..20]);
        fresh[10..12].copy_from_slice(&hc.to_be_bytes());
        fill_l4(&mut fresh);
        assert_eq!(p, fresh);
    }
}
