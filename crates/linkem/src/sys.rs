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

/// What woke `wait_any`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Woken {
    /// `fd` is readable.
    pub readable: bool,
    /// `wake_fd` (an eventfd) was written: it is drained here.
    pub woken: bool,
}

/// `wait_readable` that also returns as soon as `wake_fd` (an eventfd) is written, and
/// drains it: another thread's way to interrupt the wait.
pub fn wait_any(fd: i32, wake_fd: i32, timeout_ns: u64) -> Woken {
    let mut pfd = [
        libc::pollfd { fd, events: libc::POLLIN, revents: 0 },
        libc::pollfd { fd: wake_fd, events: libc::POLLIN, revents: 0 },
    ];
    let ts = libc::timespec {
        tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
    };
    let r = unsafe { libc::ppoll(pfd.as_mut_ptr(), 2, &ts, std::ptr::null()) };
    if r <= 0 {
        return Woken::default();
    }
    let woken = pfd[1].revents & libc::POLLIN != 0;
    if woken {
        let mut n = 0u64;
        unsafe { libc::read(wake_fd, &mut n as *mut u64 as *mut libc::c_void, 8) };
    }
    Woken { readable: pfd[0].revents & libc::POLLIN != 0, woken }
}

/// A non-blocking eventfd: `wake` it from one thread to end another's `wait_any`.
pub struct Waker(std::os::fd::OwnedFd);

impl Waker {
    pub fn new() -> io::Result<Waker> {
        use std::os::fd::FromRawFd;
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Waker(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) }))
    }

    pub fn fd(&self) -> i32 {
        use std::os::fd::AsRawFd;
        self.0.as_raw_fd()
    }

    pub fn wake(&self) {
        let one = 1u64;
        unsafe { libc::write(self.fd(), &one as *const u64 as *const libc::c_void, 8) };
    }
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
        libc::sigaddset(&mut set, libc::SIGUSR2);
        set
    }
}

/// Block SIGTERM/SIGINT (stop), SIGUSR1 (write the stats now) and SIGUSR2 (re-phase the
/// trace) in this thread and the threads it spawns later; the main thread then takes them
/// synchronously with `wait_termination`. Blocked, SIGUSR2 never takes its default action
/// (ending the process), whether or not there is a phase file.
pub fn block_termination_signals() {
    let set = termination_set();
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
}

/// Wait up to `timeout_ns` for SIGTERM/SIGINT/SIGUSR1/SIGUSR2. Returns the signal number if
/// one came.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_waker_ends_a_wait_at_once_and_is_drained() {
        let w = std::sync::Arc::new(Waker::new().unwrap());
        let w2 = w.clone();
        let t0 = std::time::Instant::now();
        let h = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            w2.wake();
        });
        let r = wait_any(-1, w.fd(), 5_000_000_000);
        h.join().unwrap();
        assert!(r.woken && !r.readable, "{r:?}");
        assert!(t0.elapsed() < std::time::Duration::from_secs(2));
        // drained: the next wait times out
        let r = wait_any(-1, w.fd(), 1_000_000);
        assert!(!r.woken, "{r:?}");
    }
}
