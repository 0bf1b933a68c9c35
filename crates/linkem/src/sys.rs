//! Thin wrappers over the OS: clock, waiting on a socket until a deadline, real-time
//! scheduling, and signals.

use std::io;

/// CLOCK_MONOTONIC in ns (the clock of Python's `time.monotonic()`).
#[inline]
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Monotonic nanoseconds since linkem started (the origin of trace time too): CLOCK_MONOTONIC
/// minus its value at start, read directly so `to_monotonic_ns` is exact.
#[derive(Clone, Copy)]
pub struct Clock {
    origin_ns: u64,
}

impl Clock {
    pub fn start() -> Clock {
        Clock { origin_ns: monotonic_ns() }
    }

    #[inline]
    pub fn now_ns(&self) -> u64 {
        monotonic_ns().saturating_sub(self.origin_ns)
    }

    /// A time of this clock on CLOCK_MONOTONIC (ns).
    #[inline]
    pub fn to_monotonic_ns(&self, t_ns: u64) -> u64 {
        t_ns + self.origin_ns
    }
}

/// CLOCK_REALTIME in ns (the clock of kernel packet timestamps).
#[inline]
pub fn realtime_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
}

/// Wait until `fd` is readable or `timeout_ns` passes. Returns true when readable. A
/// negative `fd` is ignored by ppoll: then this just sleeps.
pub fn wait_readable(fd: i32, timeout_ns: u64) -> bool {
    let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    let ts = libc::timespec {
        tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
    };
    let r = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
    r > 0
}

/// SCHED_FIFO for the calling thread. Also shrinks the timer slack (the default 50 µs slack
/// of normal threads would add to every release when real-time scheduling is refused).
pub fn set_realtime(priority: i32) -> io::Result<()> {
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
    if priority <= 0 {
        return Ok(());
    }
    let param = libc::sched_param { sched_priority: priority };
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Ask the kernel's PM QoS for at most `max_us` of CPU wake-up latency, for as long as the
/// returned file stays open (the request is dropped when it closes, also when the process
/// dies). With 0, idle CPUs poll instead of halting. On a VM that matters: a halted vCPU is
/// woken by the hypervisor, which here delivered timer interrupts 0.2-9 ms late under load and
/// made linkem's releases (and the endpoints' wake-ups) that late; a polling vCPU is not.
pub fn hold_cpu_wakeup_latency(max_us: u32) -> io::Result<std::fs::File> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().write(true).open("/dev/cpu_dma_latency")?;
    f.write_all(&(max_us as i32).to_ne_bytes())?;
    Ok(f)
}

fn termination_set() -> libc::sigset_t {
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGUSR1);
        set
    }
}

/// Block SIGTERM/SIGINT (stop) and SIGUSR1 (write the stats now) in this thread and the
/// threads it spawns later; the main thread then takes them synchronously with
/// `wait_termination`.
pub fn block_termination_signals() {
    let set = termination_set();
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
}

/// Wait up to `timeout_ns` for SIGTERM/SIGINT/SIGUSR1. Returns the signal number if one came.
pub fn wait_termination(timeout_ns: u64) -> Option<i32> {
    let set = termination_set();
    let ts = libc::timespec {
        tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
    };
    let r = unsafe { libc::sigtimedwait(&set, std::ptr::null_mut(), &ts) };
    if r > 0 {
        Some(r)
    } else {
        None
    }
}
