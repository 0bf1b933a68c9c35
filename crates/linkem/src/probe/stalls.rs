//! Machine stall monitor: one SCHED_FIFO thread per CPU, pinned, waking every period on an
//! absolute timer and recording how late it woke. A thread at that priority is late only
//! when its CPU could not run it at all: interrupts or softirqs held it, or the hypervisor
//! did not run the vCPU. The RTT bench uses the record to tell such stalls, which hit every
//! process on the machine, from the emulator's own error (cyclictest measures the same
//! thing; it is not packaged for this host's use, and the probe needs the record per event).

use super::json::{num, Obj};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

/// Above linkem's direction threads (50), so linkem's own work never shows as a stall.
const PRIORITY: i32 = 90;

pub struct StallOptions {
    pub period: Duration,
    pub threshold: Duration,
    pub duration: Option<Duration>,
    /// Print each stall as a JSON line while running (see `stall_line`).
    pub stream: bool,
}

/// CLOCK_MONOTONIC in ns: the clock of the probe's `sent_mono_ms`, of kernel traces and of
/// linkem's late-release events.
pub use linkem::sys::monotonic_ns;

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

#[derive(Clone, Copy)]
struct Stall {
    cpu: usize,
    due_ns: u64,
    late_ns: u64,
}

fn pin_and_raise(cpu: usize) -> Result<(), String> {
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) != 0 {
            return Err(format!("pinning to CPU {cpu}: {}", std::io::Error::last_os_error()));
        }
        let param = libc::sched_param { sched_priority: PRIORITY };
        if libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) != 0 {
            return Err(format!("SCHED_FIFO {PRIORITY}: {} (run as root)", std::io::Error::last_os_error()));
        }
    }
    Ok(())
}

/// Watches one CPU until STOP; returns its number of wake-ups.
fn watch(cpu: usize, o: &StallOptions, stalls: &Mutex<Vec<Stall>>, started: &Barrier) -> Result<u64, String> {
    let raised = pin_and_raise(cpu);
    started.wait(); // also on failure, so `ready` is never waited for in vain
    raised?;
    let period = o.period.as_nanos() as u64;
    let threshold = o.threshold.as_nanos() as u64;
    let mut due = monotonic_ns() + period;
    let mut n = 0u64;
    while !STOP.load(Ordering::Relaxed) {
        let ts = libc::timespec { tv_sec: (due / 1_000_000_000) as _, tv_nsec: (due % 1_000_000_000) as _ };
        unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) };
        let now = monotonic_ns();
        n += 1;
        let late = now.saturating_sub(due);
        if late > threshold {
            stalls.lock().unwrap().push(Stall { cpu, due_ns: due, late_ns: late });
        }
        // After a stall, restart the schedule from now: one stall, one record.
        due = if late > period { now + period } else { due + period };
    }
    Ok(n)
}

/// One `--stream` line: `{"stall": {"cpu": N, "due_mono_ms": X, "late_ms": Y}}`.
fn stall_line(s: &Stall) -> String {
    let o = Obj::new()
        .int("cpu", s.cpu as u64)
        .float("due_mono_ms", s.due_ns as f64 / 1e6)
        .float("late_ms", s.late_ns as f64 / 1e6);
    Obj::new().raw("stall", o.build()).build()
}

/// `--stream`: write the stalls recorded since the last call (`streamed` of them were
/// written before), in the order they were recorded, and flush.
fn stream_new(out: &mut impl Write, stalls: &Mutex<Vec<Stall>>, streamed: &mut usize, fresh: &mut Vec<Stall>) {
    fresh.clear();
    {
        // Copy out and let go at once: the monitor threads take this lock.
        let all = stalls.lock().unwrap();
        fresh.extend_from_slice(&all[(*streamed).min(all.len())..]);
        *streamed = all.len();
    }
    if fresh.is_empty() {
        return;
    }
    for s in fresh.iter() {
        // A reader that went away must not stop the monitor; the final record still follows.
        let _ = writeln!(out, "{}", stall_line(s));
    }
    let _ = out.flush();
}

/// How often `--stream` looks for new stalls: a stall is on stdout within this (plus the
/// watchers' period) of its end. A run's audit waits that long after the run before it reads
/// them (`STALL_REPORT_MS` in core/audit.py), so this is time every run pays.
const STREAM_POLL: Duration = Duration::from_millis(2);

/// Runs until SIGTERM/SIGINT (or the duration), then returns the JSON record.
pub fn run(o: StallOptions) -> Result<String, String> {
    unsafe {
        libc::signal(libc::SIGTERM, on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t);
        libc::signal(libc::SIGINT, on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t);
    }
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let o = Arc::new(o);
    let stalls = Arc::new(Mutex::new(Vec::new()));
    let started = Arc::new(Barrier::new(cpus + 1));
    let start = monotonic_ns();
    let threads: Vec<_> = (0..cpus)
        .map(|cpu| {
            let (o, stalls, started) = (o.clone(), stalls.clone(), started.clone());
            std::thread::spawn(move || watch(cpu, &o, &stalls, &started))
        })
        .collect();
    started.wait(); // every thread pinned and raised (or failed) before we say `ready`
    println!("ready");
    let (mut streamed, mut fresh) = (0usize, Vec::new());
    while !STOP.load(Ordering::Relaxed) {
        // only a stream has a reader waiting: the record alone needs no hurry
        std::thread::sleep(if o.stream { STREAM_POLL } else { Duration::from_millis(10) });
        if o.stream {
            stream_new(&mut std::io::stdout().lock(), &stalls, &mut streamed, &mut fresh);
        }
        if o.duration.is_some_and(|d| monotonic_ns() - start >= d.as_nanos() as u64) {
            STOP.store(true, Ordering::Relaxed);
        }
    }
    let mut wakeups = 0;
    for t in threads {
        wakeups += t.join().map_err(|_| "a monitor thread panicked".to_string())??;
    }
    let end = monotonic_ns();
    if o.stream {
        // Those recorded after the last poll: every stall gets its line before the record.
        stream_new(&mut std::io::stdout().lock(), &stalls, &mut streamed, &mut fresh);
    }
    let mut stalls = std::mem::take(&mut *stalls.lock().unwrap());
    stalls.sort_by_key(|s| s.due_ns);
    let list: Vec<String> = stalls
        .iter()
        .map(|s| format!("[{}, {}, {}]", s.cpu, num(s.due_ns as f64 / 1e6), num(s.late_ns as f64 / 1e6)))
        .collect();
    Ok(Obj::new()
        .str("kind", "stalls")
        .int("cpus", cpus as u64)
        .float("period_ms", o.period.as_secs_f64() * 1e3)
        .float("threshold_ms", o.threshold.as_secs_f64() * 1e3)
        .float("start_mono_ms", start as f64 / 1e6)
        .float("end_mono_ms", end as f64 / 1e6)
        .int("wakeups", wakeups)
        .raw("stalls", format!("[{}]", list.join(", ")))
        .build())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_line_format() {
        let s = Stall { cpu: 1, due_ns: 123_456_789_012, late_ns: 5_250_000 };
        assert_eq!(stall_line(&s), r#"{"stall": {"cpu": 1, "due_mono_ms": 123456.789012, "late_ms": 5.25}}"#);
    }

    #[test]
    fn stream_new_prints_only_new_stalls() {
        let stalls = Mutex::new(vec![Stall { cpu: 0, due_ns: 1_000_000, late_ns: 2_000_000 }]);
        let (mut streamed, mut fresh, mut out) = (0, Vec::new(), Vec::new());
        stream_new(&mut out, &stalls, &mut streamed, &mut fresh);
        stream_new(&mut out, &stalls, &mut streamed, &mut fresh);
        stalls.lock().unwrap().push(Stall { cpu: 1, due_ns: 3_000_000, late_ns: 4_000_000 });
        stream_new(&mut out, &stalls, &mut streamed, &mut fresh);
        assert_eq!(streamed, 2);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"stall\": {\"cpu\": 0, \"due_mono_ms\": 1, \"late_ms\": 2}}\n\
             {\"stall\": {\"cpu\": 1, \"due_mono_ms\": 3, \"late_ms\": 4}}\n"
        );
    }
}
