//! Active queue management in front of the bottleneck: a discipline that drops (or, for a
//! packet that says it is ECN-capable, marks CE) before the queue is full, in place of plain
//! drop-tail. One discipline per file, each following its RFC's pseudo-code.
//!
//! linkem decides a packet's fate when it arrives, and the bottleneck is one FIFO: the time
//! the packet would leave the queue for the link (its dequeue time) is known then, as is the
//! time it would wait. A discipline that acts at dequeue (CoDel) is run at that dequeue time;
//! since the FIFO dequeues in arrival order, those times never go backwards and the
//! discipline's state evolves exactly as at a real dequeue. A dropped packet takes no slot
//! on the link: the serializer is rolled back and the next packet leaves when it would have.
//! The one input a dequeue-time discipline reads that is not known at arrival is the backlog
//! left behind the packet when it leaves; the backlog ahead of it when it arrived stands in
//! (in a standing queue the two are alike; see `codel`).
//!
//! FQ-CoDel and DualPI2 are schedulers: which packet leaves next depends on packets that
//! arrive later, so their fate cannot be decided at arrival. The link serves them instead
//! (`scheduled`), as a real dequeue would, up to the time the direction's arrivals are known.

pub mod codel;
pub mod codel_queue;
pub mod dualpi2;
pub mod fq_codel;
pub mod pie;
pub mod scheduled;

use crate::config_aqm::AqmSpec;
use crate::rng::Rng;

/// What the discipline sees of one arriving packet.
#[derive(Debug, Clone, Copy)]
pub struct Arrival {
    pub now_ns: u64,
    /// When its first bit would go onto the link (its dequeue time).
    pub start_ns: u64,
    /// When its last bit would leave.
    pub departure_ns: u64,
    /// Bytes queued ahead of it (the packet in service included).
    pub backlog_bytes: u64,
    pub len: u32,
    /// It carries ECT(0), ECT(1) or CE: a mark reaches its receiver.
    pub ecn_capable: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Pass,
    Drop,
    /// Forward with the IP ECN field set to CE (the packet was ECN-capable).
    Mark,
}

pub enum Aqm {
    CoDel(codel::CoDel),
    Pie(pie::Pie),
}

impl Aqm {
    /// The discipline decided at arrival on the FIFO; None for FQ-CoDel and DualPI2,
    /// schedulers the link serves (`scheduled`).
    pub fn new(spec: &AqmSpec) -> Option<Self> {
        match spec {
            AqmSpec::CoDel(s) => Some(Aqm::CoDel(codel::CoDel::new(s))),
            AqmSpec::Pie(s) => Some(Aqm::Pie(pie::Pie::new(s))),
            AqmSpec::FqCodel(_) | AqmSpec::DualPi2(_) => None,
        }
    }

    /// The fate of a packet the buffer has room for.
    #[inline]
    pub fn decide(&mut self, a: &Arrival, rng: &mut Rng) -> Action {
        match self {
            Aqm::CoDel(c) => c.decide(a),
            Aqm::Pie(p) => p.decide(a, rng),
        }
    }

    /// A packet passed (or was marked) and holds the link from `start_ns` to `departure_ns`.
    #[inline]
    pub fn transmitted(&mut self, start_ns: u64, departure_ns: u64) {
        match self {
            Aqm::CoDel(c) => c.transmitted(departure_ns),
            Aqm::Pie(p) => p.transmitted(start_ns, departure_ns),
        }
    }
}

/// `Drop`, or `Mark` when the discipline may mark instead and the packet is ECN-capable.
#[inline]
pub(crate) fn drop_or_mark(ecn: bool, a: &Arrival) -> Action {
    if ecn && a.ecn_capable {
        Action::Mark
    } else {
        Action::Drop
    }
}
