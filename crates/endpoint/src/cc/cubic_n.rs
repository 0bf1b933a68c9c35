//! Cubic with N-connection emulation, our own because quinn's Cubic has fixed constants.
//!
//! Follows Chromium's `CubicBytes` / `TcpCubicSenderBytes` (net/third_party/quiche/src/
//! quiche/quic/core/congestion_control/cubic_bytes.cc), which is what Kakhki et al. measured:
//!
//! * Window after loss (RFC 8312 §4.5 / RFC 9438 §4.6, multiplicative decrease):
//!   `cwnd <- cwnd * beta_N`, with `beta_N = (N - 1 + 0.7) / N`. For N = 2 that is 0.85:
//!   one of the two emulated connections backs off by 0.7, the other keeps its window.
//! * Fast convergence (RFC 8312 §4.6 / RFC 9438 §4.7): if the window never got back to the
//!   previous maximum, `W_max <- cwnd * beta_last_max_N`, `beta_last_max_N = (N - 1 + 0.85) / N`
//!   (Chromium's constant 0.85 stands for RFC 8312's (1 + beta) / 2); else `W_max <- cwnd`.
//! * Cubic growth (RFC 8312 §4.1 / RFC 9438 §4.2): `W_cubic(t) = C (t - K)^3 + W_max` packets
//!   with `C = 0.4`, `K = cbrt((W_max - cwnd_epoch) / C)`, `t` = time since the epoch
//!   (first ack after a loss) plus min RTT, as Chromium does.
//! * TCP-friendly region (RFC 8312 §4.2 / RFC 9438 §4.3, Chromium's `Alpha()`): an estimated
//!   Reno window grows by `alpha_N` packets per window of acked bytes, with
//!   `alpha_N = 3 N^2 (1 - beta_N) / (1 + beta_N)`: N connections each adding `3(1-b)/(1+b)`
//!   packets per RTT, their windows each 1/N as large. The window is the larger of the two.
//! * Growth per ack is limited to half the acked bytes (Chromium), slow start adds the acked
//!   bytes while `cwnd < ssthresh`, the window never exceeds the MACW cap nor goes below
//!   2 packets, and a persistent-congestion event (quinn's RTO) sets `ssthresh = cwnd / 2`
//!   and `cwnd = 2 packets` (Chromium's `OnRetransmissionTimeout`).

use std::any::Any;
use std::time::{Duration, Instant};

use quinn::congestion::{Controller, ControllerMetrics};
use quinn_proto::RttEstimator;

pub const CUBIC_C: f64 = 0.4;
pub const BETA_CUBIC: f64 = 0.7;
pub const BETA_LAST_MAX: f64 = 0.85;
const MIN_WINDOW_PACKETS: u64 = 2;

/// Multiplicative decrease of N emulated connections: only one of them backs off.
pub fn beta(n: u32) -> f64 {
    let n = n.max(1) as f64;
    (n - 1.0 + BETA_CUBIC) / n
}

pub fn beta_last_max(n: u32) -> f64 {
    let n = n.max(1) as f64;
    (n - 1.0 + BETA_LAST_MAX) / n
}

/// Additive increase (packets per RTT) of the TCP-friendly estimate for N connections.
pub fn alpha(n: u32) -> f64 {
    let b = beta(n);
    let nf = n.max(1) as f64;
    3.0 * nf * nf * (1.0 - b) / (1.0 + b)
}

/// K in seconds: time for the cubic curve to climb from `cwnd` back to `w_max` (bytes).
pub fn cubic_k(w_max: u64, cwnd: u64, mss: u64) -> f64 {
    if w_max <= cwnd {
        return 0.0;
    }
    ((w_max - cwnd) as f64 / (CUBIC_C * mss as f64)).cbrt()
}

/// `W_cubic(t)` in bytes, `t` seconds after the epoch.
pub fn w_cubic(t: f64, k: f64, w_origin: u64, mss: u64) -> f64 {
    w_origin as f64 + CUBIC_C * (t - k).powi(3) * mss as f64
}

#[derive(Clone, Debug)]
pub struct CubicN {
    n: u32,
    mss: u64,
    cwnd: u64,
    ssthresh: u64,
    max_cwnd: u64,
    initial_window: u64,
    w_last_max: u64,
    epoch: Option<Instant>,
    k: f64,
    w_origin: u64,
    w_est_tcp: f64,
    acked_since_update: u64,
    recovery_start: Option<Instant>,
}

impl CubicN {
    pub fn new(n: u32, mss: u16, initial_window: u64, max_cwnd: u64) -> Self {
        CubicN {
            n: n.max(1),
            mss: mss as u64,
            cwnd: initial_window.min(max_cwnd),
            ssthresh: u64::MAX,
            max_cwnd,
            initial_window,
            w_last_max: 0,
            epoch: None,
            k: 0.0,
            w_origin: 0,
            w_est_tcp: 0.0,
            acked_since_update: 0,
            recovery_start: None,
        }
    }

    #[cfg(test)]
    pub fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    fn min_window(&self) -> u64 {
        MIN_WINDOW_PACKETS * self.mss
    }

    /// Congestion avoidance step: new window after `acked` bytes at `now` (Chromium's
    /// `CongestionWindowAfterAck`, in floating point instead of its fixed-point shifts).
    pub fn window_after_ack(&mut self, acked: u64, now: Instant, min_rtt: Duration) -> u64 {
        self.acked_since_update += acked;
        let epoch = *self.epoch.get_or_insert_with(|| {
            self.acked_since_update = acked;
            self.w_est_tcp = self.cwnd as f64;
            if self.w_last_max <= self.cwnd {
                self.k = 0.0;
                self.w_origin = self.cwnd;
            } else {
                self.k = cubic_k(self.w_last_max, self.cwnd, self.mss);
                self.w_origin = self.w_last_max;
            }
            now
        });
        let t = (now + min_rtt).saturating_duration_since(epoch).as_secs_f64();
        let mut target = w_cubic(t, self.k, self.w_origin, self.mss).max(0.0) as u64;
        target = target.min(self.cwnd + self.acked_since_update / 2);
        self.w_est_tcp += self.acked_since_update as f64 * alpha(self.n) * self.mss as f64 / self.w_est_tcp.max(1.0);
        self.acked_since_update = 0;
        target.max(self.w_est_tcp as u64)
    }

    /// Multiplicative decrease with fast convergence (Chromium's `CongestionWindowAfterPacketLoss`).
    pub fn window_after_loss(&mut self) -> u64 {
        if self.cwnd + self.mss < self.w_last_max {
            self.w_last_max = (beta_last_max(self.n) * self.cwnd as f64) as u64;
        } else {
            self.w_last_max = self.cwnd;
        }
        self.epoch = None;
        (self.cwnd as f64 * beta(self.n)) as u64
    }
}

impl Controller for CubicN {
    fn on_ack(&mut self, now: Instant, sent: Instant, bytes: u64, app_limited: bool, rtt: &RttEstimator) {
        self.ack(now, sent, bytes, app_limited, rtt.min());
    }

    fn on_congestion_event(&mut self, now: Instant, sent: Instant, is_persistent_congestion: bool, _lost_bytes: u64) {
        self.congestion(now, sent, is_persistent_congestion);
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        self.mtu_update(new_mtu);
    }

    fn window(&self) -> u64 {
        self.cwnd
    }

    fn metrics(&self) -> ControllerMetrics {
        let mut m = ControllerMetrics::default();
        m.congestion_window = self.cwnd;
        m.ssthresh = Some(self.ssthresh);
        m
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(self.clone())
    }

    fn initial_window(&self) -> u64 {
        self.initial_window
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

impl CubicN {
    pub fn ack(&mut self, now: Instant, sent: Instant, bytes: u64, app_limited: bool, min_rtt: Duration) {
        if self.recovery_start.is_some_and(|s| sent <= s) {
            return;
        }
        if app_limited {
            // Chromium's OnApplicationLimited: restart the cubic epoch, do not grow.
            self.epoch = None;
            return;
        }
        if self.cwnd < self.ssthresh {
            self.cwnd = (self.cwnd + bytes).min(self.max_cwnd);
        } else {
            let w = self.window_after_ack(bytes, now, min_rtt);
            self.cwnd = w.clamp(self.min_window(), self.max_cwnd);
        }
    }

    pub fn congestion(&mut self, now: Instant, sent: Instant, is_persistent_congestion: bool) {
        if is_persistent_congestion {
            self.ssthresh = (self.cwnd / 2).max(self.min_window());
            self.cwnd = self.min_window();
            self.epoch = None;
            self.w_last_max = 0;
            self.recovery_start = Some(now);
            return;
        }
        if self.recovery_start.is_some_and(|s| sent <= s) {
            return;
        }
        self.recovery_start = Some(now);
        self.cwnd = self.window_after_loss().max(self.min_window());
        self.ssthresh = self.cwnd;
    }

    pub fn mtu_update(&mut self, new_mtu: u16) {
        let old = self.mss;
        self.mss = new_mtu as u64;
        // Keep the cap in packets.
        self.max_cwnd = self.max_cwnd / old.max(1) * self.mss;
        self.cwnd = self.cwnd.max(self.min_window()).min(self.max_cwnd);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_connection_is_standard_cubic() {
        assert!((beta(1) - 0.7).abs() < 1e-9);
        assert!((beta_last_max(1) - 0.85).abs() < 1e-9);
        // RFC 8312 §4.2: alpha = 3 (1 - beta) / (1 + beta) = 0.529 for beta 0.7.
        assert!((alpha(1) - 3.0 * 0.3 / 1.7).abs() < 1e-9);
    }

    #[test]
    fn two_connections_back_off_less_and_grow_faster() {
        assert!((beta(2) - 0.85).abs() < 1e-9);
        assert!((beta_last_max(2) - 0.925).abs() < 1e-9);
        let a2 = alpha(2);
        assert!((a2 - 3.0 * 4.0 * 0.15 / 1.85).abs() < 1e-9);
        assert!(a2 > alpha(1));
    }

    #[test]
    fn cubic_curve_passes_through_w_max_at_k() {
        let mss = 1200;
        let (w_max, cwnd) = (100 * mss, 70 * mss);
        let k = cubic_k(w_max, cwnd, mss);
        // K = cbrt(30 / 0.4) s = 4.217 s
        assert!((k - 75f64.cbrt()).abs() < 1e-9);
        assert!((w_cubic(k, k, w_max, mss) - w_max as f64).abs() < 1e-6);
        assert!((w_cubic(0.0, k, w_max, mss) - cwnd as f64).abs() < 1.0);
        assert!(w_cubic(2.0 * k, k, w_max, mss) > w_max as f64);
    }

    #[test]
    fn loss_applies_beta_and_fast_convergence() {
        let mss = 1000;
        let mut c = CubicN::new(2, mss as u16, 10 * mss, 1000 * mss);
        c.cwnd = 100 * mss;
        assert_eq!(c.window_after_loss(), 85 * mss);
        assert_eq!(c.w_last_max, 100 * mss);
        c.cwnd = 85 * mss; // lost again before regaining the old max
        let w = c.window_after_loss();
        assert_eq!(c.w_last_max, (0.925 * 85_000.0) as u64);
        assert_eq!(w, (85_000.0 * 0.85) as u64);
    }

    #[test]
    fn controller_slow_start_cap_and_persistent_congestion() {
        let mss = 1000u64;
        let t0 = Instant::now();
        let mut c = CubicN::new(1, mss as u16, 10 * mss, 20 * mss);
        let rtt = Duration::from_millis(10);
        for _ in 0..30 {
            c.ack(t0 + Duration::from_millis(1), t0, mss, false, rtt);
        }
        assert_eq!(c.window(), 20 * mss, "slow start stops at the MACW cap");
        c.congestion(t0 + Duration::from_millis(20), t0 + Duration::from_millis(5), false);
        assert_eq!(c.window(), 14 * mss);
        assert_eq!(c.ssthresh(), 14 * mss);
        // Congestion avoidance grows, but never past the cap.
        for i in 0..10_000u64 {
            let now = t0 + Duration::from_millis(30 + i);
            c.ack(now, now, mss, false, rtt);
        }
        assert_eq!(c.window(), 20 * mss);
        c.congestion(t0 + Duration::from_secs(60), t0 + Duration::from_secs(59), true);
        assert_eq!(c.window(), 2 * mss);
        assert_eq!(c.ssthresh(), 10 * mss);
    }
}
