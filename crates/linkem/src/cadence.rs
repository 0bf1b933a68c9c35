//! When the writer writes what. The stats document and the flow log have their own periods:
//! the flow log is a time series (throughput and queueing delay per interval) and wants a
//! short one; the stats document is read on demand (SIGUSR1 writes it at once, covering
//! everything up to then), so its periodic rewrite, a whole JSON document and a rename,
//! can be rare (rewritten every 25 ms it took 9-17% of linkem's CPU at gigabit rates).

/// The outputs due at one wake-up of the writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Due {
    pub stats: bool,
    pub flow_log: bool,
}

#[derive(Debug, Clone)]
pub struct Cadence {
    stats_every_ns: u64,
    /// None: no flow log.
    flow_log_every_ns: Option<u64>,
    next_stats_ns: u64,
    next_flow_log_ns: u64,
}

impl Cadence {
    pub fn new(now_ns: u64, stats_every_ns: u64, flow_log_every_ns: Option<u64>) -> Cadence {
        let stats_every_ns = stats_every_ns.max(1);
        let flow_log_every_ns = flow_log_every_ns.map(|e| e.max(1));
        Cadence {
            stats_every_ns,
            flow_log_every_ns,
            next_stats_ns: now_ns + stats_every_ns,
            next_flow_log_ns: now_ns + flow_log_every_ns.unwrap_or(u64::MAX / 4),
        }
    }

    /// How often the directions hand their counters over: the shorter period, so each output
    /// finds counters at most one of its own periods old.
    pub fn publish_every_ns(&self) -> u64 {
        self.flow_log_every_ns.map_or(self.stats_every_ns, |f| f.min(self.stats_every_ns))
    }

    /// Time from `now_ns` to the next output due (0 if one is due already).
    pub fn wait_ns(&self, now_ns: u64) -> u64 {
        let next = if self.flow_log_every_ns.is_some() {
            self.next_stats_ns.min(self.next_flow_log_ns)
        } else {
            self.next_stats_ns
        };
        next.saturating_sub(now_ns)
    }

    /// The outputs due at `now_ns`; each is then scheduled one period on (from now if the
    /// writer fell behind by more than a period: no burst of catch-up writes).
    pub fn due(&mut self, now_ns: u64) -> Due {
        let mut due = Due::default();
        if now_ns >= self.next_stats_ns {
            due.stats = true;
            self.next_stats_ns = next_after(self.next_stats_ns, self.stats_every_ns, now_ns);
        }
        if let Some(every) = self.flow_log_every_ns {
            if now_ns >= self.next_flow_log_ns {
                due.flow_log = true;
                self.next_flow_log_ns = next_after(self.next_flow_log_ns, every, now_ns);
            }
        }
        due
    }
}

fn next_after(last_due: u64, every: u64, now: u64) -> u64 {
    let next = last_due + every;
    if next > now {
        next
    } else {
        now + every
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn each_output_keeps_its_own_period() {
        let mut c = Cadence::new(0, 1000 * MS, Some(25 * MS));
        assert_eq!(c.publish_every_ns(), 25 * MS);
        assert_eq!(c.wait_ns(0), 25 * MS);
        let mut stats = 0;
        let mut lines = 0;
        let mut now = 0;
        while now < 2000 * MS {
            now += c.wait_ns(now);
            let d = c.due(now);
            stats += d.stats as u32;
            lines += d.flow_log as u32;
        }
        assert_eq!((stats, lines), (2, 80));
    }

    #[test]
    fn without_a_flow_log_only_the_stats_are_due() {
        let mut c = Cadence::new(5 * MS, 100 * MS, None);
        assert_eq!(c.publish_every_ns(), 100 * MS);
        assert_eq!(c.wait_ns(5 * MS), 100 * MS);
        assert_eq!(c.due(50 * MS), Due::default());
        assert_eq!(c.due(105 * MS), Due { stats: true, flow_log: false });
        assert_eq!(c.wait_ns(105 * MS), 100 * MS);
    }

    #[test]
    fn a_late_writer_does_not_catch_up_in_a_burst() {
        let mut c = Cadence::new(0, 25 * MS, Some(25 * MS));
        // stopped for 1 s: one write of each, then the period from there
        assert_eq!(c.due(1000 * MS), Due { stats: true, flow_log: true });
        assert_eq!(c.wait_ns(1000 * MS), 25 * MS);
        // slightly late: the period stays aligned
        assert_eq!(c.due(1027 * MS), Due { stats: true, flow_log: true });
        assert_eq!(c.wait_ns(1027 * MS), 23 * MS);
    }
}
