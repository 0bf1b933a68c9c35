//! Sends at a steady rate: sleep until shortly before each deadline, then spin, because
//! thread sleeps overshoot by 50-100 us and a rate probe must not be burstier than the link.

use std::time::{Duration, Instant};

/// Wake-ups later than this before a deadline are spun through rather than slept.
const SPIN: Duration = Duration::from_micros(150);

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

    /// Blocks until the next packet is due. When late, returns at once (the schedule is kept,
    /// so a stall is followed by a catch-up burst, as a real sender's would be).
    pub fn wait(&mut self) {
        let deadline = self.start + Duration::from_nanos((self.next as f64 * self.interval_ns) as u64);
        self.next += 1;
        loop {
            let now = Instant::now();
            if now >= deadline {
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
