//! mahimahi link traces: one integer millisecond timestamp per line, each line one delivery
//! opportunity of 1500 bytes at that time. The schedule repeats with a period equal to the
//! last timestamp (as in mahimahi's `LinkQueue`: after the last line, the base time advances
//! by the last timestamp and the file is read again from its first line).

use std::path::Path;

/// Bytes one delivery opportunity may carry (mahimahi's `PACKET_SIZE`).
pub const OPPORTUNITY_BYTES: u32 = 1500;

/// The latest timestamp a trace may hold: 30 days. Times are kept in u64 nanoseconds, and a
/// period whose nanoseconds overflow (or wrap to 0, then divide by zero) cannot be run;
/// with it, u64 ns overflow only after 584 years of emulation, whatever the period.
/// longlook's Python reads the same number (`linkem-check --limits`).
pub const MAX_TIMESTAMP_MS: u64 = 30 * 24 * 3600 * 1000;

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Trace {
    /// Opportunity times within one period, in ms, non-decreasing; the last equals the period.
    times_ms: Vec<u64>,
}

impl Trace {
    pub fn load(path: &Path) -> Result<Trace, String> {
        let text = crate::userfile::read_text(path, crate::userfile::TRACE_LIMIT)
            .map_err(|e| format!("trace {}: {e}", path.display()))?;
        Trace::parse(&text).map_err(|e| format!("trace {}: {e}", path.display()))
    }

    pub fn parse(text: &str) -> Result<Trace, String> {
        let mut times_ms = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let t: u64 =
                line.parse().map_err(|_| format!("line {}: expected an integer ms timestamp, got {line:?}", i + 1))?;
            if t > MAX_TIMESTAMP_MS {
                return Err(format!(
                    "line {}: {t} ms is beyond the {MAX_TIMESTAMP_MS} ms (30 days) a trace may last",
                    i + 1
                ));
            }
            if let Some(&prev) = times_ms.last() {
                if t < prev {
                    return Err(format!("line {}: timestamps must not decrease ({t} < {prev})", i + 1));
                }
            }
            times_ms.push(t);
        }
        match times_ms.last() {
            None => Err("no timestamps".into()),
            Some(0) => Err("the last timestamp (the period) must be > 0".into()),
            Some(_) => Ok(Trace { times_ms }),
        }
    }

    pub fn from_times(times_ms: Vec<u64>) -> Trace {
        Trace { times_ms }
    }

    pub fn len(&self) -> usize {
        self.times_ms.len()
    }

    pub fn is_empty(&self) -> bool {
        self.times_ms.is_empty()
    }

    pub fn period_ms(&self) -> u64 {
        *self.times_ms.last().unwrap_or(&0)
    }

    /// Average capacity if every opportunity carried a full 1500 bytes.
    pub fn mean_mbit(&self) -> f64 {
        if self.period_ms() == 0 {
            return 0.0;
        }
        self.len() as f64 * OPPORTUNITY_BYTES as f64 * 8.0 / (self.period_ms() as f64 * 1000.0)
    }

    /// Time in ns of the k-th opportunity since the trace's start (k counts across wraps).
    #[inline]
    pub fn opportunity_ns(&self, k: u64) -> u64 {
        let n = self.times_ms.len() as u64;
        let cycle = k / n;
        let idx = (k % n) as usize;
        (self.times_ms[idx] + cycle * self.period_ms()) * 1_000_000
    }

    /// Index of the first opportunity at or after `t_ns`.
    pub fn first_at_or_after(&self, t_ns: u64) -> u64 {
        let n = self.times_ms.len() as u64;
        let period_ns = self.period_ms() * 1_000_000;
        let cycle = t_ns / period_ns;
        let within = t_ns - cycle * period_ns;
        // times are ms; an opportunity at ms m happens at m * 1e6 ns.
        let idx = self.times_ms.partition_point(|&m| m * 1_000_000 < within) as u64;
        cycle * n + idx // idx == n is the first opportunity of the next cycle: same formula
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_rejects() {
        let t = Trace::parse("1\n1\n5\n\n10\n").unwrap();
        assert_eq!(t.len(), 4);
        assert_eq!(t.period_ms(), 10);
        assert!(Trace::parse("").is_err());
        assert!(Trace::parse("0\n0\n").is_err());
        assert!(Trace::parse("5\n3\n").unwrap_err().contains("line 2"));
        assert!(Trace::parse("1\nx\n").unwrap_err().contains("line 2"));
    }

    #[test]
    fn periods_whose_nanoseconds_overflow_or_wrap_are_refused() {
        // u64::MAX / 1e6 + 1 overflows; 2^58 ms times 1e6 wraps to exactly 0 (a division by zero)
        for period in [u64::MAX / 1_000_000 + 1, 1u64 << 58, u64::MAX, MAX_TIMESTAMP_MS + 1] {
            let e = Trace::parse(&format!("1\n{period}\n")).unwrap_err();
            assert!(e.contains("line 2") && e.contains("30 days"), "{e}");
        }
        assert!(Trace::parse("18446744073709551616\n").is_err()); // beyond u64
        let t = Trace::parse(&format!("1\n{MAX_TIMESTAMP_MS}\n")).unwrap();
        assert_eq!(t.first_at_or_after(0), 0);
        assert_eq!(t.opportunity_ns(2_001), (1000 * MAX_TIMESTAMP_MS + MAX_TIMESTAMP_MS) * 1_000_000);
        // 1000 periods on
    }

    #[test]
    fn wraps_at_last_timestamp() {
        let t = Trace::from_times(vec![2, 4, 10]);
        let ms: Vec<u64> = (0..7).map(|k| t.opportunity_ns(k) / 1_000_000).collect();
        assert_eq!(ms, vec![2, 4, 10, 12, 14, 20, 22]);
    }

    #[test]
    fn finds_next_opportunity_across_wrap() {
        let t = Trace::from_times(vec![2, 4, 10]);
        assert_eq!(t.first_at_or_after(0), 0);
        assert_eq!(t.first_at_or_after(2_000_000), 0);
        assert_eq!(t.first_at_or_after(2_000_001), 1);
        assert_eq!(t.first_at_or_after(5_000_000), 2);
        assert_eq!(t.first_at_or_after(10_500_000), 3); // 12 ms
        assert_eq!(t.opportunity_ns(t.first_at_or_after(10_500_000)), 12_000_000);
    }

    #[test]
    fn mean_rate() {
        // one 1500-byte opportunity per ms = 12 Mbit/s
        let t = Trace::from_times((1..=1000).collect());
        assert!((t.mean_mbit() - 12.0).abs() < 1e-9);
    }
}
