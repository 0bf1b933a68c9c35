//! Queueing delay at the bottleneck: each packet's *sojourn*, the time from its arrival in
//! the buffer to the start of its transmission (`model::rate::Transmission`). It leaves out
//! the fixed propagation delay and the packet's own serialization, so it is what the queue
//! alone added: the same figure for every sender, whatever its RTT estimator says.
//!
//! Kept as a sum, a count and a max (no allocation per packet); the flow log writes, per
//! flow and interval, the mean from the change in sum and count since the flow's previous
//! line and the interval's max, which the direction hands over at each publish and the flow
//! log takes (`IntervalMax`).

/// Cumulative sojourn of the packets admitted to the buffer (one record per packet).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Sojourn {
    pub packets: u64,
    pub sum_ns: u64,
    pub max_ns: u64,
}

impl Sojourn {
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.packets += 1;
        self.sum_ns += ns;
        self.max_ns = self.max_ns.max(ns);
    }

    pub fn mean_ms(&self) -> f64 {
        if self.packets == 0 {
            0.0
        } else {
            self.sum_ns as f64 / self.packets as f64 / 1e6
        }
    }

    /// The packets recorded since `earlier` (a copy of this one taken before): their count
    /// and mean sojourn in ms (None when there were none).
    pub fn since(&self, earlier: &Sojourn) -> (u64, Option<f64>) {
        let n = self.packets.saturating_sub(earlier.packets);
        let sum = self.sum_ns.saturating_sub(earlier.sum_ns);
        (n, (n > 0).then(|| sum as f64 / n as f64 / 1e6))
    }
}

/// The longest sojourn since the flow log last took it. A direction records into its live
/// copy and restarts it after each publish; the published copy keeps what the flow log has
/// not taken yet (a publish on demand, SIGUSR1, writes no flow-log line), so no interval's
/// maximum is lost however publishes and flow-log lines interleave.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct IntervalMax {
    pub ns: u64,
}

impl IntervalMax {
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.ns = self.ns.max(ns);
    }

    /// Publish: `self` is the new copy of the live value, `untaken` the published one it
    /// replaces.
    pub fn keep_untaken(&mut self, untaken: IntervalMax) {
        self.ns = self.ns.max(untaken.ns);
    }

    /// The flow log took it.
    pub fn take(&mut self) -> u64 {
        std::mem::take(&mut self.ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::LinkConfig;
    use crate::model::{Link, Outcome};
    use crate::packet::{FlowKey, PacketInfo};
    use std::path::Path;

    fn up_link(toml: &str) -> Link {
        let c = LinkConfig::parse(toml, "t.toml", Path::new(".")).unwrap();
        Link::new(&c.up, 1)
    }

    fn pkt(len: u32) -> PacketInfo {
        let a = "198.18.1.2".parse().unwrap();
        PacketInfo { ip_len: len, key: FlowKey { proto: 17, src: a, dst: a, sport: 1, dport: 2 } }
    }

    /// Sojourn of each packet offered at `gap_ns` intervals (None: dropped).
    fn sojourns(toml: &str, n: u64, gap_ns: u64) -> Vec<Option<u64>> {
        let mut l = up_link(toml);
        (0..n)
            .map(|i| match l.on_arrival(i * gap_ns, &pkt(1500), &mut [], 0, &mut Default::default()) {
                Outcome::Release { start_ns, .. } => Some(start_ns - i * gap_ns),
                Outcome::Drop(_) | Outcome::Enqueue { .. } => None,
            })
            .collect()
    }

    #[test]
    fn a_queue_filled_at_twice_the_rate_grows_by_half_a_service_time_per_packet() {
        // 12 Mbit/s: 1500 B take 1 ms; arrivals every 0.5 ms. Packet k arrives at k/2 ms and
        // starts when the k packets before it are done, at k ms: it waits k/2 ms. The 20 ms
        // delay and the packet's own 1 ms of serialization are not in it.
        let s = sojourns("rate_mbit = 12\ndelay_ms = 20\n", 200, 500_000);
        for (k, got) in s.iter().enumerate() {
            assert_eq!(*got, Some(k as u64 * 500_000), "packet {k}");
        }
    }

    #[test]
    fn a_full_buffer_caps_the_sojourn_at_its_drain_time() {
        // the same overload into 10 packets of buffer: an admitted packet finds at most 9
        // ahead of it, one of them in service and partly done, so its wait rises to 8-9
        // service times and stays there
        let s = sojourns("rate_mbit = 12\nbuffer_packets = 10\n", 400, 500_000);
        let kept: Vec<u64> = s.iter().flatten().copied().collect();
        let max = *kept.iter().max().unwrap();
        assert!((8_000_000..=9_000_000).contains(&max), "{max}");
        assert!(s.iter().filter(|x| x.is_none()).count() > 150); // half the offered load is dropped
        let late: Vec<u64> = kept[kept.len() - 50..].to_vec();
        assert!(late.iter().all(|&w| w >= 8_000_000), "{late:?}");
    }

    #[test]
    fn an_idle_link_adds_no_sojourn() {
        // one packet every 2 ms on a link that needs 1 ms each: none waits
        assert!(sojourns("rate_mbit = 12\ndelay_ms = 5\n", 100, 2_000_000).iter().all(|s| *s == Some(0)));
        // nor on an "unlimited" link with back-to-back 12 µs arrivals (1.2 µs each)
        assert!(sojourns("rate_mbit = 10000\n", 100, 12_000).iter().all(|s| *s == Some(0)));
    }

    #[test]
    fn interval_figures_come_from_the_change_since_the_previous_line() {
        let mut s = Sojourn::default();
        s.record(1_000_000);
        s.record(3_000_000);
        let line1 = s;
        assert_eq!(s.since(&Sojourn::default()), (2, Some(2.0)));
        s.record(10_000_000);
        assert_eq!(s.since(&line1), (1, Some(10.0)));
        assert_eq!(s.since(&s), (0, None));
        assert_eq!((s.max_ns, s.mean_ms()), (10_000_000, 14.0 / 3.0));
    }

    #[test]
    fn an_interval_max_survives_publishes_until_the_flow_log_takes_it() {
        let mut live = IntervalMax::default();
        let mut published = IntervalMax::default();
        live.record(7);
        // publish (the direction restarts its live max), then a publish on demand
        let mut copy = live;
        copy.keep_untaken(published);
        published = copy;
        live = IntervalMax::default();
        live.record(3);
        let mut copy = live;
        copy.keep_untaken(published);
        published = copy;
        assert_eq!(published.take(), 7);
        assert_eq!(published.take(), 0);
    }
}
