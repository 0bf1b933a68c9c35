//! Middlebox policies, applied before loss and the buffer (the middlebox sits in front of
//! the bottleneck). Exact rules in the linkem README ("Middlebox").
//!
//! UDP rules:
//! - `block_udp`: every UDP packet is dropped.
//! - `block_udp_after_packets = N`: the first N UDP packets of a flow (5-tuple, this
//!   direction) pass, later ones are dropped (counted on arrival, dropped ones included).
//! - `udp_rate_mbit = R`: a token bucket policer over all UDP of the direction, filled at R
//!   and `udp_burst_bytes` deep (0 = max(3000 bytes, 10 ms at R)), starting full; a packet
//!   that finds fewer tokens than its IP length is dropped and takes no tokens.
//! - `max_udp_datagram = M`: UDP packets with IP total length > M are dropped.
//! - `drop_quic_initial`: datagrams beginning with a QUIC Initial are dropped (`quic`).
//! - `quic_blackhole_after_handshake`: once a flow that has carried a QUIC long header
//!   (version != 0) carries a datagram beginning with a short header, that datagram and all
//!   later ones of the flow are dropped.
//!
//! TCP rule: `tcp_rst_after_bytes = N` rewrites packets into RSTs (`tcp_rst`).
//!
//! ECN rule (any protocol): `ecn = "bleach" | "drop_ect" | "ect0_to_ect1" | "ect1_to_ect0" |
//! "mark_ce"` drops packets by their IP ECN codepoint or rewrites the codepoint in the packet's
//! bytes (IPv4 header checksum updated), so the stages after the middlebox (an AQM, DualPI2's
//! classifier) and the receiver see the rewritten one.
//!
//! Drops come before rewrites: a packet any rule drops is dropped, whatever another rule
//! would have rewritten in it.
//!
//! Schedule (`schedule`) and flow choice (`flow_probability`) gate the actions; the per-flow
//! observations (packet counts, QUIC handshake progress, TCP byte offsets) are made on every
//! packet whatever the schedule, so a rule that becomes active acts on the flow's true state.

use super::quic::{self, QuicDatagram};
use super::schedule::Schedule;
use super::tcp_rst::{self, RstTracker};
use crate::config::{EcnPolicy, MiddleboxSpec};
use crate::packet::{self, transport_offset, Ecn, PacketInfo, PROTO_TCP};
use crate::rng::Rng;

/// What the middlebox does with a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MbVerdict {
    Pass,
    Drop,
    /// Forward it rewritten into a RST of this IP total length (`tcp_rst::rewrite`).
    RewriteRst {
        ip_len: u32,
    },
}

/// Per-flow state of the middlebox (one direction), kept in the flow table.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct FlowMiddlebox {
    /// Whether the rules apply to this flow (`flow_probability`), drawn at its first packet.
    pub chosen: Option<bool>,
    quic_long_seen: bool,
    quic_blackholed: bool,
    tcp: RstTracker,
    /// Packets of the flow rewritten into RSTs.
    pub rst_rewritten: u64,
    /// Packets of the flow whose ECN codepoint the `ecn` policy changed.
    pub ecn_rewritten: u64,
}

impl EcnPolicy {
    /// Whether the policy drops a packet arriving with codepoint `e`.
    pub fn drops(self, e: Ecn) -> bool {
        self == EcnPolicy::DropEct && e.capable()
    }

    /// The codepoint the policy gives a packet arriving with `e`, when it changes it.
    pub fn rewrite(self, e: Ecn) -> Option<Ecn> {
        let to = match (self, e) {
            (EcnPolicy::Bleach, Ecn::Ect0 | Ecn::Ect1 | Ecn::Ce) => Ecn::NotEct,
            (EcnPolicy::Ect0ToEct1, Ecn::Ect0) => Ecn::Ect1,
            (EcnPolicy::Ect1ToEct0, Ecn::Ect1) => Ecn::Ect0,
            // CE stays CE; a not-ECT packet may not be marked (RFC 3168 §5)
            (EcnPolicy::MarkCe, Ecn::Ect0 | Ecn::Ect1) => Ecn::Ce,
            _ => return None,
        };
        Some(to)
    }
}

#[derive(Debug, Clone)]
pub struct Middlebox {
    spec: MiddleboxSpec,
    schedule: Schedule,
    choice_rng: Rng,
    bytes_per_ns: f64,
    depth: f64,
    tokens: f64,
    last_ns: u64,
}

impl Middlebox {
    /// `choice_rng` draws the flow choices (one number per new flow, in arrival order).
    pub fn new(spec: &MiddleboxSpec, choice_rng: Rng) -> Self {
        let bytes_per_ns = spec.udp_rate_mbit * 1e6 / 8.0 / 1e9;
        let depth =
            if spec.udp_burst_bytes > 0 { spec.udp_burst_bytes as f64 } else { (bytes_per_ns * 10e6).max(3000.0) };
        Middlebox {
            spec: spec.clone(),
            schedule: Schedule::new(spec),
            choice_rng,
            bytes_per_ns,
            depth,
            tokens: depth,
            last_ns: 0,
        }
    }

    pub fn is_active(&self) -> bool {
        let s = &self.spec;
        s.block_udp
            || s.block_udp_after_packets > 0
            || s.udp_rate_mbit > 0.0
            || s.max_udp_datagram > 0
            || s.drop_quic_initial
            || s.quic_blackhole_after_handshake
            || s.tcp_rst_after_bytes > 0
            || s.ecn.is_some()
    }

    /// Decide one packet. `bytes` is the copied prefix of the packet (an ECN rewrite changes
    /// it in place), `udp_seen_in_flow` counts this flow's UDP packets so far in this
    /// direction (this one included), `flow` is the flow's middlebox state.
    #[inline]
    pub fn decide(
        &mut self,
        now_ns: u64,
        pkt: &PacketInfo,
        bytes: &mut [u8],
        udp_seen_in_flow: u64,
        flow: &mut FlowMiddlebox,
    ) -> MbVerdict {
        if !self.is_active() {
            return MbVerdict::Pass;
        }
        let chosen = *flow.chosen.get_or_insert_with(|| match self.spec.flow_probability {
            Some(p) => self.choice_rng.chance(p),
            None => true,
        });
        // Observe first (always), act only when chosen and scheduled.
        let quic = if pkt.is_udp() { self.observe_quic(bytes, flow) } else { None };
        let rst_len = if pkt.key.proto == PROTO_TCP { self.observe_tcp(pkt, bytes, flow) } else { None };
        if !chosen || !self.schedule.active(now_ns) {
            return MbVerdict::Pass;
        }
        let ecn = self.spec.ecn.map(|policy| (policy, Ecn::of(bytes)));
        if ecn.is_some_and(|(policy, e)| policy.drops(e)) {
            return MbVerdict::Drop;
        }
        if pkt.is_udp() && !self.udp_passes(now_ns, pkt, udp_seen_in_flow, quic, flow) {
            return MbVerdict::Drop;
        }
        // in place, before a RST is made of the bytes: the RST keeps the IP header
        if let Some(to) = ecn.and_then(|(policy, e)| policy.rewrite(e)) {
            if packet::set_ecn(bytes, to) {
                flow.ecn_rewritten += 1;
            }
        }
        if let Some(ip_len) = rst_len {
            flow.rst_rewritten += 1;
            return MbVerdict::RewriteRst { ip_len };
        }
        MbVerdict::Pass
    }

    /// Track the flow's QUIC handshake progress; the datagram's class if the rules need it.
    fn observe_quic(&self, bytes: &[u8], flow: &mut FlowMiddlebox) -> Option<QuicDatagram> {
        if !(self.spec.drop_quic_initial || self.spec.quic_blackhole_after_handshake) {
            return None;
        }
        let payload = transport_offset(bytes).and_then(|off| bytes.get(off + 8..))?;
        let class = quic::classify(payload);
        match class {
            QuicDatagram::Initial | QuicDatagram::OtherLong => flow.quic_long_seen = true,
            QuicDatagram::Short if flow.quic_long_seen => flow.quic_blackholed = true,
            _ => {}
        }
        Some(class)
    }

    /// Track the flow's byte offset; the RST's length once the flow has crossed the limit
    /// (None if it has not, or if the packet's headers were not copied: it then passes).
    fn observe_tcp(&self, pkt: &PacketInfo, bytes: &[u8], flow: &mut FlowMiddlebox) -> Option<u32> {
        let limit = self.spec.tcp_rst_after_bytes;
        if limit == 0 {
            return None;
        }
        let seg = tcp_rst::segment(bytes, pkt.ip_len)?;
        if flow.tcp.observe(&seg, limit) {
            tcp_rst::rst_len(bytes)
        } else {
            None
        }
    }

    fn udp_passes(
        &mut self,
        now_ns: u64,
        pkt: &PacketInfo,
        udp_seen_in_flow: u64,
        quic: Option<QuicDatagram>,
        flow: &FlowMiddlebox,
    ) -> bool {
        let s = &self.spec;
        if s.block_udp {
            return false;
        }
        if s.block_udp_after_packets > 0 && udp_seen_in_flow > s.block_udp_after_packets {
            return false;
        }
        if s.max_udp_datagram > 0 && pkt.ip_len as u64 > s.max_udp_datagram {
            return false;
        }
        if s.drop_quic_initial && quic == Some(QuicDatagram::Initial) {
            return false;
        }
        if s.quic_blackhole_after_handshake && flow.quic_blackholed {
            return false;
        }
        if s.udp_rate_mbit > 0.0 {
            let elapsed = now_ns.saturating_sub(self.last_ns);
            self.last_ns = self.last_ns.max(now_ns);
            self.tokens = (self.tokens + elapsed as f64 * self.bytes_per_ns).min(self.depth);
            if self.tokens < pkt.ip_len as f64 {
                return false;
            }
            self.tokens -= pkt.ip_len as f64;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tcp_rst::tests::tcp_v4;
    use crate::packet::{self, PROTO_UDP};

    fn mb(spec: MiddleboxSpec) -> Middlebox {
        Middlebox::new(&spec, Rng::derive(7, 4))
    }

    fn pkt(proto: u8, len: u32) -> PacketInfo {
        let a = "198.18.1.2".parse().unwrap();
        PacketInfo { ip_len: len, key: crate::packet::FlowKey { proto, src: a, dst: a, sport: 1, dport: 2 } }
    }

    /// A stateless decision (fresh flow state), for the rules that keep none.
    fn passes(m: &mut Middlebox, now: u64, p: &PacketInfo, udp_seen: u64) -> bool {
        m.decide(now, p, &mut [], udp_seen, &mut FlowMiddlebox::default()) == MbVerdict::Pass
    }

    /// IPv4 + UDP header + `payload`, as linkem would copy it.
    fn udp_datagram(payload: &[u8]) -> Vec<u8> {
        let len = 28 + payload.len();
        let mut b = vec![0u8; 28];
        b[0] = 0x45;
        b[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        b[9] = PROTO_UDP;
        b[12..16].copy_from_slice(&[198, 18, 1, 2]);
        b[16..20].copy_from_slice(&[198, 18, 2, 2]);
        b[20..22].copy_from_slice(&51000u16.to_be_bytes());
        b[22..24].copy_from_slice(&4433u16.to_be_bytes());
        b.extend_from_slice(payload);
        b
    }

    const INITIAL: [u8; 7] = [0xc3, 0, 0, 0, 1, 8, 0xaa];
    const HANDSHAKE: [u8; 7] = [0xe3, 0, 0, 0, 1, 8, 0xaa];
    const SHORT: [u8; 5] = [0x43, 0xaa, 0xbb, 0xcc, 0xdd];

    /// Run datagrams of one flow through the middlebox; true = passed.
    fn run_flow(m: &mut Middlebox, payloads: &[&[u8]]) -> Vec<bool> {
        let mut flow = FlowMiddlebox::default();
        payloads
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let mut b = udp_datagram(p);
                let info = packet::parse(&b, b.len() as u32).unwrap();
                m.decide(0, &info, &mut b, i as u64 + 1, &mut flow) == MbVerdict::Pass
            })
            .collect()
    }

    #[test]
    fn block_and_size_rules() {
        let mut m = mb(MiddleboxSpec { block_udp: true, ..Default::default() });
        assert!(!passes(&mut m, 0, &pkt(PROTO_UDP, 100), 1));
        assert!(passes(&mut m, 0, &pkt(PROTO_TCP, 100), 1));
        let mut m = mb(MiddleboxSpec { block_udp_after_packets: 3, ..Default::default() });
        let verdicts: Vec<bool> = (1..=5).map(|n| passes(&mut m, 0, &pkt(PROTO_UDP, 100), n)).collect();
        assert_eq!(verdicts, vec![true, true, true, false, false]);
        let mut m = mb(MiddleboxSpec { max_udp_datagram: 1280, ..Default::default() });
        assert!(passes(&mut m, 0, &pkt(PROTO_UDP, 1280), 1));
        assert!(!passes(&mut m, 0, &pkt(PROTO_UDP, 1281), 1));
    }

    #[test]
    fn token_bucket_throttles_to_rate() {
        // 1.2 Mbit/s = 150 bytes/ms; offer 1200-byte packets every 1 ms (9.6 Mbit) for 10 s
        let mut m = mb(MiddleboxSpec { udp_rate_mbit: 1.2, ..Default::default() });
        let mut passed = 0u64;
        for i in 0..10_000u64 {
            if passes(&mut m, i * 1_000_000, &pkt(PROTO_UDP, 1200), 1) {
                passed += 1200;
            }
        }
        let mbit = passed as f64 * 8.0 / 10.0 / 1e6;
        assert!((mbit - 1.2).abs() < 0.02, "{mbit}");
    }

    #[test]
    fn quic_initials_dropped_the_rest_passes() {
        let mut m = mb(MiddleboxSpec { drop_quic_initial: true, ..Default::default() });
        assert_eq!(
            run_flow(&mut m, &[&INITIAL, &INITIAL, &HANDSHAKE, &SHORT, &[0x01, 0x02]]),
            vec![false, false, true, true, true]
        );
        // version negotiation (version 0) is not an Initial
        assert_eq!(run_flow(&mut m, &[&[0xc3, 0, 0, 0, 0, 8]]), vec![true]);
    }

    #[test]
    fn blackhole_from_the_first_short_header_datagram() {
        let mut m = mb(MiddleboxSpec { quic_blackhole_after_handshake: true, ..Default::default() });
        assert_eq!(
            run_flow(&mut m, &[&INITIAL, &HANDSHAKE, &SHORT, &HANDSHAKE, &SHORT]),
            vec![true, true, false, false, false]
        );
        // a flow that never showed a QUIC long header is not QUIC: it passes
        assert_eq!(run_flow(&mut m, &[&SHORT, &SHORT]), vec![true, true]);
    }

    #[test]
    fn tcp_rewritten_into_rst_after_n_bytes() {
        let mut m = mb(MiddleboxSpec { tcp_rst_after_bytes: 2000, ..Default::default() });
        let mut flow = FlowMiddlebox::default();
        let verdicts: Vec<MbVerdict> =
            [tcp_v4(9, 0x02, 0), tcp_v4(10, 0x10, 1448), tcp_v4(1458, 0x10, 1448), tcp_v4(2906, 0x10, 0)]
                .iter()
                .map(|b| {
                    let info = packet::parse(b, b.len() as u32).unwrap();
                    let mut copied = b[..128.min(b.len())].to_vec();
                    m.decide(0, &info, &mut copied, 0, &mut flow)
                })
                .collect();
        assert_eq!(
            verdicts,
            vec![
                MbVerdict::Pass,
                MbVerdict::Pass,
                MbVerdict::RewriteRst { ip_len: 40 },
                MbVerdict::RewriteRst { ip_len: 40 }
            ]
        );
        assert_eq!(flow.rst_rewritten, 2);
    }

    #[test]
    fn schedule_gates_actions_not_observation() {
        let s = 1_000_000_000u64;
        let spec =
            MiddleboxSpec { block_udp: true, active_from_s: 1.0, active_until_s: Some(2.0), ..Default::default() };
        let mut m = mb(spec);
        let at = |m: &mut Middlebox, t: u64| passes(m, t, &pkt(PROTO_UDP, 100), 1);
        assert_eq!(
            [at(&mut m, 0), at(&mut m, s), at(&mut m, 2 * s - 1), at(&mut m, 2 * s)],
            [true, false, false, true]
        );
        // a blackhole triggered while inactive acts as soon as the window opens
        let spec = MiddleboxSpec { quic_blackhole_after_handshake: true, active_from_s: 1.0, ..Default::default() };
        let mut m = mb(spec);
        let mut flow = FlowMiddlebox::default();
        let mut go = |m: &mut Middlebox, t: u64, p: &[u8]| {
            let mut b = udp_datagram(p);
            m.decide(t, &packet::parse(&b, b.len() as u32).unwrap(), &mut b, 1, &mut flow) == MbVerdict::Pass
        };
        assert!(go(&mut m, 0, &INITIAL) && go(&mut m, 0, &SHORT) && go(&mut m, s / 2, &SHORT));
        assert!(!go(&mut m, s, &SHORT));
    }

    #[test]
    fn flow_choice_is_seeded_per_new_flow() {
        let choices = |seed: u64| -> Vec<bool> {
            let spec = MiddleboxSpec { block_udp: true, flow_probability: Some(0.3), ..Default::default() };
            let mut m = Middlebox::new(&spec, Rng::derive(seed, 4));
            (0..4000)
                .map(|_| {
                    let mut flow = FlowMiddlebox::default();
                    let first = m.decide(0, &pkt(PROTO_UDP, 100), &mut [], 1, &mut flow);
                    // the choice sticks to the flow
                    assert_eq!(m.decide(0, &pkt(PROTO_UDP, 100), &mut [], 2, &mut flow), first);
                    first == MbVerdict::Drop
                })
                .collect()
        };
        let a = choices(1);
        assert_eq!(a, choices(1));
        assert_ne!(a, choices(2));
        let share = a.iter().filter(|&&x| x).count() as f64 / a.len() as f64;
        assert!((share - 0.3).abs() < 0.03, "{share}");
    }

    /// An IPv4 header's checksum verifies: its words, checksum included, sum to 0xffff.
    fn ipv4_checksum_ok(b: &[u8]) -> bool {
        let ihl = ((b[0] & 0x0f) as usize) * 4;
        packet::fold(b[..ihl].chunks(2).map(|w| u32::from(u16::from_be_bytes([w[0], w[1]]))).sum()) == 0xffff
    }

    /// A UDP packet over IPv4 (valid header checksum) or IPv6 with this ECN codepoint and a
    /// DSCP beside it.
    fn udp_with(v6: bool, e: Ecn) -> Vec<u8> {
        if v6 {
            let mut b = vec![0u8; 48];
            b[0] = 0x6b;
            b[1] = 0x80 | (e.bits() << 4) | 0x03; // DSCP bits above the field, flow label below
            b[4..6].copy_from_slice(&8u16.to_be_bytes());
            b[6] = PROTO_UDP;
            b[7] = 64;
            b[8] = 0xfd;
            b[24] = 0xfd;
            b[39] = 2;
            b[40..42].copy_from_slice(&51000u16.to_be_bytes());
            b[42..44].copy_from_slice(&4433u16.to_be_bytes());
            b
        } else {
            let mut b = udp_datagram(&[0xaa; 20]);
            b[1] = 0xb8 | e.bits();
            b[8] = 64;
            b[10..12].copy_from_slice(&[0, 0]);
            let c = !packet::fold(b[..20].chunks(2).map(|w| u32::from(u16::from_be_bytes([w[0], w[1]]))).sum());
            b[10..12].copy_from_slice(&c.to_be_bytes());
            b
        }
    }

    fn ecn_box(policy: EcnPolicy) -> Middlebox {
        mb(MiddleboxSpec { ecn: Some(policy), ..Default::default() })
    }

    const CODEPOINTS: [Ecn; 4] = [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce];

    #[test]
    fn each_ecn_policy_on_each_codepoint_over_ipv4_and_ipv6() {
        use Ecn::*;
        use EcnPolicy::*;
        // (policy, arriving codepoint) -> None: dropped; Some(codepoint it leaves with)
        let want = |p: EcnPolicy, e: Ecn| -> Option<Ecn> {
            match (p, e) {
                (DropEct, NotEct) => Some(NotEct),
                (DropEct, _) => None,
                (Bleach, _) => Some(NotEct),
                (Ect0ToEct1, Ect0) => Some(Ect1),
                (Ect1ToEct0, Ect1) => Some(Ect0),
                (MarkCe, Ect0 | Ect1) => Some(Ce),
                (_, e) => Some(e),
            }
        };
        for (_, policy) in EcnPolicy::NAMES {
            for v6 in [false, true] {
                let mut m = ecn_box(policy);
                for e in CODEPOINTS {
                    let before = udp_with(v6, e);
                    let mut b = before.clone();
                    let info = packet::parse(&b, b.len() as u32).unwrap();
                    let mut flow = FlowMiddlebox::default();
                    let verdict = m.decide(0, &info, &mut b, 1, &mut flow);
                    let case = format!("{policy:?} on {e:?}, v6 {v6}");
                    match want(policy, e) {
                        None => {
                            assert_eq!(verdict, MbVerdict::Drop, "{case}");
                            assert_eq!(b, before, "{case}: a dropped packet is not rewritten");
                        }
                        Some(to) => {
                            assert_eq!(verdict, MbVerdict::Pass, "{case}");
                            assert_eq!(Ecn::of(&b), to, "{case}");
                            assert_eq!(flow.ecn_rewritten, u64::from(to != e), "{case}");
                            if !v6 {
                                assert!(ipv4_checksum_ok(&b), "{case}: header checksum");
                                assert_eq!(b[1] & 0xfc, 0xb8, "{case}: DSCP kept");
                            } else {
                                assert_eq!((b[0], b[1] & 0xcf), (0x6b, 0x83), "{case}: traffic class, flow label kept");
                            }
                            // nothing else changed: the TOS byte (v4: and the checksum) only
                            let changed: Vec<usize> = (0..b.len()).filter(|&i| b[i] != before[i]).collect();
                            let may = if v6 { vec![1] } else { vec![1, 10, 11] };
                            assert!(changed.iter().all(|i| may.contains(i)), "{case}: {changed:?}");
                        }
                    }
                }
            }
        }
        // TCP is treated alike (the field is the IP header's)
        let mut m = ecn_box(Bleach);
        let mut b = tcp_v4(1, 0x10, 100);
        b[1] |= Ect0.bits();
        let c = u16::from_be_bytes([b[10], b[11]]);
        b[10..12].copy_from_slice(&packet::csum_update(c, 0x4500, 0x4502).to_be_bytes());
        assert!(ipv4_checksum_ok(&b));
        let info = packet::parse(&b, b.len() as u32).unwrap();
        let mut flow = FlowMiddlebox::default();
        assert_eq!(m.decide(0, &info, &mut b, 0, &mut flow), MbVerdict::Pass);
        assert_eq!((Ecn::of(&b), flow.ecn_rewritten), (NotEct, 1));
        assert!(ipv4_checksum_ok(&b));
    }

    #[test]
    fn a_packet_another_rule_drops_is_not_rewritten_and_a_rst_keeps_the_rewrite() {
        // block_udp drops: nothing is counted as rewritten
        let mut m = mb(MiddleboxSpec { block_udp: true, ecn: Some(EcnPolicy::Bleach), ..Default::default() });
        let mut b = udp_with(false, Ecn::Ect0);
        let info = packet::parse(&b, b.len() as u32).unwrap();
        let mut flow = FlowMiddlebox::default();
        assert_eq!(m.decide(0, &info, &mut b, 1, &mut flow), MbVerdict::Drop);
        assert_eq!((Ecn::of(&b), flow.ecn_rewritten), (Ecn::Ect0, 0));
        // a packet rewritten into a RST: the RST is made of the rewritten header
        let spec = MiddleboxSpec { tcp_rst_after_bytes: 10, ecn: Some(EcnPolicy::MarkCe), ..Default::default() };
        let mut m = mb(spec);
        let mut flow = FlowMiddlebox::default();
        let mut b = tcp_v4(1000, 0x10, 100);
        assert!(packet::set_ecn(&mut b, Ecn::Ect1));
        let info = packet::parse(&b, b.len() as u32).unwrap();
        assert_eq!(m.decide(0, &info, &mut b, 0, &mut flow), MbVerdict::RewriteRst { ip_len: 40 });
        let rst = crate::model::tcp_rst::rewrite(&b).unwrap();
        assert_eq!((Ecn::of(&rst), flow.ecn_rewritten, flow.rst_rewritten), (Ecn::Ce, 1, 1));
        assert!(ipv4_checksum_ok(&rst));
    }

    #[test]
    fn the_schedule_gates_the_ecn_policy() {
        let s = 1_000_000_000u64;
        // on 1 s, off 1 s from 1 s on: a packet at 0.5 s and 2.5 s passes untouched
        let spec = |policy| MiddleboxSpec {
            ecn: Some(policy),
            active_from_s: 1.0,
            on_s: 1.0,
            off_s: 1.0,
            ..Default::default()
        };
        let at = |m: &mut Middlebox, t: u64| {
            let mut b = udp_with(true, Ecn::Ect0);
            let info = packet::parse(&b, b.len() as u32).unwrap();
            let v = m.decide(t, &info, &mut b, 1, &mut FlowMiddlebox::default());
            (v, Ecn::of(&b))
        };
        let mut m = mb(spec(EcnPolicy::Ect0ToEct1));
        let got: Vec<_> = [s / 2, s, 3 * s / 2, 5 * s / 2, 3 * s].iter().map(|&t| at(&mut m, t).1).collect();
        assert_eq!(got, [Ecn::Ect0, Ecn::Ect1, Ecn::Ect1, Ecn::Ect0, Ecn::Ect1]);
        let mut m = mb(spec(EcnPolicy::DropEct));
        let got: Vec<_> = [s / 2, s, 5 * s / 2, 3 * s].iter().map(|&t| at(&mut m, t).0).collect();
        assert_eq!(got, [MbVerdict::Pass, MbVerdict::Drop, MbVerdict::Pass, MbVerdict::Drop]);
    }

    #[test]
    fn the_flow_choice_gates_the_ecn_policy() {
        for policy in [EcnPolicy::Bleach, EcnPolicy::DropEct] {
            let spec = MiddleboxSpec { ecn: Some(policy), flow_probability: Some(0.4), ..Default::default() };
            let mut m = mb(spec);
            let mut chosen = 0;
            for _ in 0..2000 {
                let mut flow = FlowMiddlebox::default();
                for _ in 0..3 {
                    let mut b = udp_with(false, Ecn::Ect1);
                    let info = packet::parse(&b, b.len() as u32).unwrap();
                    let v = m.decide(0, &info, &mut b, 1, &mut flow);
                    // a chosen flow's every packet meets the policy; the others' none
                    let acted = match policy {
                        EcnPolicy::DropEct => v == MbVerdict::Drop,
                        _ => v == MbVerdict::Pass && Ecn::of(&b) == Ecn::NotEct,
                    };
                    assert_eq!(acted, flow.chosen == Some(true), "{policy:?}");
                    assert!(ipv4_checksum_ok(&b));
                }
                chosen += flow.chosen.unwrap() as u32;
                let rewritten = if policy == EcnPolicy::Bleach && flow.chosen == Some(true) { 3 } else { 0 };
                assert_eq!(flow.ecn_rewritten, rewritten);
            }
            let share = chosen as f64 / 2000.0;
            assert!((share - 0.4).abs() < 0.04, "{share}");
        }
    }
}
