//! Propagation delay with optional jitter.
//!
//! release = departure + delay + jitter, where jitter is uniform in [-j, +j] or normal with
//! sd j. Jitter never reorders: a release is never earlier than the previous release of the
//! same direction (release = max(previous release, computed)), nor earlier than the packet's
//! own departure from the bottleneck. Consequence worth knowing: when packets are closer
//! together than the jitter spread, the clamp makes their delays correlated and raises the
//! mean (the release follows the running maximum); sparse probes see the plain distribution.

use crate::config::JitterDistribution;
use crate::rng::Rng;

#[derive(Debug, Clone)]
pub struct DelayLine {
    delay_ns: u64,
    jitter_ns: f64,
    distribution: JitterDistribution,
    last_release_ns: u64,
}

impl DelayLine {
    pub fn new(delay_ms: f64, jitter_ms: f64, distribution: JitterDistribution) -> Self {
        DelayLine {
            delay_ns: (delay_ms * 1e6).round() as u64,
            jitter_ns: jitter_ms * 1e6,
            distribution,
            last_release_ns: 0,
        }
    }

    pub fn delay_ns(&self) -> u64 {
        self.delay_ns
    }

    /// Scheduled release time of a packet that left the bottleneck at `departure_ns`.
    #[inline]
    pub fn release(&mut self, departure_ns: u64, rng: &mut Rng) -> u64 {
        let base = departure_ns + self.delay_ns;
        let t = if self.jitter_ns > 0.0 {
            let j = match self.distribution {
                JitterDistribution::Uniform => (rng.unit() * 2.0 - 1.0) * self.jitter_ns,
                JitterDistribution::Normal => rng.standard_normal() * self.jitter_ns,
            };
            ((base as f64 + j).round() as u64).max(departure_ns)
        } else {
            base
        };
        let t = t.max(self.last_release_ns);
        self.last_release_ns = t;
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_jitter_is_exact() {
        let mut d = DelayLine::new(20.0, 0.0, JitterDistribution::Uniform);
        let mut rng = Rng::new(1);
        assert_eq!(d.release(1_000, &mut rng), 20_001_000);
    }

    #[test]
    fn jitter_never_reorders() {
        for dist in [JitterDistribution::Uniform, JitterDistribution::Normal] {
            let mut d = DelayLine::new(10.0, 5.0, dist);
            let mut rng = Rng::new(3);
            let mut prev = 0;
            for i in 0..100_000u64 {
                let dep = i * 50_000; // 50 us apart, much less than the jitter
                let r = d.release(dep, &mut rng);
                assert!(r >= prev, "reordered at {i}");
                assert!(r >= dep);
                prev = r;
            }
        }
    }

    #[test]
    fn sparse_jitter_has_configured_spread() {
        let mut d = DelayLine::new(20.0, 2.0, JitterDistribution::Uniform);
        let mut rng = Rng::new(9);
        let n = 20_000u64;
        let xs: Vec<f64> = (0..n)
            .map(|i| {
                let dep = i * 100_000_000; // 100 ms apart: the clamp never binds
                (d.release(dep, &mut rng) - dep) as f64 / 1e6
            })
            .collect();
        let m = xs.iter().sum::<f64>() / n as f64;
        let sd = (xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n as f64).sqrt();
        assert!((m - 20.0).abs() < 0.05, "{m}");
        assert!((sd - 2.0 / 3f64.sqrt()).abs() < 0.03, "{sd}");
    }
}
