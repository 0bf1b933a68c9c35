//! `linkem run` and `linkem validate`: the command line around the emulator.

use clap::{Parser, Subcommand};
use linkem::cadence::Cadence;
use linkem::config::{ConfigError, LinkConfig};
use linkem::afpacket::{PacketPath, Ports};
use linkem::datapath::Datapath;
use linkem::engine::{Direction, Timing};
use linkem::nfqueue::{kernel_queue_stats, NfQueue};
use linkem::pcap::PcapLog;
use linkem::rng::Rng;
use linkem::stats::{stats_json, write_atomic, DirectionSnapshot, FlowLog};
use linkem::sys;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

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
}

fn parse_ports(s: &str) -> Result<Ports, String> {
    Ports::parse(s)
}

/// One direction's thread: its model on its datapath, at real-time priority when allowed.
fn spawn_direction<D: Datapath + 'static>(dir: Direction<D>, name: &'static str, prio: i32) -> std::thread::JoinHandle<std::io::Result<()>> {
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

/// The writer looks at least this often whether a direction thread ended (then linkem
/// exits, failing closed), however long the stats interval.
const THREAD_CHECK_NS: u64 = 100_000_000;

/// Most time `publish_now` waits for the directions (a stopped or starved linkem's reader
/// gets what there is, with its `covers_mono_ms`).
const PUBLISH_NOW_WAIT_NS: u64 = 20_000_000;

/// Wake every direction thread to publish its counters, and wait until each has: the stats
/// written next then cover every release up to now, not up to a stats interval ago.
fn publish_now(clock: sys::Clock, snapshots: &[(&str, u16, Arc<Mutex<DirectionSnapshot>>)], wakers: &[Arc<sys::Waker>]) {
    let asked = clock.now_ns();
    for w in wakers {
        w.wake();
    }
    while clock.now_ns() < asked + PUBLISH_NOW_WAIT_NS {
        if snapshots.iter().all(|(_, _, s)| s.lock().map(|g| g.published_ns >= asked).unwrap_or(true)) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_micros(100));
    }
}

fn config_error(e: ConfigError) -> ExitCode {
    linkem::say!("{e}");
    ExitCode::from(2)
}

fn run(args: RunArgs, config: LinkConfig) -> ExitCode {
    // Each received datagram must fit a 1024-byte slot with its netlink attributes.
    if !(40..=linkem::nfqueue::MAX_COPY_BYTES).contains(&args.copy_bytes) {
        linkem::say!("linkem: --copy-bytes: expected 40..={}", linkem::nfqueue::MAX_COPY_BYTES);
        return ExitCode::from(2);
    }
    let pcap_max = args.pcap_max_bytes.unwrap_or(u64::MAX);
    let pcap = match args.pcap.as_deref().map(|p| PcapLog::create(p, args.copy_bytes, pcap_max)).transpose() {
        Ok(p) => p.map(Arc::new),
        Err(e) => {
            linkem::say!("linkem: --pcap: {e}");
            return ExitCode::from(1);
        }
    };
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1)
    });
    if args.seed.is_none() {
        linkem::say!("linkem: seed {seed}");
    }
    sys::block_termination_signals();
    let _rx_timestamps = match linkem::nfqueue::enable_rx_timestamps() {
        Ok(s) => Some(s),
        Err(e) => {
            linkem::say!("linkem: kernel rx timestamps unavailable ({e}); arrivals are taken when read");
            None
        }
    };
    // Held (open) until run() returns; the kernel drops the request when it closes.
    let cpu_latency_hold = if args.no_cpu_latency_hold {
        None
    } else {
        sys::hold_cpu_wakeup_latency(args.cpu_latency_us)
            .map_err(|e| linkem::say!("linkem: /dev/cpu_dma_latency: {e}; idle CPUs may halt and wake late"))
            .ok()
    };
    let cpu_latency_us = cpu_latency_hold.is_some().then_some(args.cpu_latency_us);
    let clock = sys::Clock::start();
    let stop = Arc::new(AtomicBool::new(false));
    let flow_log_every_ns =
        args.flow_log.as_ref().map(|_| args.flow_log_interval_ms.unwrap_or(args.stats_interval_ms).max(1) * 1_000_000);
    let mut cadence = Cadence::new(clock.now_ns(), args.stats_interval_ms.max(1) * 1_000_000, flow_log_every_ns);
    let timing = Timing {
        slot_ns: args.slot_us * 1000,
        busy_poll_ns: args.busy_poll_us * 1000,
        // Directions hand their counters to the writer once per (shorter) interval: a copy
        // made in the real-time thread, so more often (5 ms was tried) makes releases late.
        publish_every_ns: cadence.publish_every_ns(),
    };

    let mut threads = Vec::new();
    let mut snapshots = Vec::new();
    let mut wakers = Vec::new();
    let afpacket = args.afpacket_up.is_some();
    let dirs = [
        ("up", args.up_queue, &config.up, 1u64, args.afpacket_up.as_ref()),
        ("down", args.down_queue, &config.down, 2u64, args.afpacket_down.as_ref()),
    ];
    for (name, queue_num, profile, stream, ports) in dirs {
        let shared = Arc::new(Mutex::new(DirectionSnapshot::default()));
        let waker = match sys::Waker::new() {
            Ok(w) => Arc::new(w),
            Err(e) => {
                linkem::say!("linkem: {name}: eventfd: {e}");
                stop.store(true, Ordering::Relaxed);
                return ExitCode::from(1);
            }
        };
        let model_seed = Rng::derive(seed, stream).next_u64();
        let opened = match ports {
            Some(p) => PacketPath::open(p, args.queue_maxlen).map(|path| {
                let dir = Direction::new(name, path, profile, model_seed, clock, timing, shared.clone(), waker.clone(), stop.clone(), pcap.clone());
                spawn_direction(dir, name, args.rt_priority)
            }),
            None => NfQueue::open(queue_num, args.copy_bytes, args.queue_maxlen).map(|queue| {
                let dir = Direction::new(name, queue, profile, model_seed, clock, timing, shared.clone(), waker.clone(), stop.clone(), pcap.clone());
                spawn_direction(dir, name, args.rt_priority)
            }),
        };
        let handle = match opened {
            Ok(h) => h,
            Err(e) => {
                linkem::say!("linkem: {name}: {e}");
                stop.store(true, Ordering::Relaxed);
                return ExitCode::from(1);
            }
        };
        snapshots.push((name, queue_num, shared));
        wakers.push(waker);
        threads.push((name, handle));
    }

    let mut flow_log = match args.flow_log.as_deref().map(|p| FlowLog::create(p, 2)).transpose() {
        Ok(f) => f,
        Err(e) => {
            linkem::say!("linkem: --flow-log: {e}");
            None
        }
    };
    let mut failed = false;
    // The kernel's counters vanish when the queues close: keep the last ones read.
    let mut kernel_last = vec![None; snapshots.len()];
    // The stats document if `stats`, a flow-log line if `flow_log` is given.
    let mut write_outputs = |stats: bool, flow_log: &mut Option<&mut FlowLog>| {
        let now = clock.now_ns();
        let elapsed = now as f64 / 1e9;
        // Copy under the lock, serialize after: the real-time threads never wait on us long.
        // A flow-log line takes the interval maxima; a stats-only write (SIGUSR1) leaves them.
        let taking = flow_log.is_some();
        let guards: Vec<_> = snapshots
            .iter()
            .map(|(n, q, s)| {
                let mut shared = s.lock().unwrap();
                let copy = shared.clone();
                if taking {
                    shared.take_sojourn_intervals();
                }
                (*n, *q, copy)
            })
            .collect();
        if let (true, Some(path)) = (stats, &args.stats) {
            for (i, (_, q, _)) in guards.iter().enumerate() {
                if let Some(k) = (!afpacket).then(|| kernel_queue_stats(*q)).flatten() {
                    kernel_last[i] = Some(k);
                }
            }
            let dirs: Vec<_> =
                guards.iter().enumerate().map(|(i, (n, _, g))| (*n, g, kernel_last[i])).collect();
            let mut doc = stats_json(elapsed, clock.to_monotonic_ns(now), &dirs);
            // Every release up to this instant is in the document (the oldest direction copy).
            let covers = guards.iter().map(|(_, _, g)| g.published_ns).min().unwrap_or(0);
            doc["covers_mono_ms"] = ((clock.to_monotonic_ns(covers) as f64 / 1e3).round() / 1e3).into();
            doc["seed"] = seed.into();
            doc["cpu_latency_hold_us"] = cpu_latency_us.into();
            if let Err(e) = write_atomic(path, &doc) {
                linkem::say!("linkem: --stats {}: {e}", path.display());
            }
        }
        if let Some(log) = flow_log.as_mut() {
            let dirs: Vec<_> = guards.iter().map(|(n, _, g)| (*n, g)).collect();
            if let Err(e) = log.append(elapsed, &dirs) {
                linkem::say!("linkem: --flow-log: {e}");
            }
        }
    };
    // A stats file exists from the moment we say `ready`, so a reader never races the first
    // interval.
    write_outputs(true, &mut flow_log.as_mut());
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "ready");
        let _ = out.flush();
    }
    loop {
        match sys::wait_termination(cadence.wait_ns(clock.now_ns()).min(THREAD_CHECK_NS)) {
            // SIGUSR1: a reader wants counters up to now (the per-run audit); the flow log
            // keeps its regular interval
            Some(libc::SIGUSR1) => {
                publish_now(clock, &snapshots, &wakers);
                write_outputs(true, &mut None);
                continue;
            }
            Some(sig) => {
                linkem::say!("linkem: signal {sig}, stopping");
                break;
            }
            None => {}
        }
        if threads.iter().any(|(_, h)| h.is_finished()) {
            failed = true;
            break;
        }
        let due = cadence.due(clock.now_ns());
        let mut log = if due.flow_log { flow_log.as_mut() } else { None };
        if due.stats || log.is_some() {
            write_outputs(due.stats, &mut log);
        }
    }
    stop.store(true, Ordering::Relaxed);
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
    write_outputs(true, &mut flow_log.as_mut());
    if let Some(p) = &pcap {
        if let Err(e) = p.flush() {
            linkem::say!("linkem: --pcap: {e}");
        }
        if p.skipped() > 0 {
            linkem::say!("linkem: --pcap: {} packets not written (--pcap-max-bytes reached)", p.skipped());
        }
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
