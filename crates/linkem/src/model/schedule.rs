//! When a direction's middlebox acts: a window [active_from_s, active_until_s) on linkem's
//! clock (seconds since start), optionally periodic within it (on for `on_s`, then off for
//! `off_s`, starting "on" at `active_from_s`). The flow choice (`flow_probability`) lives in
//! `middlebox`, which owns the RNG stream.

use crate::config::MiddleboxSpec;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Schedule {
    from_ns: u64,
    until_ns: Option<u64>,
    on_ns: u64,
    period_ns: u64,
}

fn ns(s: f64) -> u64 {
    (s * 1e9).round() as u64
}

impl Schedule {
    pub fn new(spec: &MiddleboxSpec) -> Self {
        Schedule {
            from_ns: ns(spec.active_from_s),
            until_ns: spec.active_until_s.map(ns),
            on_ns: ns(spec.on_s),
            period_ns: ns(spec.on_s) + ns(spec.off_s),
        }
    }

    /// Whether the rules act on a packet arriving at `now_ns`.
    #[inline]
    pub fn active(&self, now_ns: u64) -> bool {
        if now_ns < self.from_ns || self.until_ns.is_some_and(|u| now_ns >= u) {
            return false;
        }
        self.period_ns == 0 || (now_ns - self.from_ns) % self.period_ns < self.on_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn default_is_always_active() {
        let s = Schedule::new(&MiddleboxSpec::default());
        assert!(s.active(0) && s.active(1_000 * S));
    }

    #[test]
    fn window_and_period() {
        let spec = MiddleboxSpec {
            active_from_s: 2.0,
            active_until_s: Some(10.0),
            on_s: 1.0,
            off_s: 2.0,
            ..Default::default()
        };
        let s = Schedule::new(&spec);
        let at = |t: f64| s.active((t * S as f64) as u64);
        assert!(!at(1.999));
        assert!(at(2.0) && at(2.999));
        assert!(!at(3.0) && !at(4.999));
        assert!(at(5.0) && at(5.5));
        assert!(at(8.0) && !at(9.5) && !at(10.0) && !at(11.0));
    }
}
