//! Counters, their snapshots, and the two outputs: the `--stats` JSON document (rewritten
//! atomically) and the `--flow-log` JSON lines.

use crate::datapath::QueueErrors;
use crate::flows::{FlowCounters, FlowTable};
use crate::nfqueue::KernelQueueStats;
use crate::packet::{proto_name, FlowKey};
use serde_json::{json, Map, Value};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Release lateness buckets (release time minus due time), upper bounds in µs.
pub const LATENESS_BOUNDS_US: [i64; 8] = [0, 50, 100, 200, 500, 1000, 2000, 5000];
pub const LATENESS_LABELS: [&str; 9] =
    ["early", "0-50us", "50-100us", "100-200us", "200-500us", "0.5-1ms", "1-2ms", "2-5ms", "over_5ms"];

#[derive(Debug, Default, Clone, Copy)]
pub struct Lateness {
    pub count: u64,
    pub sum_ns: i128,
    pub max_ns: i64,
    pub over_1ms: u64,
    pub histogram: [u64; 9],
}

impl Lateness {
    #[inline]
    pub fn record(&mut self, late_ns: i64) {
        self.count += 1;
        self.sum_ns += late_ns as i128;
        self.max_ns = self.max_ns.max(late_ns);
        if late_ns > LATE_EVENT_NS {
            self.over_1ms += 1;
        }
        let us = if late_ns < 0 { -1 } else { late_ns / 1000 };
        let b = LATENESS_BOUNDS_US.iter().position(|&ub| us < ub).unwrap_or(LATENESS_BOUNDS_US.len());
        self.histogram[b] += 1;
    }
}

/// How long after the kernel received a packet linkem read it from the queue.
#[derive(Debug, Default, Clone, Copy)]
pub struct ArrivalLag {
    pub count: u64,
    pub sum_ns: u64,
    pub max_ns: u64,
    /// Packets without a kernel timestamp (their arrival is linkem's read time).
    pub unstamped: u64,
}

impl ArrivalLag {
    #[inline]
    pub fn record(&mut self, lag_ns: u64) {
        self.count += 1;
        self.sum_ns += lag_ns;
        self.max_ns = self.max_ns.max(lag_ns);
    }
}

/// Releases more than this late are kept as events (the same bound as `over_1ms`).
pub const LATE_EVENT_NS: i64 = 1_000_000;
/// Late-release events kept per direction; older ones are dropped (and counted).
pub const LATE_EVENTS_CAP: usize = 512;

/// The most recent releases more than 1 ms late: (release time on CLOCK_MONOTONIC, lateness),
/// both in ns. A fixed ring inside the totals, so recording never allocates and the snapshot
/// is a plain copy.
#[derive(Debug, Clone, Copy)]
pub struct LateEvents {
    ring: [(u64, u64); LATE_EVENTS_CAP],
    /// Index of the oldest event.
    start: usize,
    len: usize,
    /// Events pushed out of the ring by newer ones, since start.
    pub dropped: u64,
}

impl Default for LateEvents {
    fn default() -> Self {
        LateEvents { ring: [(0, 0); LATE_EVENTS_CAP], start: 0, len: 0, dropped: 0 }
    }
}

impl LateEvents {
    #[inline]
    pub fn push(&mut self, mono_ns: u64, late_ns: u64) {
        if self.len < LATE_EVENTS_CAP {
            self.ring[(self.start + self.len) % LATE_EVENTS_CAP] = (mono_ns, late_ns);
            self.len += 1;
        } else {
            self.ring[self.start] = (mono_ns, late_ns);
            self.start = (self.start + 1) % LATE_EVENTS_CAP;
            self.dropped += 1;
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Oldest first.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        (0..self.len).map(move |i| self.ring[(self.start + i) % LATE_EVENTS_CAP])
    }
}

/// Packets linkem read from its kernel queue more than 1 ms later than it meant to (its
/// lazy-reading lag, 0 when it waits on the socket). The kernel's receive stamp says when
/// each was queued, so this is exact even for a linkem that was not running (stopped, or its
/// vCPU descheduled) while they waited, and whether or not their releases came late.
#[derive(Debug, Default, Clone, Copy)]
pub struct LateReads {
    pub over_1ms: u64,
    /// One per read call that met such packets: (read time on CLOCK_MONOTONIC, the longest
    /// wait in the kernel), both ns.
    pub events: LateEvents,
    longest_ns: u64,
}

impl LateReads {
    /// One packet read `wait_ns` after the kernel queued it, by a reader meant to lag at most
    /// `allowed_ns`.
    #[inline]
    pub fn packet(&mut self, wait_ns: u64, allowed_ns: u64) {
        if wait_ns > allowed_ns + LATE_EVENT_NS as u64 {
            self.over_1ms += 1;
            self.longest_ns = self.longest_ns.max(wait_ns);
        }
    }

    /// A read call ended at `mono_ns`: one event for its longest late wait, if it had one
    /// (one per read, not per packet: a stop leaves hundreds of packets behind it).
    #[inline]
    pub fn end_read(&mut self, mono_ns: u64) {
        if self.longest_ns > 0 {
            self.events.push(mono_ns, self.longest_ns);
            self.longest_ns = 0;
        }
    }
}

/// linkem's wake-ups more than 1 ms later than it asked, or turns of its loop that began
/// more than 1 ms after the release, read or publish they were for: it could not run,
/// whether or not packets were waiting (a stop while the link is idle shows here only).
#[derive(Debug, Default, Clone, Copy)]
pub struct LateWakeups {
    pub over_1ms: u64,
    /// (wake-up time on CLOCK_MONOTONIC, how late), both ns.
    pub events: LateEvents,
}

impl LateWakeups {
    #[inline]
    pub fn record(&mut self, mono_ns: u64, late_ns: u64) {
        if late_ns > LATE_EVENT_NS as u64 {
            self.over_1ms += 1;
            self.events.push(mono_ns, late_ns);
        }
    }
}

#[derive(Debug, Default, Clone, Copy)]
pub struct DirectionTotals {
    /// Packets received from the kernel queue.
    pub received: u64,
    pub packets: u64,
    pub bytes: u64,
    pub dropped_loss: u64,
    pub dropped_buffer: u64,
    pub dropped_middlebox: u64,
    /// Dropped at the NAT (inbound, for no live binding).
    pub dropped_nat: u64,
    /// Dropped because its path was down (`crate::handover`).
    pub dropped_path_down: u64,
    /// Dropped by the AQM discipline before the buffer was full.
    pub dropped_aqm: u64,
    /// Forwarded with CE set by the AQM discipline.
    pub ce_marked: u64,
    /// Packets the middlebox rewrote into TCP RSTs (forwarded, so also in `packets`).
    pub rst_rewritten: u64,
    /// Arrivals whose IP ECN field was ECT(0), ECT(1), CE, counted before the middlebox
    /// (not-ECT: the rest of `received`).
    pub ect0_seen: u64,
    pub ect1_seen: u64,
    pub ce_seen: u64,
    /// Packets whose ECN codepoint the middlebox's `ecn` policy changed.
    pub ecn_rewritten: u64,
    pub reordered: u64,
    /// Packets whose IP header could not be read (scheduled by their kernel length).
    pub unparsed: u64,
    pub lateness: Lateness,
    pub arrival_lag: ArrivalLag,
    /// Packets held (scheduled, verdict not yet sent) at snapshot time.
    pub held: u64,
    pub queue: QueueErrors,
    /// Releases more than 1 ms late, the most recent `LATE_EVENTS_CAP`.
    pub late_events: LateEvents,
    pub late_reads: LateReads,
    pub late_wakeups: LateWakeups,
    /// Time the direction's scheduled packets waited in the buffer.
    pub sojourn: crate::sojourn::Sojourn,
    /// DualPI2's two queues (None with another discipline).
    pub dualq: Option<DualQTotals>,
}

/// One of DualPI2's queues: its share of the direction's drops, marks and sojourns.
#[derive(Debug, Default, Clone, Copy)]
pub struct QueueTotals {
    pub dropped_aqm: u64,
    /// Refused because the queues were full (the RFC's limit).
    pub dropped_buffer: u64,
    pub ce_marked: u64,
    /// Of the packets the link sent from this queue.
    pub sojourn: crate::sojourn::Sojourn,
}

/// DualPI2's L4S (ECT(1), CE) and Classic (not-ECT, ECT(0)) queues.
#[derive(Debug, Default, Clone, Copy)]
pub struct DualQTotals {
    pub l: QueueTotals,
    pub c: QueueTotals,
}

impl DualQTotals {
    pub fn queue(&mut self, q: crate::model::aqm::dualpi2::DualQueue) -> &mut QueueTotals {
        match q {
            crate::model::aqm::dualpi2::DualQueue::L => &mut self.l,
            crate::model::aqm::dualpi2::DualQueue::C => &mut self.c,
        }
    }
}

/// What a direction thread publishes for the writer.
#[derive(Debug, Default, Clone)]
pub struct DirectionSnapshot {
    /// When the direction made this copy (linkem's clock, ns): it holds every release up to then.
    pub published_ns: u64,
    pub totals: DirectionTotals,
    pub keys: Vec<FlowKey>,
    pub flows: Vec<FlowCounters>,
}

impl DirectionSnapshot {
    /// Copy the live table in, reusing this snapshot's allocations. A flow's interval
    /// maximum the flow log has not taken yet is kept (`sojourn::IntervalMax`).
    pub fn update(&mut self, totals: &DirectionTotals, table: &FlowTable) {
        self.totals = *totals;
        if self.keys.len() < table.len() {
            self.keys.extend_from_slice(&table.keys[self.keys.len()..]);
        }
        let known = self.flows.len();
        for (i, live) in table.counters.iter().enumerate() {
            let mut c = *live;
            if i < known {
                c.sojourn_interval_max.keep_untaken(self.flows[i].sojourn_interval_max);
                self.flows[i] = c;
            } else {
                self.flows.push(c);
            }
        }
    }

    /// The flow log writes its lines from this copy: the interval maxima are its now.
    pub fn take_sojourn_intervals(&mut self) {
        for c in &mut self.flows {
            c.sojourn_interval_max.take();
        }
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// `[[mono_ms, ms], ...]` oldest first, 3 decimals.
fn events_json(e: &LateEvents) -> Vec<Value> {
    e.iter().map(|(t, v)| json!([round3(t as f64 / 1e6), round3(v as f64 / 1e6)])).collect()
}

/// A moving client's handover: its second address and the path's profile, and when (on
/// CLOCK_MONOTONIC, ms) its first path's clock started and that path went down (null: not
/// yet). The drops it caused are each direction's and flow's `dropped_path_down`.
pub fn handover_json(
    config: &crate::handover::HandoverConfig,
    clock: &crate::handover::HandoverClock,
    to_monotonic_ns: impl Fn(u64) -> u64,
) -> Value {
    let mono_ms = |t: u64| round3(to_monotonic_ns(t) as f64 / 1e6);
    let started = clock.started_ns();
    json!({
        "config": config,
        "first_packet_mono_ms": started.map(mono_ms),
        "first_path_down_mono_ms": started.map(|t| mono_ms(t + config.at_ns)),
    })
}

/// The NAT's counters, live bindings and rebindings (each: when on CLOCK_MONOTONIC, ms; the
/// internal end; the external end before and after; why).
pub fn nat_json(nat: &crate::nat::Nat, to_monotonic_ns: impl Fn(u64) -> u64) -> Value {
    let c = &nat.counters;
    let end = |(a, p): (std::net::Ipv4Addr, u16)| format!("{a}:{p}");
    let events: Vec<Value> = nat
        .events
        .iter()
        .map(|e| {
            json!({
                "mono_ms": round3(to_monotonic_ns(e.t_ns) as f64 / 1e6),
                "proto": proto_name(e.proto),
                "internal": end(e.internal),
                "from": end(e.from),
                "to": end(e.to),
                "cause": e.cause,
            })
        })
        .collect();
    json!({
        "config": nat.config(),
        "bindings_live": nat.len(),
        "bindings_created": c.bindings_created,
        "rebindings_after_expiry": c.rebindings,
        "expired": c.expired,
        "scheduled_rebindings": c.scheduled_rebindings,
        "inbound_without_binding": c.inbound_without_binding,
        "rebindings": events,
        "rebindings_not_kept": c.events_not_kept,
    })
}

fn queue_json(q: &QueueTotals) -> Value {
    json!({
        "dropped_aqm": q.dropped_aqm,
        "dropped_buffer": q.dropped_buffer,
        "ce_marked": q.ce_marked,
        "sojourn_packets": q.sojourn.packets,
        "sojourn_ns_sum": q.sojourn.sum_ns,
        "sojourn_ms": {
            "mean": round3(q.sojourn.mean_ms()),
            "max": round3(q.sojourn.max_ns as f64 / 1e6),
        },
    })
}

fn direction_json(d: &DirectionTotals, kernel: Option<KernelQueueStats>) -> Value {
    let l = &d.lateness;
    let mut hist = Map::new();
    for (label, n) in LATENESS_LABELS.iter().zip(l.histogram.iter()) {
        hist.insert((*label).to_string(), json!(n));
    }
    let mut v = json!({
        "packets": d.packets,
        "bytes": d.bytes,
        "dropped_loss": d.dropped_loss,
        "dropped_buffer": d.dropped_buffer,
        "dropped_middlebox": d.dropped_middlebox,
        "dropped_nat": d.dropped_nat,
        "dropped_path_down": d.dropped_path_down,
        "dropped_aqm": d.dropped_aqm,
        "ce_marked": d.ce_marked,
        "rst_rewritten": d.rst_rewritten,
        "ect0_seen": d.ect0_seen,
        "ect1_seen": d.ect1_seen,
        "ce_seen": d.ce_seen,
        "ecn_rewritten": d.ecn_rewritten,
        "reordered": d.reordered,
        "late_releases_over_1ms": l.over_1ms,
        "late_release_events": events_json(&d.late_events),
        "late_release_events_dropped": d.late_events.dropped,
        "late_reads_over_1ms": d.late_reads.over_1ms,
        "late_read_events": events_json(&d.late_reads.events),
        "late_read_events_dropped": d.late_reads.events.dropped,
        "late_wakeups_over_1ms": d.late_wakeups.over_1ms,
        "late_wakeup_events": events_json(&d.late_wakeups.events),
        "late_wakeup_events_dropped": d.late_wakeups.events.dropped,
        "received": d.received,
        "held": d.held,
        "unparsed": d.unparsed,
        "release_lateness_us": {
            "mean": if l.count > 0 { round3(l.sum_ns as f64 / l.count as f64 / 1e3) } else { 0.0 },
            "max": round3(l.max_ns as f64 / 1e3),
            "histogram": hist,
        },
        // cumulative, so that a reader's difference of two documents gives an interval's mean
        "sojourn_packets": d.sojourn.packets,
        "sojourn_ns_sum": d.sojourn.sum_ns,
        "sojourn_ms": {
            "mean": round3(d.sojourn.mean_ms()),
            "max": round3(d.sojourn.max_ns as f64 / 1e6),
        },
        "arrival_lag_us": {
            "mean": if d.arrival_lag.count > 0 { round3(d.arrival_lag.sum_ns as f64 / d.arrival_lag.count as f64 / 1e3) } else { 0.0 },
            "max": round3(d.arrival_lag.max_ns as f64 / 1e3),
            "unstamped": d.arrival_lag.unstamped,
        },
        "errors": {
            "verdict_errors": d.queue.verdict_errors,
            "socket_overruns": d.queue.socket_overruns,
            "malformed": d.queue.malformed,
            "gso_unsegmented": d.queue.gso_unsegmented,
            // NFQUEUE's from /proc; AF_PACKET's receive ring counts its own
            "kernel_queue_dropped": kernel.map(|k| k.queue_dropped).or(d.queue.kernel_dropped),
            "held_overflow": d.queue.held_overflow,
            "kernel_user_dropped": kernel.map(|k| k.user_dropped),
        },
    });
    // DualPI2: the direction's drops, marks and sojourns per queue, beside its totals
    if let Some(q) = &d.dualq {
        v["dualq"] = json!({ "l": queue_json(&q.l), "c": queue_json(&q.c) });
    }
    v
}

fn flow_json(direction: &str, key: &FlowKey, c: &FlowCounters) -> Value {
    json!({
        "direction": direction,
        "proto": proto_name(key.proto),
        "src": endpoint(key.src, key.sport),
        "dst": endpoint(key.dst, key.dport),
        "packets": c.packets,
        "bytes": c.bytes,
        "dropped_loss": c.dropped_loss,
        "dropped_buffer": c.dropped_buffer,
        "dropped_middlebox": c.dropped_middlebox,
        "dropped_nat": c.dropped_nat,
        "dropped_path_down": c.dropped_path_down,
        "dropped_aqm": c.dropped_aqm,
        "ce_marked": c.ce_marked,
        "rst_rewritten": c.mb.rst_rewritten,
        "ect0_seen": c.ect0_seen,
        "ect1_seen": c.ect1_seen,
        "ce_seen": c.ce_seen,
        "ecn_rewritten": c.mb.ecn_rewritten,
        "middlebox_chosen": c.mb.chosen,
        "queue_delay_ms_mean": round3(c.queue_delay_mean_ms()),
        "queue_delay_ms_max": round3(c.queue_delay_max_ns as f64 / 1e6),
        "sojourn_ms_mean": round3(c.sojourn.mean_ms()),
        "sojourn_ms_max": round3(c.sojourn.max_ns as f64 / 1e6),
    })
}

fn endpoint(ip: std::net::IpAddr, port: u16) -> String {
    std::net::SocketAddr::new(ip, port).to_string()
}

/// The whole `--stats` document; `mono_ns` is CLOCK_MONOTONIC when it is written.
pub fn stats_json(
    elapsed_s: f64,
    mono_ns: u64,
    dirs: &[(&str, &DirectionSnapshot, Option<KernelQueueStats>)],
) -> Value {
    let mut directions = Map::new();
    let mut flows = Vec::new();
    for (name, snap, kernel) in dirs {
        directions.insert((*name).to_string(), direction_json(&snap.totals, *kernel));
        for (k, c) in snap.keys.iter().zip(snap.flows.iter()) {
            flows.push(flow_json(name, k, c));
        }
    }
    json!({
        "elapsed_s": round3(elapsed_s),
        "mono_ms": round3(mono_ns as f64 / 1e6),
        "directions": directions,
        "flows": flows,
    })
}

/// Write `value` to `path` atomically: a temporary file beside it, then rename.
pub fn write_atomic(path: &Path, value: &Value) -> std::io::Result<()> {
    let mut tmp = PathBuf::from(path);
    let name = format!(".{}.tmp", path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default());
    tmp.set_file_name(name);
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
        serde_json::to_writer(&mut f, value)?;
        f.write_all(b"\n")?;
        f.flush()?;
    }
    std::fs::rename(&tmp, path)
}

/// `--flow-log`: one line per flow whose counters changed since its previous line.
pub struct FlowLog {
    out: std::io::BufWriter<std::fs::File>,
    last: Vec<Vec<FlowCounters>>, // per direction, per flow: counters at the last line
}

impl FlowLog {
    pub fn create(path: &Path, directions: usize) -> std::io::Result<FlowLog> {
        Ok(FlowLog { out: std::io::BufWriter::new(std::fs::File::create(path)?), last: vec![Vec::new(); directions] })
    }

    pub fn append(&mut self, t_s: f64, dirs: &[(&str, &DirectionSnapshot)]) -> std::io::Result<()> {
        for (d, (name, snap)) in dirs.iter().enumerate() {
            let last = &mut self.last[d];
            for (i, (k, c)) in snap.keys.iter().zip(snap.flows.iter()).enumerate() {
                if last.len() <= i {
                    last.push(FlowCounters::default());
                }
                let changed = c.packets != last[i].packets
                    || c.sojourn.packets != last[i].sojourn.packets
                    || c.dropped_loss != last[i].dropped_loss
                    || c.dropped_buffer != last[i].dropped_buffer
                    || c.dropped_middlebox != last[i].dropped_middlebox
                    || c.dropped_nat != last[i].dropped_nat
                    || c.dropped_path_down != last[i].dropped_path_down
                    || c.dropped_aqm != last[i].dropped_aqm
                    || c.ce_marked != last[i].ce_marked
                    || c.ect0_seen != last[i].ect0_seen
                    || c.ect1_seen != last[i].ect1_seen
                    || c.ce_seen != last[i].ce_seen
                    || c.mb.ecn_rewritten != last[i].mb.ecn_rewritten;
                if !changed {
                    continue;
                }
                // over the packets the flow put in the buffer since its previous line
                let (sojourn_packets, sojourn_mean) = c.sojourn.since(&last[i].sojourn);
                let sojourn_max = (sojourn_packets > 0).then(|| round3(c.sojourn_interval_max.ns as f64 / 1e6));
                last[i] = *c;
                let line = json!({
                    "t": round3(t_s),
                    "direction": name,
                    "proto": proto_name(k.proto),
                    "src": endpoint(k.src, k.sport),
                    "dst": endpoint(k.dst, k.dport),
                    "packets": c.packets,
                    "bytes": c.bytes,
                    "dropped_loss": c.dropped_loss,
                    "dropped_buffer": c.dropped_buffer,
                    "dropped_middlebox": c.dropped_middlebox,
                    "dropped_nat": c.dropped_nat,
                    "dropped_path_down": c.dropped_path_down,
                    "dropped_aqm": c.dropped_aqm,
                    "ce_marked": c.ce_marked,
                    "ect0_seen": c.ect0_seen,
                    "ect1_seen": c.ect1_seen,
                    "ce_seen": c.ce_seen,
                    "ecn_rewritten": c.mb.ecn_rewritten,
                    "sojourn_packets": sojourn_packets,
                    "sojourn_ms_mean": sojourn_mean.map(round3),
                    "sojourn_ms_max": sojourn_max,
                });
                serde_json::to_writer(&mut self.out, &line)?;
                self.out.write_all(b"\n")?;
            }
        }
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lateness_buckets() {
        let mut l = Lateness::default();
        for ns in [-5_000, 10_000, 60_000, 1_500_000, 9_000_000] {
            l.record(ns);
        }
        assert_eq!(l.histogram, [1, 1, 1, 0, 0, 0, 1, 0, 1]);
        assert_eq!(l.over_1ms, 2);
        assert_eq!(l.max_ns, 9_000_000);
    }

    #[test]
    fn stats_document_has_contract_fields() {
        let mut table = FlowTable::default();
        let a = "198.18.2.2".parse().unwrap();
        let b = "198.18.1.2".parse().unwrap();
        let i = table.index_of(&FlowKey { proto: 17, src: a, dst: b, sport: 4433, dport: 51000 });
        table.get_mut(i).packets = 3;
        let mut snap = DirectionSnapshot::default();
        snap.update(&DirectionTotals::default(), &table);
        let v = stats_json(1.0, 5_000_000, &[("down", &snap, None), ("up", &DirectionSnapshot::default(), None)]);
        let f = &v["flows"][0];
        assert_eq!(f["src"], "198.18.2.2:4433");
        assert_eq!(f["proto"], "udp");
        assert_eq!(f["packets"], 3);
        assert_eq!(v["mono_ms"], 5.0);
        for k in [
            "packets",
            "bytes",
            "dropped_loss",
            "dropped_buffer",
            "dropped_middlebox",
            "dropped_aqm",
            "ce_marked",
            "ect0_seen",
            "ect1_seen",
            "ce_seen",
            "ecn_rewritten",
            "reordered",
            "late_releases_over_1ms",
            "late_release_events",
            "late_release_events_dropped",
            "late_reads_over_1ms",
            "late_read_events",
            "late_read_events_dropped",
            "late_wakeups_over_1ms",
            "late_wakeup_events",
            "late_wakeup_events_dropped",
        ] {
            assert!(v["directions"]["up"].get(k).is_some(), "{k}");
        }
        assert!(v["directions"]["up"]["sojourn_ms"].get("max").is_some());
        assert!(v["directions"]["up"].get("dualq").is_none(), "only with DualPI2");
        for k in [
            "queue_delay_ms_mean",
            "queue_delay_ms_max",
            "sojourn_ms_mean",
            "sojourn_ms_max",
            "dropped_middlebox",
            "ect0_seen",
            "ect1_seen",
            "ce_seen",
            "ecn_rewritten",
        ] {
            assert!(f.get(k).is_some(), "{k}");
        }
    }
    #[test]
    fn dualpi2_counts_each_queue_beside_the_totals() {
        let mut totals = DirectionTotals { dualq: Some(DualQTotals::default()), ..Default::default() };
        let q = totals.dualq.as_mut().unwrap();
        q.l.ce_marked = 7;
        q.l.sojourn.record(1_000_000);
        q.l.sojourn.record(2_000_000);
        q.c.dropped_aqm = 3;
        q.c.dropped_buffer = 1;
        let mut snap = DirectionSnapshot::default();
        snap.update(&totals, &FlowTable::default());
        let v = stats_json(1.0, 0, &[("down", &snap, None)]);
        let d = &v["directions"]["down"]["dualq"];
        assert_eq!((&d["l"]["ce_marked"], &d["l"]["sojourn_packets"]), (&json!(7), &json!(2)));
        assert_eq!((&d["l"]["sojourn_ms"]["mean"], &d["l"]["sojourn_ms"]["max"]), (&json!(1.5), &json!(2.0)));
        assert_eq!(
            (&d["c"]["dropped_aqm"], &d["c"]["dropped_buffer"], &d["c"]["ce_marked"]),
            (&json!(3), &json!(1), &json!(0))
        );
    }

    /// A flow log in a fresh temporary folder (`tag` names it) and a table with one UDP flow
    /// toward the client: (folder, log file, the log, the table, the flow's index).
    fn one_flow_log(tag: &str) -> (std::path::PathBuf, std::path::PathBuf, FlowLog, FlowTable, u32) {
        let dir = std::env::temp_dir().join(format!("linkem-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("flows.jsonl");
        let log = FlowLog::create(&path, 1).unwrap();
        let mut table = FlowTable::default();
        let a = "198.18.2.2".parse().unwrap();
        let b = "198.18.1.2".parse().unwrap();
        let i = table.index_of(&FlowKey { proto: 17, src: a, dst: b, sport: 4433, dport: 51000 });
        (dir, path, log, table, i)
    }

    #[test]
    fn flow_log_lines_carry_each_interval_s_sojourn() {
        let (dir, path, mut log, mut table, i) = one_flow_log("flowlog");
        let mut snap = DirectionSnapshot::default();
        let publish = |table: &mut FlowTable, snap: &mut DirectionSnapshot| {
            snap.update(&DirectionTotals::default(), table);
            table.restart_sojourn_intervals();
        };
        let enqueue = |table: &mut FlowTable, ns: u64| {
            let c = table.get_mut(i);
            c.scheduled += 1;
            c.sojourn.record(ns);
            c.sojourn_interval_max.record(ns);
        };
        // interval 1: two packets (1 and 5 ms), published twice (the second on demand)
        enqueue(&mut table, 1_000_000);
        publish(&mut table, &mut snap);
        enqueue(&mut table, 5_000_000);
        publish(&mut table, &mut snap);
        log.append(0.025, &[("down", &snap)]).unwrap();
        snap.take_sojourn_intervals();
        // interval 2: one packet of 2 ms; its max is this interval's, not the run's
        enqueue(&mut table, 2_000_000);
        publish(&mut table, &mut snap);
        log.append(0.05, &[("down", &snap)]).unwrap();
        snap.take_sojourn_intervals();
        // interval 3: released packets only (counted at release), none enqueued
        table.get_mut(i).packets += 3;
        publish(&mut table, &mut snap);
        log.append(0.075, &[("down", &snap)]).unwrap();
        drop(log);
        let lines: Vec<Value> =
            std::fs::read_to_string(&path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(lines.len(), 3);
        assert_eq!(
            (&lines[0]["sojourn_packets"], &lines[0]["sojourn_ms_mean"], &lines[0]["sojourn_ms_max"]),
            (&json!(2), &json!(3.0), &json!(5.0))
        );
        assert_eq!(
            (&lines[1]["sojourn_packets"], &lines[1]["sojourn_ms_mean"], &lines[1]["sojourn_ms_max"]),
            (&json!(1), &json!(2.0), &json!(2.0))
        );
        assert_eq!(
            (&lines[2]["sojourn_packets"], &lines[2]["sojourn_ms_mean"], &lines[2]["sojourn_ms_max"]),
            (&json!(0), &Value::Null, &Value::Null)
        );
        // the stats document keeps the run's figures
        let v = stats_json(1.0, 0, &[("down", &snap, None)]);
        assert_eq!((&v["flows"][0]["sojourn_ms_mean"], &v["flows"][0]["sojourn_ms_max"]), (&json!(2.667), &json!(5.0)));
    }

    #[test]
    fn ecn_arrivals_and_rewrites_reach_the_stats_and_each_flow_log_line() {
        let (dir, path, mut log, mut table, i) = one_flow_log("flowlog-ecn");
        let mut snap = DirectionSnapshot::default();
        let mut totals = DirectionTotals::default();
        // interval 1: packets that arrived and are still queued (no counter but these moved)
        let c = table.get_mut(i);
        (c.ect0_seen, c.ect1_seen, c.ce_seen, c.mb.ecn_rewritten) = (5, 1, 2, 3);
        (totals.ect0_seen, totals.ect1_seen, totals.ce_seen, totals.ecn_rewritten) = (5, 1, 2, 3);
        snap.update(&totals, &table);
        log.append(0.025, &[("up", &snap)]).unwrap();
        // interval 2: nothing moved, no line; interval 3: one more rewrite, a line
        log.append(0.05, &[("up", &snap)]).unwrap();
        table.get_mut(i).mb.ecn_rewritten += 1;
        snap.update(&totals, &table);
        log.append(0.075, &[("up", &snap)]).unwrap();
        drop(log);
        let lines: Vec<Value> =
            std::fs::read_to_string(&path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(lines.len(), 2);
        let ecn = |v: &Value| {
            (v["ect0_seen"].clone(), v["ect1_seen"].clone(), v["ce_seen"].clone(), v["ecn_rewritten"].clone())
        };
        assert_eq!(ecn(&lines[0]), (json!(5), json!(1), json!(2), json!(3)));
        assert_eq!((&lines[1]["t"], ecn(&lines[1]).3), (&json!(0.075), json!(4)));
        let v = stats_json(1.0, 0, &[("up", &snap, None)]);
        assert_eq!(ecn(&v["directions"]["up"]), (json!(5), json!(1), json!(2), json!(3)));
        assert_eq!(ecn(&v["flows"][0]), (json!(5), json!(1), json!(2), json!(4)));
    }

    #[test]
    fn late_events_ring_keeps_newest_in_order() {
        let mut e = LateEvents::default();
        assert!(e.is_empty());
        for i in 0..3u64 {
            e.push(10_000_000 + i, 2_000_000 + i);
        }
        assert_eq!(
            e.iter().collect::<Vec<_>>(),
            vec![(10_000_000, 2_000_000), (10_000_001, 2_000_001), (10_000_002, 2_000_002)]
        );
        assert_eq!(e.dropped, 0);
        let n = LATE_EVENTS_CAP as u64 + 100;
        let mut e = LateEvents::default();
        for i in 0..n {
            e.push(i, i * 10);
        }
        assert_eq!(e.len(), LATE_EVENTS_CAP);
        assert_eq!(e.dropped, 100);
        let got: Vec<_> = e.iter().collect();
        assert_eq!(got.first(), Some(&(100, 1000)));
        assert_eq!(got.last(), Some(&(n - 1, (n - 1) * 10)));
        assert!(got.windows(2).all(|w| w[1].0 == w[0].0 + 1));

        // In the document: [mono_ms, late_ms], oldest first, 3 decimals.
        let mut totals = DirectionTotals::default();
        totals.late_events.push(123_456_789_012, 1_234_567);
        totals.late_events.push(123_457_000_000, 16_000_400);
        let mut snap = DirectionSnapshot::default();
        snap.update(&totals, &FlowTable::default());
        let v = stats_json(0.0, 0, &[("up", &snap, None)]);
        let up = &v["directions"]["up"];
        assert_eq!(up["late_release_events"], json!([[123456.789, 1.235], [123457.0, 16.0]]));
        assert_eq!(up["late_release_events_dropped"], 0);
    }

    #[test]
    fn late_reads_count_packets_and_keep_one_event_per_read() {
        let mut r = LateReads::default();
        // a lazy reader (0.5 ms lag allowed): 1.4 ms is within lag + 1 ms, 1.6 ms is not
        r.packet(1_400_000, 500_000);
        r.end_read(7_000_000);
        assert_eq!((r.over_1ms, r.events.len()), (0, 0));
        // a read after a 140 ms stop: every packet that waited is counted, the read is one
        // event carrying the longest wait
        for wait in [140_000_000, 120_000_000, 1_600_000, 300_000] {
            r.packet(wait, 500_000);
        }
        r.end_read(9_000_000);
        assert_eq!(r.over_1ms, 3);
        assert_eq!(r.events.iter().collect::<Vec<_>>(), vec![(9_000_000, 140_000_000)]);
        // the next read starts afresh
        r.packet(2_000_000, 0);
        r.end_read(10_000_000);
        assert_eq!(r.events.iter().last(), Some((10_000_000, 2_000_000)));

        let mut w = LateWakeups::default();
        w.record(1_000_000, 900_000);
        w.record(2_000_000, 138_000_000);
        assert_eq!(w.over_1ms, 1);
        assert_eq!(w.events.iter().collect::<Vec<_>>(), vec![(2_000_000, 138_000_000)]);

        let mut totals = DirectionTotals { late_reads: r, late_wakeups: w, ..Default::default() };
        totals.late_reads.events.dropped = 0;
        let mut snap = DirectionSnapshot::default();
        snap.update(&totals, &FlowTable::default());
        let v = stats_json(0.0, 0, &[("up", &snap, None)]);
        let up = &v["directions"]["up"];
        assert_eq!(up["late_reads_over_1ms"], 4);
        assert_eq!(up["late_read_events"], json!([[9.0, 140.0], [10.0, 2.0]]));
        assert_eq!(up["late_wakeup_events"], json!([[2.0, 138.0]]));
        assert_eq!(up["late_wakeups_over_1ms"], 1);
    }
}
