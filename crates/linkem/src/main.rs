//! `linkem run` and `linkem validate`: the command line around the emulator.

use clap::{Parser, Subcommand};
use linkem::afpacket::{PacketPath, Ports};
use linkem::cadence::Cadence;
use linkem::config::{ConfigError, DirectionProfile, LinkConfig};
use linkem::datapath::{enable_rx_timestamps, Datapath};
use linkem::engine::{Direction, NatRole, Timing, Wiring};
use linkem::handover::{ClientEnd, HandoverClock, HandoverConfig, HandoverRole};
use linkem::nat::Nat;
use linkem::nfqueue::{kernel_queue_stats, KernelQueueStats, NfQueue, MAX_COPY_BYTES};
use linkem::pcap::PcapLog;
use linkem::phase::{read_phase_file, TracePhase};
use linkem::rng::Rng;
use linkem::stats::{handover_json, nat_json, stats_json, write_atomic, DirectionSnapshot, FlowLog};
use linkem::sys;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

#[derive(Parser)]
#[command(name = "linkem", version, about = "Userspace link emulator (NFQUEUE router) for longlook")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Emulate the link: bind the two queues, print `ready`, run until SIGTERM/SIGINT.
    Run(Box<RunArgs>),
    /// Check a link config; print it normalised as JSON (exit 0) or the error (exit 2).
    Validate {
        #[arg(long)]
        config: PathBuf,
    },
}

#[derive(clap::Args)]
struct RunArgs {
    #[arg(long)]
    config: PathBuf,
    /// NFQUEUE number of the up direction (client -> server, entering on r0).
    #[arg(long, default_value_t = 0)]
    up_queue: u16,
    /// NFQUEUE number of the down direction (server -> client, entering on r1).
    #[arg(long, default_value_t = 1)]
    down_queue: u16,
    /// Stats JSON, rewritten atomically every interval, on SIGUSR1 and at exit.
    #[arg(long)]
    stats: Option<PathBuf>,
    #[arg(long, default_value_t = 100)]
    stats_interval_ms: u64,
    /// JSON lines, cumulative counters per flow per interval.
    #[arg(long)]
    flow_log: Option<PathBuf>,
    /// The flow log's interval (default: --stats-interval-ms). The flow log is a time series;
    /// the stats can then be rewritten rarely, since SIGUSR1 has them written at once.
    #[arg(long)]
    flow_log_interval_ms: Option<u64>,
    /// Packet log of arrivals (the bytes copied from the queue, `--copy-bytes`), pcap LINKTYPE_RAW.
    #[arg(long)]
    pcap: Option<PathBuf>,
    /// Stop adding packets to the pcap once it would grow past this many bytes.
    #[arg(long)]
    pcap_max_bytes: Option<u64>,
    /// RNG seed (loss, jitter, reordering). Default: from the clock, printed on stderr.
    #[arg(long)]
    seed: Option<u64>,
    /// SCHED_FIFO priority of the direction threads; 0 = normal scheduling.
    #[arg(long, default_value_t = 50)]
    rt_priority: i32,
    /// Packets due within this many µs of a wake-up are released together.
    #[arg(long, default_value_t = 50)]
    slot_us: u64,
    /// Spin instead of sleeping for this many µs before a deadline (costs CPU).
    #[arg(long, default_value_t = 0)]
    busy_poll_us: u64,
    /// Hold a PM QoS request for this CPU wake-up latency (µs) while running. 1 allows a
    /// KVM guest's haltpoll state and nothing deeper; 0 keeps idle CPUs polling, which on
    /// this VM made the host take ~8 ms slices from the always-busy vCPUs (README, "Timing").
    #[arg(long, default_value_t = 1)]
    cpu_latency_us: u32,
    /// Do not make the CPU wake-up latency request (idle CPUs may halt).
    #[arg(long)]
    no_cpu_latency_hold: bool,
    /// Bytes of each packet copied from the kernel (IP + transport headers; 1500 or more:
    /// whole packets, for a full pcap).
    #[arg(long, default_value_t = 128)]
    copy_bytes: u32,
    /// Kernel queue length per direction (packets held awaiting a verdict).
    #[arg(long, default_value_t = 65536)]
    queue_maxlen: u32,
    /// linkem forwards itself (AF_PACKET) instead of judging the kernel's forwarding
    /// (NFQUEUE): the up direction's devices and next hop, `IN,OUT,MAC`. Needs --afpacket-down.
    #[arg(long, value_parser = parse_ports, requires = "afpacket_down")]
    afpacket_up: Option<Ports>,
    /// The down direction's `IN,OUT,MAC`. Needs --afpacket-up.
    #[arg(long, value_parser = parse_ports, requires = "afpacket_up")]
    afpacket_down: Option<Ports>,
    /// On SIGUSR2, read the trace phase (ms, one number >= 0) from this file and restart both
    /// directions' traces there at the next packet; read at each signal, not at start.
    #[arg(long)]
    phase_file: Option<PathBuf>,
}

fn parse_ports(s: &str) -> Result<Ports, String> {
    Ports::parse(s)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Validate { config } => match LinkConfig::load(&config) {
            Ok(c) => {
                let text = serde_json::to_string_pretty(&c).expect("config serializes");
                let _ = writeln!(std::io::stdout(), "{text}"); // a closed pipe is not an error here
                ExitCode::SUCCESS
            }
            Err(e) => config_error(e),
        },
        Command::Run(args) => match LinkConfig::load(&args.config) {
            Ok(c) => run(*args, c),
            Err(e) => config_error(e),
        },
    }
}

fn config_error(e: ConfigError) -> ExitCode {
    linkem::say!("{e}");
    ExitCode::from(2)
}

/// `linkem run`: set up, start one thread per direction, say `ready`, write the outputs until
/// a termination signal or a thread's end, then stop the threads and write the last outputs.
fn run(args: RunArgs, config: LinkConfig) -> ExitCode {
    if !copy_bytes_fit(args.copy_bytes) {
        return ExitCode::from(2);
    }
    // whatever changes packets needs them to leave as linkem holds them
    if let Some(why) = config.nfqueue_refusal().filter(|_| args.afpacket_up.is_none()) {
        linkem::say!("linkem: {}: {why}", args.config.display());
        return ExitCode::from(2);
    }
    let Ok(pcap) = open_pcap(&args) else {
        return ExitCode::from(1);
    };
    let nat = config.nat.clone().map(|c| Arc::new(Mutex::new(Nat::new(c))));
    let handover = config.handover.clone().map(|c| (c, Arc::new(HandoverClock::default())));
    let seed = seed_of(&args);
    // Before any thread starts, so that the direction threads inherit the mask and the signals
    // are taken here, by the writer (`sys::wait_termination`).
    sys::block_termination_signals();
    // Both held (open) until run() returns: the kernel drops each request when it closes.
    let _rx_timestamps = hold_rx_timestamps();
    let cpu_latency_hold = hold_cpu_wakeup_latency(&args);
    let clock = sys::Clock::start();
    let stop = Arc::new(AtomicBool::new(false));
    let trace_phase = Arc::new(TracePhase::default());
    let mut cadence = cadence_of(&args, clock);
    let start = Start {
        args: &args,
        seed,
        clock,
        timing: timing_of(&args, &cadence),
        stop: stop.clone(),
        pcap: pcap.clone(),
        trace_phase: trace_phase.clone(),
        nat: nat.clone(),
        handover: handover.clone(),
    };
    let Ok(Started { directions, threads }) = start_directions(&start, &config) else {
        stop.store(true, Ordering::Relaxed);
        return ExitCode::from(1);
    };
    let cpu_latency_us = cpu_latency_hold.is_some().then_some(args.cpu_latency_us);
    let mut outputs = Outputs::new(&args, clock, &directions, seed, cpu_latency_us, trace_phase, nat);
    outputs.handover = handover;
    // A stats file exists from the moment we say `ready`, so a reader never races the first
    // interval.
    outputs.write(true, true);
    say_ready();
    let phase_file = args.phase_file.as_deref();
    let mut failed = write_until_stopped(clock, phase_file, &mut cadence, &threads, &mut outputs);
    stop.store(true, Ordering::Relaxed);
    failed |= join_directions(threads);
    outputs.write(true, true);
    if let Some(p) = &pcap {
        close_pcap(p);
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

// ---- set-up ----

/// `--copy-bytes` fits a receive slot with its netlink attributes (and covers an IP + TCP
/// header); says what it expects otherwise.
fn copy_bytes_fit(copy_bytes: u32) -> bool {
    let fits = (40..=MAX_COPY_BYTES).contains(&copy_bytes);
    if !fits {
        linkem::say!("linkem: --copy-bytes: expected 40..={}", MAX_COPY_BYTES);
    }
    fits
}

/// The `--pcap` packet log, if asked for (Err: it could not be created; said on stderr).
fn open_pcap(args: &RunArgs) -> Result<Option<Arc<PcapLog>>, ()> {
    let max_bytes = args.pcap_max_bytes.unwrap_or(u64::MAX);
    match args.pcap.as_deref().map(|p| PcapLog::create(p, args.copy_bytes, max_bytes)).transpose() {
        Ok(p) => Ok(p.map(Arc::new)),
        Err(e) => {
            linkem::say!("linkem: --pcap: {e}");
            Err(())
        }
    }
}

/// `--seed`, or one from the clock, printed so that the run can be repeated.
fn seed_of(args: &RunArgs) -> u64 {
    if let Some(seed) = args.seed {
        return seed;
    }
    let seed =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1);
    linkem::say!("linkem: seed {seed}");
    seed
}

/// The kernel's receive stamps on (see `datapath::enable_rx_timestamps`), or a warning.
fn hold_rx_timestamps() -> Option<OwnedFd> {
    match enable_rx_timestamps() {
        Ok(s) => Some(s),
        Err(e) => {
            linkem::say!("linkem: kernel rx timestamps unavailable ({e}); arrivals are taken when read");
            None
        }
    }
}

/// The CPU wake-up latency request (`--cpu-latency-us`), unless `--no-cpu-latency-hold`.
fn hold_cpu_wakeup_latency(args: &RunArgs) -> Option<std::fs::File> {
    if args.no_cpu_latency_hold {
        return None;
    }
    sys::hold_cpu_wakeup_latency(args.cpu_latency_us)
        .map_err(|e| linkem::say!("linkem: /dev/cpu_dma_latency: {e}; idle CPUs may halt and wake late"))
        .ok()
}

/// When the stats and the flow log are written, from `--stats-interval-ms` and
/// `--flow-log-interval-ms`.
fn cadence_of(args: &RunArgs, clock: sys::Clock) -> Cadence {
    let flow_log_every_ns =
        args.flow_log.as_ref().map(|_| args.flow_log_interval_ms.unwrap_or(args.stats_interval_ms).max(1) * 1_000_000);
    Cadence::new(clock.now_ns(), args.stats_interval_ms.max(1) * 1_000_000, flow_log_every_ns)
}

fn timing_of(args: &RunArgs, cadence: &Cadence) -> Timing {
    Timing {
        slot_ns: args.slot_us * 1000,
        busy_poll_ns: args.busy_poll_us * 1000,
        // Directions hand their counters to the writer once per (shorter) interval: a copy
        // made in the real-time thread, so more often (5 ms was tried) makes releases late.
        publish_every_ns: cadence.publish_every_ns(),
    }
}

// ---- the direction threads ----

/// What every direction thread starts from.
struct Start<'a> {
    args: &'a RunArgs,
    seed: u64,
    clock: sys::Clock,
    timing: Timing,
    stop: Arc<AtomicBool>,
    pcap: Option<Arc<PcapLog>>,
    trace_phase: Arc<TracePhase>,
    nat: Option<Arc<Mutex<Nat>>>,
    handover: Option<(HandoverConfig, Arc<HandoverClock>)>,
}

/// A running direction as the writer sees it: where it publishes its counters, and how to
/// ask it to publish them now.
struct Published {
    name: &'static str,
    queue_num: u16,
    snapshot: Arc<Mutex<DirectionSnapshot>>,
    waker: Arc<sys::Waker>,
}

type DirectionThread = (&'static str, JoinHandle<std::io::Result<()>>);

/// Both directions, started.
struct Started {
    directions: Vec<Published>,
    threads: Vec<DirectionThread>,
}

/// Open each direction's datapath and start its thread (Err: one could not start; said on
/// stderr; the threads already started end when told to stop).
fn start_directions(start: &Start, config: &LinkConfig) -> Result<Started, ()> {
    let args = start.args;
    let specs = [
        ("up", args.up_queue, &config.up, 1u64, args.afpacket_up.as_ref()),
        ("down", args.down_queue, &config.down, 2u64, args.afpacket_down.as_ref()),
    ];
    let mut started = Started { directions: Vec::new(), threads: Vec::new() };
    for (name, queue_num, profile, stream, ports) in specs {
        let snapshot = Arc::new(Mutex::new(DirectionSnapshot::default()));
        let waker = match sys::Waker::new() {
            Ok(w) => Arc::new(w),
            Err(e) => {
                linkem::say!("linkem: {name}: eventfd: {e}");
                return Err(());
            }
        };
        let model = (profile, Rng::derive(start.seed, stream).next_u64());
        let wiring = start.wiring(name, &snapshot, &waker);
        let opened = match ports {
            Some(p) => PacketPath::open(p, args.queue_maxlen).map(|path| start.spawn(name, path, model, wiring)),
            None => NfQueue::open(queue_num, args.copy_bytes, args.queue_maxlen)
                .map(|queue| start.spawn(name, queue, model, wiring)),
        };
        match opened {
            Ok(handle) => started.threads.push((name, handle)),
            Err(e) => {
                linkem::say!("linkem: {name}: {e}");
                return Err(());
            }
        }
        started.directions.push(Published { name, queue_num, snapshot, waker });
    }
    Ok(started)
}

impl Start<'_> {
    fn wiring(&self, name: &str, snapshot: &Arc<Mutex<DirectionSnapshot>>, waker: &Arc<sys::Waker>) -> Wiring {
        // the NAT stands between the client (up's sender) and the link
        let nat = self.nat.clone().map(|n| if name == "up" { NatRole::Outbound(n) } else { NatRole::Inbound(n) });
        // up carries the client's address as its source, down as its destination
        let handover = self.handover.as_ref().map(|(c, clock)| {
            let (end, profile) =
                if name == "up" { (ClientEnd::Source, &c.up) } else { (ClientEnd::Destination, &c.down) };
            // coming down, behind a NAT, the second path is its public address (translated on release)
            let second = if end == ClientEnd::Destination { c.public.unwrap_or(c.client) } else { c.client };
            (HandoverRole { end, second, at_ns: c.at_ns, clock: clock.clone() }, profile.clone())
        });
        Wiring {
            clock: self.clock,
            timing: self.timing,
            shared: snapshot.clone(),
            publish_waker: waker.clone(),
            stop: self.stop.clone(),
            pcap: self.pcap.clone(),
            trace_phase: self.trace_phase.clone(),
            nat,
            handover,
        }
    }

    /// One direction's thread: its model (profile, seed) on its datapath, at real-time
    /// priority when allowed.
    fn spawn<D: Datapath + 'static>(
        &self,
        name: &'static str,
        datapath: D,
        (profile, seed): (&DirectionProfile, u64),
        wiring: Wiring,
    ) -> JoinHandle<std::io::Result<()>> {
        let dir = Direction::new(name, datapath, profile, seed, wiring);
        let prio = self.args.rt_priority;
        std::thread::Builder::new()
            .name(format!("linkem-{name}"))
            .spawn(move || {
                if let Err(e) = sys::set_realtime(prio) {
                    linkem::say!("linkem: {name}: SCHED_FIFO {prio} refused ({e}); continuing without");
                }
                dir.run()
            })
            .expect("spawn direction thread")
    }
}

// ---- the writer ----

/// The writer looks at least this often whether a direction thread ended (then linkem
/// exits, failing closed), however long the stats interval.
const THREAD_CHECK_NS: u64 = 100_000_000;

/// Most time `publish_now` waits for the directions (a stopped or starved linkem's reader
/// gets what there is, with its `covers_mono_ms`).
const PUBLISH_NOW_WAIT_NS: u64 = 20_000_000;

fn say_ready() {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "ready");
    let _ = out.flush();
}

/// Write the outputs on their cadence, and the stats at once on SIGUSR1 and SIGUSR2 (after
/// taking the re-phase request), until a termination signal (false) or a direction thread's
/// end (true: a failure).
fn write_until_stopped(
    clock: sys::Clock,
    phase_file: Option<&Path>,
    cadence: &mut Cadence,
    threads: &[DirectionThread],
    outputs: &mut Outputs,
) -> bool {
    loop {
        match sys::wait_termination(cadence.wait_ns(clock.now_ns()).min(THREAD_CHECK_NS)) {
            // SIGUSR1: a reader wants counters up to now (the per-run audit); the flow log
            // keeps its regular interval
            Some(libc::SIGUSR1) => {
                publish_now(clock, outputs.directions);
                outputs.write(true, false);
                continue;
            }
            // SIGUSR2: the next run wants the trace from a given phase; the stats say at once
            // whether the request was taken (`trace_phase`)
            Some(libc::SIGUSR2) => {
                take_phase_request(phase_file, &outputs.trace_phase, clock.now_ns());
                outputs.write(true, false);
                continue;
            }
            Some(sig) => {
                linkem::say!("linkem: signal {sig}, stopping");
                return false;
            }
            None => {}
        }
        if threads.iter().any(|(_, h)| h.is_finished()) {
            return true;
        }
        let due = cadence.due(clock.now_ns());
        if due.stats || (due.flow_log && outputs.flow_log.is_some()) {
            outputs.write(due.stats, due.flow_log);
        }
    }
}

/// SIGUSR2: read the phase from `--phase-file` and hand it to the directions as a request
/// taken at `now_ns`. One that cannot be taken is said on stderr, counted as rejected, and
/// changes nothing (the link keeps its phase).
fn take_phase_request(phase_file: Option<&Path>, trace_phase: &TracePhase, now_ns: u64) {
    let Some(file) = phase_file else {
        linkem::say!("linkem: SIGUSR2 without --phase-file: no phase to move to; ignored");
        trace_phase.reject();
        return;
    };
    match read_phase_file(file) {
        Ok(phase_ms) => trace_phase.request(phase_ms, now_ns),
        Err(e) => {
            linkem::say!("linkem: SIGUSR2: {e}; ignored");
            trace_phase.reject();
        }
    }
}

/// Wake every direction thread to publish its counters, and wait until each has: the stats
/// written next then cover every release up to now, not up to a stats interval ago.
fn publish_now(clock: sys::Clock, directions: &[Published]) {
    let asked = clock.now_ns();
    for d in directions {
        d.waker.wake();
    }
    while clock.now_ns() < asked + PUBLISH_NOW_WAIT_NS {
        if directions.iter().all(|d| d.snapshot.lock().map(|g| g.published_ns >= asked).unwrap_or(true)) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_micros(100));
    }
}

/// One direction's counters as copied for one write.
type Copied = (&'static str, u16, DirectionSnapshot);

/// The stats document (`--stats`) and the flow log (`--flow-log`), written from the counters
/// the directions publish.
struct Outputs<'a> {
    clock: sys::Clock,
    directions: &'a [Published],
    stats: Option<&'a Path>,
    flow_log: Option<FlowLog>,
    /// NFQUEUE only: the kernel's counters of each queue; they vanish when the queues close,
    /// so the last ones read are kept.
    kernel_queues: Option<Vec<Option<KernelQueueStats>>>,
    seed: u64,
    cpu_latency_us: Option<u32>,
    /// Re-phase requests, reported as `trace_phase`.
    trace_phase: Arc<TracePhase>,
    /// The NAT's bindings and rebindings, reported as `nat`.
    nat: Option<Arc<Mutex<Nat>>>,
    /// A moving client's second path and when its first went down, reported as `handover`.
    handover: Option<(HandoverConfig, Arc<HandoverClock>)>,
}

impl<'a> Outputs<'a> {
    fn new(
        args: &'a RunArgs,
        clock: sys::Clock,
        directions: &'a [Published],
        seed: u64,
        cpu_latency_us: Option<u32>,
        trace_phase: Arc<TracePhase>,
        nat: Option<Arc<Mutex<Nat>>>,
    ) -> Self {
        let flow_log = match args.flow_log.as_deref().map(|p| FlowLog::create(p, 2)).transpose() {
            Ok(f) => f,
            Err(e) => {
                linkem::say!("linkem: --flow-log: {e}");
                None
            }
        };
        let nfqueue = args.afpacket_up.is_none();
        let kernel_queues = nfqueue.then(|| vec![None; directions.len()]);
        let stats = args.stats.as_deref();
        Outputs {
            clock,
            directions,
            stats,
            flow_log,
            kernel_queues,
            seed,
            cpu_latency_us,
            trace_phase,
            nat,
            handover: None,
        }
    }

    /// The stats document if `stats`, a flow-log line if `flow_log` (and there is a flow log).
    fn write(&mut self, stats: bool, flow_log: bool) {
        let now = self.clock.now_ns();
        let flow_log = flow_log && self.flow_log.is_some();
        let copies = self.copy_counters(flow_log);
        if stats {
            self.write_stats(now, &copies);
        }
        if let (true, Some(log)) = (flow_log, self.flow_log.as_mut()) {
            let dirs: Vec<_> = copies.iter().map(|(n, _, g)| (*n, g)).collect();
            if let Err(e) = log.append(now as f64 / 1e9, &dirs) {
                linkem::say!("linkem: --flow-log: {e}");
            }
        }
    }

    /// Copy under the lock, serialize after: the real-time threads never wait on us long.
    /// A flow-log line takes the interval maxima; a stats-only write (SIGUSR1) leaves them.
    fn copy_counters(&self, for_flow_log: bool) -> Vec<Copied> {
        self.directions
            .iter()
            .map(|d| {
                let mut shared = d.snapshot.lock().unwrap();
                let copy = shared.clone();
                if for_flow_log {
                    shared.take_sojourn_intervals();
                }
                (d.name, d.queue_num, copy)
            })
            .collect()
    }

    fn write_stats(&mut self, now: u64, copies: &[Copied]) {
        let Some(path) = self.stats else {
            return;
        };
        if let Some(last) = self.kernel_queues.as_mut() {
            for (kept, (_, q, _)) in last.iter_mut().zip(copies) {
                if let Some(k) = kernel_queue_stats(*q) {
                    *kept = Some(k);
                }
            }
        }
        let kernel = |i: usize| self.kernel_queues.as_ref().and_then(|k| k[i]);
        let dirs: Vec<_> = copies.iter().enumerate().map(|(i, (n, _, g))| (*n, g, kernel(i))).collect();
        let mut doc = stats_json(now as f64 / 1e9, self.clock.to_monotonic_ns(now), &dirs);
        // Every release up to this instant is in the document (the oldest direction copy).
        let covers = copies.iter().map(|(_, _, g)| g.published_ns).min().unwrap_or(0);
        doc["covers_mono_ms"] = ((self.clock.to_monotonic_ns(covers) as f64 / 1e3).round() / 1e3).into();
        doc["seed"] = self.seed.into();
        doc["cpu_latency_hold_us"] = self.cpu_latency_us.into();
        doc["trace_phase"] = self.trace_phase.json();
        if let Some(nat) = &self.nat {
            let clock = self.clock;
            doc["nat"] = nat_json(&nat.lock().unwrap_or_else(|e| e.into_inner()), |t| clock.to_monotonic_ns(t));
        }
        if let Some((config, handover_clock)) = &self.handover {
            let clock = self.clock;
            doc["handover"] = handover_json(config, handover_clock, |t| clock.to_monotonic_ns(t));
        }
        if let Err(e) = write_atomic(path, &doc) {
            linkem::say!("linkem: --stats {}: {e}", path.display());
        }
    }
}

// ---- teardown ----

/// Wait for every direction thread; true if any ended with an error or panicked.
fn join_directions(threads: Vec<DirectionThread>) -> bool {
    let mut failed = false;
    for (name, h) in threads {
        match h.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                linkem::say!("linkem: {name}: {e}");
                failed = true;
            }
            Err(_) => {
                linkem::say!("linkem: {name}: thread panicked");
                failed = true;
            }
        }
    }
    failed
}

fn close_pcap(pcap: &PcapLog) {
    if let Err(e) = pcap.flush() {
        linkem::say!("linkem: --pcap: {e}");
    }
    if pcap.skipped() > 0 {
        linkem::say!("linkem: --pcap: {} packets not written (--pcap-max-bytes reached)", pcap.skipped());
    }
}
