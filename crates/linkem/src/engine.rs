//! One direction of the router: receive packets from its datapath (NFQUEUE, or AF_PACKET:
//! `datapath`), decide their fate with the link model, and send verdicts when they are due. One thread runs one `Direction`.
//!
//! Releases within a direction are FIFO except reordered packets, so due packets leave as
//! one batch verdict (accept all ids <= N) per wake-up, plus one individual verdict per
//! reordered packet. This is safe because every packet with a smaller id than N is either
//! already verdicted (dropped at arrival, or released) or is a reordered packet due no later
//! than N (its early release is at most its scheduled time, and scheduled times never
//! decrease with id) and therefore released first in the same wake-up. A scheduled link
//! (FQ-CoDel, DualPI2) sends packets in its own order, so its packets are all released one
//! by one, as reordered ones are (`serve_link`).
//!
//! Timing: the thread sleeps (ppoll on the queue socket) until the head packet is due, less
//! the usual lateness of its timer wake-ups (an EWMA, capped at 200 µs), so releases centre
//! on their due times; then it releases every packet due within the next `slot` (default
//! 50 µs): one wake-up and one syscall carry all of them. Optionally it stops sleeping
//! `busy_poll` before a deadline and spins (use a small slot then), trading CPU for precision.
//! Arrival times are the kernel's receive timestamps when present
//! (`datapath::enable_rx_timestamps`).
//!
//! Its own lateness: a packet read more than 1 ms after its stamp beyond the designed read
//! lag, and a timer wake-up more than 1 ms later than asked, are kept as events
//! (`stats::LateReads`, `LateWakeups`): linkem was not running when it meant to (stopped,
//! or its vCPU descheduled), which late releases show only when a packet came due meanwhile.
//!
//! Counters reach the stats writer once per interval, or at once when it wakes the thread
//! through its eventfd (SIGUSR1: a run's audit wants them up to now).
//!
//! Re-phasing (SIGUSR2, `crate::phase`): each arrival first asks the shared request count
//! whether a new trace phase was asked for (one relaxed load); the first packet of the
//! direction that arrived after the request re-anchors its link before it is timed.
//!
//! Lazy reading: with stamps, when a read is late changes nothing. A packet can be due no
//! earlier than its arrival + the direction's *lead* (delay, less the jitter's lower bound
//! and the reorder advance), so with a lead of 0.45 ms or more the thread does not
//! wait on the socket (every arrival would wake it: a context switch, and an IPI in the
//! sender's context) but reads the queue every `read_lag` (a quarter of the lead, at most
//! 1 ms), 64 packets per syscall, besides its release wake-ups. A packet is still read
//! well before it can be due. Without a lead (0 ms delay, normal jitter, reordering) or
//! without stamps it waits on the socket as before.

use crate::config::DirectionProfile;
use crate::datapath::{Datapath, Verdict, RECV_BATCH};
use crate::flows::{FlowCounters, FlowTable};
use crate::handover::{path_of, HandoverRole, FIRST};
use crate::model::aqm::scheduled::{Item, Served};
use crate::model::{DropReason, Link, Outcome};
use crate::nat::{Inbound, Nat};
use crate::packet::{self, Ecn, FlowKey, PacketInfo};
use crate::pcap::PcapLog;
use crate::phase::{PhaseFollower, TracePhase};
use crate::stats::{DirectionSnapshot, DirectionTotals, DualQTotals, LATE_EVENT_NS};
use crate::sys::{realtime_ns, wait_any, Clock, Waker};
use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// What ties a direction to the rest of linkem: the clock and timing both directions share,
/// where it publishes its counters for the writer, how the writer wakes it to publish now
/// or tells it to stop, the packet log both directions append to, and the trace re-phase
/// requests both directions follow.
pub struct Wiring {
    pub clock: Clock,
    pub timing: Timing,
    pub shared: Arc<Mutex<DirectionSnapshot>>,
    pub publish_waker: Arc<Waker>,
    pub stop: Arc<AtomicBool>,
    pub pcap: Option<Arc<PcapLog>>,
    pub trace_phase: Arc<TracePhase>,
    pub nat: Option<NatRole>,
    /// A client's second path (`crate::handover`): this direction's part, and the path's
    /// profile for this direction.
    pub handover: Option<(HandoverRole, DirectionProfile)>,
}

/// A direction's part in the NAT, which stands in front of the bottleneck (client - NAT -
/// link - server): up translates the client's packets as they arrive, before the link;
/// down translates the server's as they leave the link, so a packet queued for a binding
/// that moved meanwhile is dropped, as at a real NAT. The datapath must change packets in
/// place (AF_PACKET; main refuses a NAT on NFQUEUE).
#[derive(Clone)]
pub enum NatRole {
    Outbound(Arc<Mutex<Nat>>),
    Inbound(Arc<Mutex<Nat>>),
}

#[derive(Debug, Clone, Copy)]
pub struct Timing {
    pub slot_ns: u64,
    pub busy_poll_ns: u64,
    pub publish_every_ns: u64,
}

/// Longest sleep when nothing is due, so a stop request is seen promptly.
const IDLE_WAIT_NS: u64 = 20_000_000;
/// Upper bound of the wake-up advance learnt from oversleeping.
const MAX_WAKE_ADVANCE_NS: u64 = 200_000;
/// Retry delay when the stats writer holds the snapshot lock.
const PUBLISH_RETRY_NS: u64 = 1_000_000;
/// recvmmsg rounds per loop turn before releases are looked at again.
const MAX_RECV_ROUNDS: usize = 8;
/// Longest time an arrival waits unread under lazy reading.
const MAX_READ_LAG_NS: u64 = 1_000_000;
/// Below this, lazy reading saves little and risks a late read: wait on the socket.
const MIN_READ_LAG_NS: u64 = 100_000;

/// How long an arrival may wait unread (0 = read on arrival), from the earliest a packet can
/// be due after it arrived: delay - the jitter's lower bound - the reorder advance, less one
/// release slot. Normal jitter has no lower bound (only the departure): no lead.
pub fn read_lag_ns(profile: &DirectionProfile, slot_ns: u64) -> u64 {
    let jitter = match profile.jitter_distribution {
        _ if profile.jitter_ms <= 0.0 => 0.0,
        crate::config::JitterDistribution::Uniform => profile.jitter_ms,
        crate::config::JitterDistribution::Normal => f64::INFINITY,
    };
    let ahead = profile.reorder.as_ref().map_or(0.0, |r| r.ahead_ms);
    let lead_ms = profile.delay_ms - jitter - ahead;
    if !lead_ms.is_finite() || lead_ms <= 0.0 {
        return 0;
    }
    let lag = ((lead_ms * 1e6) as u64).saturating_sub(slot_ns) / 4;
    if lag < MIN_READ_LAG_NS {
        0
    } else {
        lag.min(MAX_READ_LAG_NS)
    }
}

#[derive(Clone, Copy)]
struct Held {
    due_ns: u64,
    id: u32,
    flow: u32,
    len: u32,
    /// Rewritten into a RST: accepted with its bytes from `Direction::rewrites`.
    rst: bool,
}

/// One path through the router: its link and the packets it holds. A direction has one,
/// or two for a client that moves (`crate::handover`).
struct Lane {
    link: Link,
    /// In-order packets, due times non-decreasing.
    fifo: VecDeque<Held>,
    /// Reordered packets, due times non-decreasing too (see `model::reorder`).
    early: VecDeque<Held>,
}

impl Lane {
    fn new(profile: &DirectionProfile, seed: u64, fifo_capacity: usize) -> Lane {
        Lane {
            link: Link::new(profile, seed),
            fifo: VecDeque::with_capacity(fifo_capacity),
            early: VecDeque::with_capacity(fifo_capacity / 16),
        }
    }

    fn next_due(&self, lazy: bool) -> Option<u64> {
        // a scheduled link is served after each read when reading is lazy (its next send
        // waits for the read that makes its arrivals known); on arrival, at its next send
        let send = if lazy { None } else { self.link.next_send_ns() };
        [self.fifo.front().map(|h| h.due_ns), self.early.front().map(|h| h.due_ns), send].into_iter().flatten().min()
    }
}

pub struct Direction<D: Datapath> {
    name: &'static str,
    queue: D,
    /// The link's path, and a moving client's second one.
    lanes: Vec<Lane>,
    flows: FlowTable,
    totals: DirectionTotals,
    /// Ids to drop, collected during one receive batch (reused).
    drops: Vec<u32>,
    /// What serving a scheduled link (FQ-CoDel, DualPI2) did, collected per turn (reused).
    served: Vec<Served>,
    /// Bytes of packets rewritten by the middlebox, by id, until released (rare: one map
    /// entry per RST, so the allocation is off the common path).
    rewrites: HashMap<u32, Vec<u8>>,
    last_arrival: u64,
    /// Typical lateness of timer wake-ups (EWMA), subtracted from the next wake time.
    oversleep_ns: u64,
    /// Lazy reading (see the module doc): read every `read_lag_ns`; 0 = wait on the socket.
    read_lag_ns: u64,
    last_read_ns: u64,
    /// The last read stopped at its round limit, or met unstamped packets: read again now.
    read_now: bool,
    /// Every packet that arrived before this time has been read (the start of the last read
    /// that emptied the socket): how far a scheduled link may be served.
    known_ns: u64,
    clock: Clock,
    timing: Timing,
    shared: Arc<Mutex<DirectionSnapshot>>,
    /// The stats writer wakes the thread through it to have the counters published now.
    publish_waker: Arc<Waker>,
    stop: Arc<AtomicBool>,
    pcap: Option<Arc<PcapLog>>,
    /// Which re-phase request the link runs on (`crate::phase`).
    phase: PhaseFollower,
    nat: Option<NatRole>,
    handover: Option<HandoverRole>,
}

/// A packet the bottleneck took at `arrival`, started on the link at `start` and finished at
/// `departure`: its time in the bottleneck and its sojourn, per flow and direction.
#[inline]
fn record_queueing(c: &mut FlowCounters, totals: &mut DirectionTotals, arrival: u64, start: u64, departure: u64) {
    let q = departure.saturating_sub(arrival);
    c.queue_delay_sum_ns += q;
    c.queue_delay_max_ns = c.queue_delay_max_ns.max(q);
    c.scheduled += 1;
    let sojourn = start.saturating_sub(arrival);
    c.sojourn.record(sojourn);
    c.sojourn_interval_max.record(sojourn);
    totals.sojourn.record(sojourn);
}

/// Keep the RST the middlebox makes of packet `id` until it leaves; its length (the
/// middlebox checked the headers are there, so the rewrite succeeds).
fn rewrite_rst(rewrites: &mut HashMap<u32, Vec<u8>>, id: u32, bytes: &[u8], len: u32) -> u32 {
    match crate::model::tcp_rst::rewrite(bytes) {
        Some(b) => {
            let n = b.len() as u32;
            rewrites.insert(id, b);
            n
        }
        None => len,
    }
}

/// Set CE in the bytes that will leave (AF_PACKET holds them; main refuses an ECN-marking
/// AQM on NFQUEUE, whose copy would not leave) and count the mark.
fn mark_ce(ip: Option<&mut [u8]>, c: &mut FlowCounters, totals: &mut DirectionTotals) -> bool {
    let marked = ip.is_some_and(packet::set_ce);
    if marked {
        c.ce_marked += 1;
        totals.ce_marked += 1;
    }
    marked
}

/// DualPI2's per-queue share of what serving the link did (`marked`: a release that left
/// with CE set).
fn count_dualq(dualq: &mut Option<DualQTotals>, served: &Served, marked: bool) {
    let Some(d) = dualq else { return };
    match *served {
        Served::Drop { full, queue: Some(q), .. } => {
            let t = d.queue(q);
            if full {
                t.dropped_buffer += 1;
            } else {
                t.dropped_aqm += 1;
            }
        }
        Served::Release { item, start_ns, queue: Some(q), .. } => {
            let t = d.queue(q);
            t.ce_marked += marked as u64;
            t.sojourn.record(start_ns.saturating_sub(item.arrival_ns));
        }
        _ => {}
    }
}

/// Classify one packet and count its ECN codepoint as it arrived (before the middlebox, which
/// may rewrite it in `bytes`), the middlebox's rewrites and the drops.
#[inline]
fn decide(
    link: &mut Link,
    flows: &mut FlowTable,
    totals: &mut DirectionTotals,
    now: u64,
    bytes: &mut [u8],
    orig_len: u32,
    path_down: bool,
) -> (PacketInfo, u32, Outcome) {
    totals.received += 1;
    let info = packet::parse(bytes, orig_len).unwrap_or_else(|| {
        totals.unparsed += 1;
        PacketInfo { ip_len: orig_len, key: unparsed_key() }
    });
    let flow = flows.index_of(&info.key);
    let c = flows.get_mut(flow);
    if info.is_udp() {
        c.udp_seen += 1;
    }
    count_ecn_seen(c, totals, Ecn::of(bytes));
    if path_down {
        c.dropped_path_down += 1;
        totals.dropped_path_down += 1;
        return (info, flow, Outcome::Drop(DropReason::PathDown));
    }
    let (rst_before, ecn_before) = (c.mb.rst_rewritten, c.mb.ecn_rewritten);
    let outcome = link.on_arrival(now, &info, bytes, c.udp_seen, &mut c.mb);
    totals.rst_rewritten += c.mb.rst_rewritten - rst_before;
    totals.ecn_rewritten += c.mb.ecn_rewritten - ecn_before;
    if let Outcome::Drop(reason) = outcome {
        match reason {
            DropReason::Loss => {
                c.dropped_loss += 1;
                totals.dropped_loss += 1;
            }
            DropReason::Buffer => {
                c.dropped_buffer += 1;
                totals.dropped_buffer += 1;
            }
            DropReason::Middlebox => {
                c.dropped_middlebox += 1;
                totals.dropped_middlebox += 1;
            }
            DropReason::Aqm => {
                c.dropped_aqm += 1;
                totals.dropped_aqm += 1;
            }
            DropReason::PathDown => unreachable!("counted above, before the link"),
        }
    }
    (info, flow, outcome)
}

/// The wire's evidence of what senders marked: an arrival's ECN codepoint, per flow and
/// direction (not-ECT is the rest of `received`).
#[inline]
fn count_ecn_seen(c: &mut FlowCounters, totals: &mut DirectionTotals, e: Ecn) {
    match e {
        Ecn::NotEct => {}
        Ecn::Ect0 => {
            c.ect0_seen += 1;
            totals.ect0_seen += 1;
        }
        Ecn::Ect1 => {
            c.ect1_seen += 1;
            totals.ect1_seen += 1;
        }
        Ecn::Ce => {
            c.ce_seen += 1;
            totals.ce_seen += 1;
        }
    }
}

fn unparsed_key() -> FlowKey {
    let z = IpAddr::V4(Ipv4Addr::UNSPECIFIED);
    FlowKey { proto: 0, src: z, dst: z, sport: 0, dport: 0 }
}

impl<D: Datapath> Direction<D> {
    pub fn new(name: &'static str, queue: D, profile: &DirectionProfile, seed: u64, wiring: Wiring) -> Direction<D> {
        let Wiring { clock, timing, shared, publish_waker, stop, pcap, trace_phase, nat, handover } = wiring;
        let dualpi2 = |p: &DirectionProfile| matches!(p.aqm, Some(crate::config_aqm::AqmSpec::DualPi2(_)));
        let mut lanes = vec![Lane::new(profile, seed, 65536)];
        let mut any_dualpi2 = dualpi2(profile);
        let mut read_lag = read_lag_ns(profile, timing.slot_ns);
        let handover = handover.map(|(role, second)| {
            // its own random stream: the first path's draws do not depend on the second's
            lanes.push(Lane::new(&second, seed ^ 0x5ec0_d0a7_4a11_0001, 16384));
            any_dualpi2 |= dualpi2(&second);
            // read early enough for the path with the shorter lead
            read_lag = read_lag.min(read_lag_ns(&second, timing.slot_ns));
            role
        });
        Direction {
            name,
            queue,
            lanes,
            flows: FlowTable::default(),
            totals: DirectionTotals {
                // DualPI2's counters per queue, in the stats only when it runs
                dualq: any_dualpi2.then(DualQTotals::default),
                ..DirectionTotals::default()
            },
            drops: Vec::with_capacity(RECV_BATCH),
            served: Vec::with_capacity(RECV_BATCH),
            rewrites: HashMap::new(),
            last_arrival: 0,
            oversleep_ns: 0,
            read_lag_ns: read_lag,
            last_read_ns: 0,
            read_now: true,
            known_ns: 0,
            clock,
            timing,
            shared,
            publish_waker,
            stop,
            pcap,
            phase: PhaseFollower::new(trace_phase),
            nat,
            handover,
        }
    }

    pub fn run(mut self) -> std::io::Result<()> {
        let mut next_publish = self.clock.now_ns() + self.timing.publish_every_ns;
        while !self.stop.load(Ordering::Relaxed) {
            let now = self.clock.now_ns();
            let next_due = self.next_due();
            // Ask to wake early by the usual oversleep, so releases centre on their due time.
            let wake_at = match next_due {
                Some(due) => due.saturating_sub(self.oversleep_ns.min(MAX_WAKE_ADVANCE_NS)),
                None => now + IDLE_WAIT_NS,
            }
            .min(next_publish)
            .saturating_sub(self.timing.busy_poll_ns);
            let lazy = self.read_lag_ns > 0 && !self.read_now;
            let waker = self.publish_waker.fd();
            // Already past the time this turn was meant to start (a release, a read or a
            // publish due): a thread stopped while it was running, not waiting, shows here.
            let read_at = self.last_read_ns + self.read_lag_ns;
            let planned = if lazy { wake_at.min(read_at) } else { wake_at };
            if planned < now {
                self.totals.late_wakeups.record(self.clock.to_monotonic_ns(now), now - planned);
            }
            let readable = if lazy {
                // Sleep without the socket until a release or the next read is due.
                let wake_at = planned;
                if wake_at > now {
                    let w = wait_any(-1, waker, wake_at - now);
                    if w.woken {
                        next_publish = 0;
                    } else {
                        self.learn_oversleep(wake_at);
                    }
                }
                self.clock.now_ns() >= read_at
            } else {
                wake_at <= now || {
                    let w = wait_any(self.queue.fd(), waker, wake_at - now);
                    if w.woken {
                        next_publish = 0; // the stats writer asks for the counters now
                    } else if !w.readable {
                        self.learn_oversleep(wake_at);
                    }
                    w.readable
                }
            };
            // After a timeout with nothing readable, skip the (empty) receive syscall.
            if readable {
                self.receive()?;
            }
            self.release();
            if let Err(e) = self.queue.flush() {
                crate::say!("linkem: {}: sending verdicts failed: {e}", self.name);
            }
            let now = self.clock.now_ns();
            if now >= next_publish {
                // Never wait for the (normal-priority) writer: retry soon if it holds the lock.
                next_publish = now + if self.try_publish() { self.timing.publish_every_ns } else { PUBLISH_RETRY_NS };
            }
        }
        while !self.try_publish() {
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
        Ok(())
    }

    /// After a timer wake-up: learn how late the OS wakes us (EWMA, 1/16), and keep a
    /// wake-up over 1 ms late as an event (linkem could not run: stopped, descheduled; see
    /// also the start of each turn in `run`).
    fn learn_oversleep(&mut self, wake_at: u64) {
        let now = self.clock.now_ns();
        let late_ns = now.saturating_sub(wake_at);
        self.totals.late_wakeups.record(self.clock.to_monotonic_ns(now), late_ns);
        let late = late_ns as i64;
        self.oversleep_ns = (self.oversleep_ns as i64 + (late - self.oversleep_ns as i64) / 16) as u64;
    }

    fn next_due(&self) -> Option<u64> {
        let lazy = self.read_lag_ns > 0;
        self.lanes.iter().filter_map(|l| l.next_due(lazy)).min()
    }

    fn receive(&mut self) -> std::io::Result<()> {
        self.last_read_ns = self.clock.now_ns();
        let unstamped_before = self.totals.arrival_lag.unstamped;
        // Stays true only if the rounds run out with packets still waiting.
        self.read_now = true;
        for _ in 0..MAX_RECV_ROUNDS {
            // Split borrows: the callback needs everything but the queue.
            let Direction {
                queue,
                lanes,
                flows,
                totals,
                drops,
                served,
                rewrites,
                clock,
                last_arrival,
                pcap,
                read_lag_ns,
                phase,
                nat,
                handover,
                ..
            } = self;
            let allowed_wait = *read_lag_ns;
            let now = clock.now_ns();
            let realtime_offset = realtime_ns() as i128 - now as i128;
            let n = queue.recv_batch(|p| {
                // Arrival = when the kernel received the packet, on our clock; kept within
                // [previous arrival, now] so the models see time moving forward.
                let arrival = match p.kernel_rx_realtime_ns {
                    Some(t) => {
                        let a = (t as i128 - realtime_offset).clamp(*last_arrival as i128, now as i128) as u64;
                        totals.arrival_lag.record(now - a);
                        totals.late_reads.packet(now - a, allowed_wait);
                        a
                    }
                    None => {
                        totals.arrival_lag.unstamped += 1;
                        now.max(*last_arrival)
                    }
                };
                *last_arrival = arrival;
                if let Some((origin_ns, phase_ns)) = phase.follow(arrival) {
                    for l in lanes.iter_mut() {
                        l.link.rephase(origin_ns, phase_ns);
                    }
                }
                // the path it takes, and whether that path is down (`crate::handover`)
                let (lane, path_down) = match handover {
                    Some(h) => {
                        let lane = path_of(p.bytes, h.end, h.second);
                        if lane == FIRST {
                            h.clock.saw_first_path(arrival, phase.generation());
                        }
                        (lane, lane == FIRST && h.first_path_down(arrival))
                    }
                    None => (FIRST, false),
                };
                let Lane { link, fifo, early } = &mut lanes[lane];
                if let Some(NatRole::Outbound(n)) = nat {
                    // before the link: the link, its flow log and its pcap see the public end
                    n.lock().unwrap_or_else(|e| e.into_inner()).outbound(p.bytes, p.partial_csum, arrival);
                }
                if let Some(log) = pcap {
                    log.record((arrival as i128 + realtime_offset) as u64, p.bytes, p.orig_len);
                }
                // the middlebox may rewrite the packet's ECN field in place: on AF_PACKET these
                // are the bytes that leave (main refuses such a rewrite on NFQUEUE)
                let (info, flow, decision) = decide(link, flows, totals, arrival, p.bytes, p.orig_len, path_down);
                match decision {
                    Outcome::Drop(_) => drops.push(p.id),
                    Outcome::Release { at_ns, start_ns, departure_ns, reordered, rst, ce } => {
                        let c = flows.get_mut(flow);
                        if ce {
                            let _ = mark_ce(Some(&mut *p.bytes), c, totals);
                        }
                        record_queueing(c, totals, arrival, start_ns, departure_ns);
                        let len = if rst { rewrite_rst(rewrites, p.id, p.bytes, info.ip_len) } else { info.ip_len };
                        let held = Held { due_ns: at_ns, id: p.id, flow, len, rst };
                        if reordered {
                            totals.reordered += 1;
                            early.push_back(held);
                        } else {
                            fifo.push_back(held);
                        }
                    }
                    Outcome::Enqueue { ecn, rst } => {
                        let len = if rst { rewrite_rst(rewrites, p.id, p.bytes, info.ip_len) } else { info.ip_len };
                        let item = Item { id: p.id, flow, arrival_ns: arrival, rst };
                        link.enqueue(item, &info.key, len, ecn, served);
                        // a full scheduler drops: FQ-CoDel from its fattest queue, maybe an
                        // earlier packet; DualPI2 this one
                        for s in served.drain(..) {
                            if let Served::Drop { item, .. } = s {
                                drops.push(item.id);
                                rewrites.remove(&item.id);
                                flows.get_mut(item.flow).dropped_buffer += 1;
                                totals.dropped_buffer += 1;
                                count_dualq(&mut totals.dualq, &s, false);
                            }
                        }
                    }
                }
            })?;
            totals.late_reads.end_read(clock.to_monotonic_ns(now));
            // Drops are verdicted outside the receive callback (it borrows the queue).
            for &id in drops.iter() {
                queue.verdict(id, Verdict::Drop);
            }
            drops.clear();
            if n < RECV_BATCH {
                self.read_now = false;
                // the socket is empty: every packet that arrived before this round is read
                self.known_ns = now;
                break;
            }
        }
        // Unstamped arrivals are timed when read: then read them on arrival.
        if self.totals.arrival_lag.unstamped != unstamped_before {
            self.read_now = true;
        }
        Ok(())
    }

    /// Verdict everything due within the next slot: reordered packets one by one first,
    /// then the in-order run as one batch verdict. With two paths their ids interleave, so
    /// each packet is released on its own (on AF_PACKET, which a handover needs, a batch
    /// verdict is one release per id anyway).
    fn release(&mut self) {
        for lane in 0..self.lanes.len() {
            if self.lanes[lane].link.is_scheduled() {
                self.serve_link(lane);
            }
        }
        let now = self.clock.now_ns();
        let horizon = now + self.timing.slot_ns;
        let batch = self.lanes.len() == 1;
        for lane in 0..self.lanes.len() {
            // a path that went down loses what it still held: due at or after the handover
            let down_at = if lane == FIRST { self.handover.as_ref().and_then(|h| h.down_at_ns()) } else { None };
            let lost = |h: &Held| down_at.is_some_and(|d| h.due_ns >= d);
            while let Some(h) = self.lanes[lane].early.front().copied() {
                if h.due_ns > horizon {
                    break;
                }
                self.lanes[lane].early.pop_front();
                if lost(&h) {
                    self.drop_path_down(&h);
                    continue;
                }
                if !self.through_nat(&h, now) {
                    continue;
                }
                if h.rst {
                    self.accept_rewritten(h.id);
                } else {
                    self.queue.verdict(h.id, Verdict::Accept);
                }
                self.account(&h, now);
            }
            let mut last_id = None;
            while let Some(h) = self.lanes[lane].fifo.front().copied() {
                if h.due_ns > horizon {
                    break;
                }
                self.lanes[lane].fifo.pop_front();
                let lost = lost(&h);
                let forward = !lost && self.through_nat(&h, now);
                if h.rst || !forward || !batch {
                    // A batch verdict covering its id would accept it unchanged: close the run
                    // before it, then send it with its rewritten bytes (or drop it).
                    if let Some(id) = last_id.take() {
                        self.queue.verdict_upto(id, Verdict::Accept);
                    }
                    if !forward {
                        if lost {
                            self.drop_path_down(&h);
                        } else {
                            self.queue.verdict(h.id, Verdict::Drop);
                        }
                        continue;
                    }
                    if h.rst {
                        self.accept_rewritten(h.id);
                    } else {
                        self.queue.verdict(h.id, Verdict::Accept);
                    }
                } else {
                    last_id = Some(h.id);
                }
                self.account(&h, now);
            }
            if let Some(id) = last_id {
                self.queue.verdict_upto(id, Verdict::Accept);
            }
        }
    }

    /// A packet its path lost when it went down: dropped, and counted.
    fn drop_path_down(&mut self, h: &Held) {
        self.queue.verdict(h.id, Verdict::Drop);
        self.rewrites.remove(&h.id);
        self.totals.dropped_path_down += 1;
        self.flows.get_mut(h.flow).dropped_path_down += 1;
    }

    /// Serve a scheduled link (FQ-CoDel, DualPI2) up to the time every arrival is known: the
    /// start of the last read that emptied the socket; when reading on arrival and nothing is
    /// waiting, now. Lazy reading lags the scheduler's decisions by at most the read lag, a
    /// quarter of the delay, so a packet it sends is still due after the decision. Its packets
    /// leave in the scheduler's order, not by id: each is released on its own (`early`).
    fn serve_link(&mut self, lane: usize) {
        let known = if self.read_lag_ns == 0 && !self.read_now { self.clock.now_ns() } else { self.known_ns };
        let mut served = std::mem::take(&mut self.served);
        self.lanes[lane].link.serve(known, &mut served);
        for s in served.drain(..) {
            let mut marked = false;
            match s {
                Served::Drop { item, full, .. } => {
                    self.queue.verdict(item.id, Verdict::Drop);
                    self.rewrites.remove(&item.id);
                    let c = self.flows.get_mut(item.flow);
                    if full {
                        c.dropped_buffer += 1;
                        self.totals.dropped_buffer += 1;
                    } else {
                        c.dropped_aqm += 1;
                        self.totals.dropped_aqm += 1;
                    }
                }
                Served::Release { item, len, start_ns, departure_ns, at_ns, ce, .. } => {
                    let c = self.flows.get_mut(item.flow);
                    if ce && !item.rst {
                        marked = mark_ce(self.queue.held_ip(item.id).map(|(ip, _)| ip), c, &mut self.totals);
                    }
                    record_queueing(c, &mut self.totals, item.arrival_ns, start_ns, departure_ns);
                    self.lanes[lane].early.push_back(Held {
                        due_ns: at_ns,
                        id: item.id,
                        flow: item.flow,
                        len,
                        rst: item.rst,
                    });
                }
            }
            count_dualq(&mut self.totals.dualq, &s, marked);
        }
        self.served = served;
    }

    /// The inbound NAT on a packet leaving the link: translated in place, or false (dropped,
    /// and counted) when its external end has no live binding.
    fn through_nat(&mut self, h: &Held, now: u64) -> bool {
        let Some(NatRole::Inbound(nat)) = &self.nat else { return true };
        let mut nat = nat.lock().unwrap_or_else(|e| e.into_inner());
        // a RST the middlebox made is in `rewrites`, with full checksums
        let bytes =
            if h.rst { self.rewrites.get_mut(&h.id).map(|b| (&mut b[..], false)) } else { self.queue.held_ip(h.id) };
        let Some((ip, partial)) = bytes else { return true };
        if nat.inbound(ip, partial, now) == Inbound::NoBinding {
            drop(nat);
            self.rewrites.remove(&h.id);
            self.totals.dropped_nat += 1;
            self.flows.get_mut(h.flow).dropped_nat += 1;
            return false;
        }
        true
    }

    fn accept_rewritten(&mut self, id: u32) {
        match self.rewrites.remove(&id) {
            Some(b) => self.queue.accept_rewritten(id, &b),
            None => self.queue.verdict(id, Verdict::Drop), // unreachable: rewrite failed
        }
    }

    #[inline]
    fn account(&mut self, h: &Held, now: u64) {
        self.totals.packets += 1;
        self.totals.bytes += h.len as u64;
        let late = now as i64 - h.due_ns as i64;
        self.totals.lateness.record(late);
        if late > LATE_EVENT_NS {
            self.totals.late_events.push(self.clock.to_monotonic_ns(now), late as u64);
        }
        let c = self.flows.get_mut(h.flow);
        c.packets += 1;
        c.bytes += h.len as u64;
    }

    /// Copy the counters for the stats writer; false if the writer holds the lock.
    fn try_publish(&mut self) -> bool {
        self.totals.held = self.lanes.iter().map(|l| (l.fifo.len() + l.early.len()) as u64).sum();
        self.totals.queue = self.queue.errors();
        match self.shared.try_lock() {
            Ok(mut s) => {
                s.update(&self.totals, &self.flows);
                s.published_ns = self.clock.now_ns();
                self.flows.restart_sojourn_intervals();
                true
            }
            Err(std::sync::TryLockError::WouldBlock) => false,
            Err(std::sync::TryLockError::Poisoned(_)) => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{decide, read_lag_ns};
    use crate::config::LinkConfig;
    use crate::flows::FlowTable;
    use crate::model::{DropReason, Link, Outcome};
    use crate::packet::{self, Ecn};
    use crate::stats::DirectionTotals;
    use std::path::Path;

    /// An IPv4 UDP packet from port `sport` with ECN codepoint `e`.
    fn udp(sport: u16, e: Ecn) -> Vec<u8> {
        let mut b = vec![0u8; 100];
        b[0] = 0x45;
        b[2..4].copy_from_slice(&100u16.to_be_bytes());
        b[8] = 64;
        b[9] = packet::PROTO_UDP;
        b[12..16].copy_from_slice(&[198, 18, 1, 2]);
        b[16..20].copy_from_slice(&[198, 18, 2, 2]);
        b[20..22].copy_from_slice(&sport.to_be_bytes());
        b[22..24].copy_from_slice(&4433u16.to_be_bytes());
        assert!(packet::set_ecn(&mut b, e));
        b
    }

    /// Packets of two flows through `decide` on the up direction of `toml`: each packet's
    /// outcome and codepoint after, the table and the totals.
    fn arrivals(toml: &str, packets: &[(u16, Ecn)]) -> (Vec<(Outcome, Ecn)>, FlowTable, DirectionTotals) {
        let c = LinkConfig::parse(toml, "t.toml", Path::new(".")).unwrap();
        let mut link = Link::new(&c.up, 1);
        let (mut flows, mut totals) = (FlowTable::default(), DirectionTotals::default());
        let out = packets
            .iter()
            .enumerate()
            .map(|(i, &(sport, e))| {
                let mut b = udp(sport, e);
                let o = decide(&mut link, &mut flows, &mut totals, i as u64 * 1_000_000, &mut b, 100, false);
                (o.2, Ecn::of(&b))
            })
            .collect();
        (out, flows, totals)
    }

    #[test]
    fn ecn_codepoints_are_counted_as_they_arrived_per_flow_and_direction() {
        use Ecn::*;
        let sent = [(1, Ect0), (1, Ect0), (1, Ect1), (1, Ce), (1, NotEct), (2, Ect1), (2, Ect1), (2, NotEct)];
        let (_, flows, t) = arrivals("rate_mbit = 100\n", &sent);
        assert_eq!((t.received, t.ect0_seen, t.ect1_seen, t.ce_seen, t.ecn_rewritten), (8, 2, 3, 1, 0));
        let f = |i: usize| {
            let c = &flows.counters[i];
            (c.ect0_seen, c.ect1_seen, c.ce_seen, c.mb.ecn_rewritten)
        };
        assert_eq!((f(0), f(1)), ((2, 1, 1, 0), (0, 2, 0, 0)));
        // before the middlebox: a bleaching box rewrites them, the counters say what arrived
        let (out, flows, t) = arrivals("rate_mbit = 100\n[middlebox]\necn = \"bleach\"\n", &sent);
        assert!(out.iter().all(|(o, e)| matches!(o, Outcome::Release { .. }) && *e == NotEct), "{out:?}");
        assert_eq!((t.ect0_seen, t.ect1_seen, t.ce_seen, t.ecn_rewritten), (2, 3, 1, 6));
        assert_eq!((f(0), f(1)), ((2, 1, 1, 0), (0, 2, 0, 0)), "per flow the same as without");
        assert_eq!((flows.counters[0].mb.ecn_rewritten, flows.counters[1].mb.ecn_rewritten), (4, 2));
        // a black hole: seen, then dropped by the middlebox
        let (out, flows, t) = arrivals("rate_mbit = 100\n[up.middlebox]\necn = \"drop_ect\"\n", &sent);
        let dropped = out.iter().filter(|(o, _)| *o == Outcome::Drop(DropReason::Middlebox)).count();
        assert_eq!((dropped, t.dropped_middlebox, t.ect0_seen + t.ect1_seen + t.ce_seen), (6, 6, 6));
        assert_eq!((flows.counters[0].dropped_middlebox, flows.counters[1].dropped_middlebox), (4, 2));
        assert_eq!(t.ecn_rewritten, 0);
    }

    fn lag(toml: &str) -> u64 {
        let c = LinkConfig::parse(toml, "t.toml", Path::new(".")).unwrap();
        read_lag_ns(&c.up, 50_000)
    }

    #[test]
    fn read_lag_follows_the_lead() {
        assert_eq!(lag("rate_mbit = 100\n"), 0); // no delay: read on arrival
        assert_eq!(lag("rate_mbit = 100\ndelay_ms = 20\n"), 1_000_000); // capped
        assert_eq!(lag("rate_mbit = 100\ndelay_ms = 2\n"), (2_000_000 - 50_000) / 4);
        assert_eq!(lag("rate_mbit = 100\ndelay_ms = 0.3\n"), 0); // too small to bother
        assert_eq!(lag("rate_mbit = 100\ndelay_ms = 20\njitter_ms = 19.5\n"), 112_500);
        assert_eq!(lag("rate_mbit = 100\ndelay_ms = 20\njitter_ms = 1\njitter_distribution = \"normal\"\n"), 0);
        assert_eq!(lag("rate_mbit = 100\ndelay_ms = 20\n[reorder]\nprobability = 0.1\nahead_ms = 20\n"), 0);
    }
}
