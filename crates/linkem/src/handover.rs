//! A client that moves between two paths: its first address reaches the server over the
//! link's own profile (say Wi-Fi), a second address over a second path with a profile of its
//! own (say LTE), and at the handover the first path goes down.
//!
//! Both paths run through this router, so every packet is still emulated, logged and
//! audited; each path is a `Link` of its own in each direction, with its own queue, and a
//! packet takes the path of the client's address it carries (the source going up, the
//! destination coming down). What a path going down means, as a phone losing its Wi-Fi: from
//! the handover on, every packet to or from the first address is dropped, the ones already
//! queued on that path with it (`dropped_path_down`). The client learns of it the way a
//! phone's OS tells its applications (the testbed tells the client when, `--migrate-at-ms`);
//! what its stack does then (move its connection, or lose it) is what is measured.
//!
//! Behind a NAT each path has a public address of its own, as a phone's Wi-Fi sits behind the
//! home router and its LTE behind the carrier's NAT: the server sees the client move from one
//! public address to the other. Coming down, a packet's path is then read from that public
//! address (the NAT translates it back on release).
//!
//! The handover's clock starts at the first packet of the client's first address, in either
//! direction, as a NAT binding's does (`crate::nat`): every run meets its handover at the
//! same point of its transfer, whenever linkem started.

use crate::config::DirectionProfile;
use serde::Serialize;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// The link config's `[handover]`, resolved.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct HandoverConfig {
    /// The client's address on the second path.
    pub client: Ipv4Addr,
    /// The first path goes down this long after its first packet.
    pub at_ns: u64,
    /// Behind a NAT: the second path's own public address, so the server sees the client
    /// arrive from a new address (the first path's is the NAT's `public`).
    pub public: Option<Ipv4Addr>,
    /// The second path's directions.
    pub up: DirectionProfile,
    pub down: DirectionProfile,
}

/// Where a direction reads the client's address: the source of what the client sends (up),
/// the destination of what it receives (down).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientEnd {
    Source,
    Destination,
}

/// The path a packet belongs to: 0 the link's own, 1 the second path.
pub const FIRST: usize = 0;
pub const SECOND: usize = 1;

/// Which path an IPv4 packet takes (anything unreadable stays on the first).
#[inline]
pub fn path_of(ip: &[u8], end: ClientEnd, second: Ipv4Addr) -> usize {
    let at = match end {
        ClientEnd::Source => 12,
        ClientEnd::Destination => 16,
    };
    match ip.get(at..at + 4) {
        Some(a) if ip[0] >> 4 == 4 && a == second.octets() => SECOND,
        _ => FIRST,
    }
}

/// The handover's clock, shared by both directions: started by the first path's first
/// packet, whichever direction saw it, and started again by the first one after each
/// re-phase request (`crate::phase`; the testbed makes one before each run), so that every
/// run of a cell, on one linkem, meets its own handover.
#[derive(Debug, Default)]
pub struct HandoverClock {
    /// The request generation the clock was started in, plus one (0: never started).
    generation: AtomicU64,
    /// linkem-clock ns of that generation's first packet.
    started: AtomicU64,
    /// Taken only to start the clock (once per generation), so two directions agree.
    starting: Mutex<()>,
}

impl HandoverClock {
    /// A packet of the first path at `now_ns`, in request generation `generation`: starts
    /// the clock if it is that generation's first.
    #[inline]
    pub fn saw_first_path(&self, now_ns: u64, generation: u64) {
        if self.generation.load(Ordering::Acquire) == generation + 1 {
            return;
        }
        let _one = self.starting.lock().unwrap_or_else(|e| e.into_inner());
        if self.generation.load(Ordering::Acquire) != generation + 1 {
            self.started.store(now_ns, Ordering::Release);
            self.generation.store(generation + 1, Ordering::Release);
        }
    }

    /// When the current generation's first packet came (None: no packet yet, ever).
    pub fn started_ns(&self) -> Option<u64> {
        match self.generation.load(Ordering::Acquire) {
            0 => None,
            _ => Some(self.started.load(Ordering::Acquire)),
        }
    }
}

/// A direction's part in the handover.
#[derive(Debug, Clone)]
pub struct HandoverRole {
    pub end: ClientEnd,
    pub second: Ipv4Addr,
    pub at_ns: u64,
    pub clock: std::sync::Arc<HandoverClock>,
}

impl HandoverRole {
    /// Whether the first path is down at `now_ns`.
    #[inline]
    pub fn first_path_down(&self, now_ns: u64) -> bool {
        self.clock.started_ns().is_some_and(|t| now_ns >= t + self.at_ns)
    }

    /// When the first path went (or will go) down, once its clock started.
    pub fn down_at_ns(&self) -> Option<u64> {
        self.clock.started_ns().map(|t| t + self.at_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn ip(src: [u8; 4], dst: [u8; 4]) -> Vec<u8> {
        let mut b = vec![0u8; 28];
        b[0] = 0x45;
        b[12..16].copy_from_slice(&src);
        b[16..20].copy_from_slice(&dst);
        b
    }

    #[test]
    fn a_packet_takes_the_path_of_the_client_address_it_carries() {
        let second = Ipv4Addr::new(198, 18, 1, 3);
        let up1 = ip([198, 18, 1, 2], [198, 18, 2, 2]);
        let up2 = ip([198, 18, 1, 3], [198, 18, 2, 2]);
        let down2 = ip([198, 18, 2, 2], [198, 18, 1, 3]);
        assert_eq!(path_of(&up1, ClientEnd::Source, second), FIRST);
        assert_eq!(path_of(&up2, ClientEnd::Source, second), SECOND);
        assert_eq!(path_of(&down2, ClientEnd::Destination, second), SECOND);
        // the server's address is never the client's: down, a packet's source says nothing
        assert_eq!(path_of(&down2, ClientEnd::Source, second), FIRST);
        // not IPv4, or too short: the first path
        let mut v6 = up2.clone();
        v6[0] = 0x60;
        assert_eq!(path_of(&v6, ClientEnd::Source, second), FIRST);
        assert_eq!(path_of(&up2[..14], ClientEnd::Source, second), FIRST);
    }

    #[test]
    fn the_first_path_goes_down_at_its_time_after_its_first_packet_in_either_direction() {
        let clock = Arc::new(HandoverClock::default());
        let role = |end| HandoverRole { end, second: Ipv4Addr::new(198, 18, 1, 3), at_ns: 2_000, clock: clock.clone() };
        let (up, down) = (role(ClientEnd::Source), role(ClientEnd::Destination));
        assert!(!up.first_path_down(u64::MAX), "no packet yet: no clock");
        assert_eq!(down.down_at_ns(), None);
        down.clock.saw_first_path(0, 0); // a first packet at linkem's time 0 counts
        up.clock.saw_first_path(500, 0); // later packets do not move it
        assert_eq!((up.down_at_ns(), down.down_at_ns()), (Some(2_000), Some(2_000)));
        assert!(!up.first_path_down(1_999) && up.first_path_down(2_000) && down.first_path_down(9_000));
        // the next run (a re-phase request): its first packet starts the clock again
        up.clock.saw_first_path(10_000, 1);
        down.clock.saw_first_path(10_400, 1);
        assert_eq!(down.down_at_ns(), Some(12_000));
        assert!(!down.first_path_down(11_999) && up.first_path_down(12_000));
    }
}
