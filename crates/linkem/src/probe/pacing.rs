//! Sends at a steady rate: sleep until shortly before each deadline, then spin, because
//! thread sleeps overshoot by 50-100 us and a rate probe must not be burstier than the link.

use std::time::{Duration, Instant};

/// Wake-ups later than this before a deadline are spun through rather than slept.
const SPIN: Duration = Duration::from_micros(150);

/// The most a stalled sender may fall behind before the schedule moves on without it. A
/// probe that caught up after a stall (the host deschedules it for 10-100 ms on a busy
/// 2-vCPU machine) would send a burst that overflows a small bottleneck buffer: the link
/// would then be blamed for losses the probe caused. Missed slots are skipped; rates are
/// computed from what was really sent.
const MAX_LAG: Duration = Duration::from_millis(1);

pub struct Pacer {
    start: Instant,
    interval_ns: f64,
    next: u64,
}

impl Pacer {
    pub fn new(interval: Duration) -> Self {
        Pacer { start: Instant::now(), interval_ns: interval.as_nanos() as f64, next: 0 }
    }

    /// A pacer for `bytes`-sized packets at `mbit` Mbit/s.
    pub fn for_rate(mbit: f64, bytes: usize) -> Self {
        let secs = bytes as f64 * 8.0 / (mbit * 1e6);
        Self::new(Duration::from_secs_f64(secs))
    }

    /// Blocks until the next packet is due. When late by up to MAX_LAG, returns at once;
    /// later than that, the schedule restarts from now (no catch-up burst).
    pub fn wait(&mut self) {
        let deadline = self.start + Duration::from_nanos((self.next as f64 * self.interval_ns) as u64);
        self.next += 1;
        loop {
            let now = Instant::now();
            if now >= deadline {
                if now - deadline > MAX_LAG {
                    self.start = now;
                    self.next = 1;
                }
                return;
            }
            let left = deadline - now;
            if left > SPIN {
                std::thread::sleep(left - SPIN);
            } else {
                std::hint::spin_loop();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stall_is_not_followed_by_a_burst() {
        let mut p = Pacer::new(Duration::from_micros(100));
        p.wait();
        std::thread::sleep(Duration::from_millis(20)); // 200 slots missed
        p.wait(); // late: returns at once and restarts the schedule
        let t = Instant::now();
        for _ in 0..10 {
            p.wait();
        }
        // without the restart these ten would go out back to back
        assert!(t.elapsed() >= Duration::from_micros(900), "{:?}", t.elapsed());
    }
}
