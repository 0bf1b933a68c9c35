//! The congestion state machine of Kakhki et al. (IMC'17, Table 3), driven by the events a
//! quinn `Controller` sees. Pure logic: no clock, no I/O, so it can be tested with synthetic
//! events. Exactly when each state is entered is documented in the crate README.

use std::time::Instant;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CongestionState {
    Init,
    SlowStart,
    CongestionAvoidance,
    CongestionAvoidanceMaxed,
    ApplicationLimited,
    Recovery,
    RetransmissionTimeout,
    TailLossProbe,
}

impl CongestionState {
    pub fn name(self) -> &'static str {
        match self {
            CongestionState::Init => "Init",
            CongestionState::SlowStart => "SlowStart",
            CongestionState::CongestionAvoidance => "CongestionAvoidance",
            CongestionState::CongestionAvoidanceMaxed => "CongestionAvoidanceMaxed",
            CongestionState::ApplicationLimited => "ApplicationLimited",
            CongestionState::Recovery => "Recovery",
            CongestionState::RetransmissionTimeout => "RetransmissionTimeout",
            CongestionState::TailLossProbe => "TailLossProbe",
        }
    }
}

/// Window figures the growth states are decided from (bytes).
#[derive(Clone, Copy, Debug)]
pub struct WindowView {
    pub cwnd: u64,
    /// `None` when the algorithm has no slow-start threshold (BBR).
    pub ssthresh: Option<u64>,
    /// The MACW cap in bytes, if one is set.
    pub cap: Option<u64>,
    /// Whether the algorithm has seen a congestion event (used when there is no ssthresh).
    pub had_loss: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transition {
    pub old: CongestionState,
    pub new: CongestionState,
    /// Short machine-readable cause, logged as `trigger`.
    pub trigger: &'static str,
}

#[derive(Clone, Debug)]
pub struct StateMachine {
    state: CongestionState,
    /// Start of the current Recovery / RetransmissionTimeout episode: it ends with the ack of
    /// a packet sent after this instant (as in RFC 9002 §7.3.2 and quinn's own controllers).
    recovery_start: Option<Instant>,
}

impl Default for StateMachine {
    fn default() -> Self {
        StateMachine { state: CongestionState::Init, recovery_start: None }
    }
}

impl StateMachine {
    pub fn state(&self) -> CongestionState {
        self.state
    }

    pub fn in_recovery(&self) -> bool {
        matches!(self.state, CongestionState::Recovery | CongestionState::RetransmissionTimeout)
    }

    fn go(&mut self, new: CongestionState, trigger: &'static str) -> Option<Transition> {
        if new == self.state {
            return None;
        }
        let t = Transition { old: self.state, new, trigger };
        self.state = new;
        Some(t)
    }

    /// The growth state implied by the window when nothing else (loss, app limit) applies.
    pub fn growth_state(w: &WindowView) -> CongestionState {
        if let Some(cap) = w.cap {
            if w.cwnd >= cap {
                return CongestionState::CongestionAvoidanceMaxed;
            }
        }
        match w.ssthresh {
            Some(ss) if w.cwnd < ss => CongestionState::SlowStart,
            Some(_) => CongestionState::CongestionAvoidance,
            // No ssthresh (BBR): slow start until the first congestion event.
            None if !w.had_loss => CongestionState::SlowStart,
            None => CongestionState::CongestionAvoidance,
        }
    }

    /// One acked packet, sent at `sent`. quinn's `app_limited` says the sender had run out
    /// of application data before this ack.
    pub fn on_ack(&mut self, sent: Instant, app_limited: bool, w: &WindowView) -> Option<Transition> {
        if self.in_recovery() {
            match self.recovery_start {
                Some(start) if sent > start => self.recovery_start = None,
                _ => return None, // still acking packets from before the loss
            }
        }
        let trigger = match self.state {
            CongestionState::Recovery => "recovery_ended",
            CongestionState::RetransmissionTimeout => "rto_recovered",
            CongestionState::TailLossProbe => "probe_acked",
            _ => "ack",
        };
        if app_limited {
            return self.go(CongestionState::ApplicationLimited, "app_limited");
        }
        self.go(Self::growth_state(w), trigger)
    }

    /// quinn's `on_congestion_event`: loss (or ECN-CE) of packets, the largest sent at `sent`.
    pub fn on_congestion(&mut self, now: Instant, sent: Instant, persistent: bool) -> Option<Transition> {
        if persistent {
            // Persistent congestion (RFC 9002 §7.6): quinn's equivalent of a retransmission
            // timeout; it restarts even an ongoing recovery.
            self.recovery_start = Some(now);
            return self.go(CongestionState::RetransmissionTimeout, "persistent_congestion");
        }
        if self.in_recovery() && self.recovery_start.is_some_and(|s| sent <= s) {
            return None; // same loss episode: no second reduction, no new state
        }
        self.recovery_start = Some(now);
        let from_probe = self.state == CongestionState::TailLossProbe;
        self.go(CongestionState::Recovery, if from_probe { "loss_after_probe" } else { "loss" })
    }

    /// A packet sent by a probe timeout (inferred by the wrapper, see cc/mod.rs).
    pub fn on_probe(&mut self) -> Option<Transition> {
        if self.state == CongestionState::Init || self.in_recovery() {
            return None;
        }
        self.go(CongestionState::TailLossProbe, "pto_probe")
    }

    /// Window changed without an ack (e.g. MTU update): re-evaluate growth states only.
    pub fn on_window_change(&mut self, w: &WindowView) -> Option<Transition> {
        match self.state {
            CongestionState::SlowStart
            | CongestionState::CongestionAvoidance
            | CongestionState::CongestionAvoidanceMaxed => self.go(Self::growth_state(w), "window_changed"),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use CongestionState::*;

    fn view(cwnd: u64, ssthresh: Option<u64>, cap: Option<u64>) -> WindowView {
        WindowView { cwnd, ssthresh, cap, had_loss: false }
    }

    #[test]
    fn init_then_slow_start_then_avoidance_then_maxed() {
        let t0 = Instant::now();
        let mut sm = StateMachine::default();
        assert_eq!(sm.state(), Init);
        let tr = sm.on_ack(t0, false, &view(12_000, Some(u64::MAX), Some(100_000))).unwrap();
        assert_eq!((tr.old, tr.new), (Init, SlowStart));
        assert!(sm.on_ack(t0, false, &view(20_000, Some(u64::MAX), Some(100_000))).is_none());
        assert_eq!(sm.on_ack(t0, false, &view(50_000, Some(40_000), Some(100_000))).unwrap().new, CongestionAvoidance);
        assert_eq!(
            sm.on_ack(t0, false, &view(100_000, Some(40_000), Some(100_000))).unwrap().new,
            CongestionAvoidanceMaxed
        );
    }

    #[test]
    fn recovery_lasts_until_a_packet_sent_after_its_start_is_acked() {
        let t0 = Instant::now();
        let t = |ms| t0 + Duration::from_millis(ms);
        let mut sm = StateMachine::default();
        sm.on_ack(t(0), false, &view(12_000, Some(u64::MAX), None));
        let tr = sm.on_congestion(t(100), t(50), false).unwrap();
        assert_eq!((tr.old, tr.new, tr.trigger), (SlowStart, Recovery, "loss"));
        // A second loss of a packet sent before recovery began: same episode.
        assert!(sm.on_congestion(t(110), t(90), false).is_none());
        // Acks of packets sent before t=100 keep us in Recovery.
        assert!(sm.on_ack(t(95), false, &view(8_400, Some(8_400), None)).is_none());
        assert_eq!(sm.state(), Recovery);
        let tr = sm.on_ack(t(101), false, &view(8_400, Some(8_400), None)).unwrap();
        assert_eq!((tr.new, tr.trigger), (CongestionAvoidance, "recovery_ended"));
        // A loss of a packet sent after the old episode starts a new one.
        assert_eq!(sm.on_congestion(t(200), t(150), false).unwrap().new, Recovery);
    }

    #[test]
    fn persistent_congestion_is_retransmission_timeout() {
        let t0 = Instant::now();
        let t = |ms| t0 + Duration::from_millis(ms);
        let mut sm = StateMachine::default();
        sm.on_ack(t(0), false, &view(12_000, Some(u64::MAX), None));
        sm.on_congestion(t(10), t(5), false);
        let tr = sm.on_congestion(t(500), t(8), true).unwrap();
        assert_eq!((tr.old, tr.new), (Recovery, RetransmissionTimeout));
        assert!(sm.on_ack(t(400), false, &view(2_400, Some(6_000), None)).is_none());
        assert_eq!(sm.on_ack(t(501), false, &view(2_400, Some(6_000), None)).unwrap().new, SlowStart);
    }

    #[test]
    fn app_limited_and_tail_loss_probe() {
        let t0 = Instant::now();
        let mut sm = StateMachine::default();
        assert!(sm.on_probe().is_none(), "no probe state before the first ack");
        sm.on_ack(t0, false, &view(12_000, Some(u64::MAX), None));
        assert_eq!(sm.on_ack(t0, true, &view(12_000, Some(u64::MAX), None)).unwrap().new, ApplicationLimited);
        assert_eq!(sm.on_ack(t0, false, &view(12_000, Some(u64::MAX), None)).unwrap().new, SlowStart);
        assert_eq!(sm.on_probe().unwrap().new, TailLossProbe);
        let tr = sm.on_ack(t0, false, &view(12_000, Some(u64::MAX), None)).unwrap();
        assert_eq!((tr.new, tr.trigger), (SlowStart, "probe_acked"));
        sm.on_probe();
        let tr = sm.on_congestion(t0 + Duration::from_millis(1), t0, false).unwrap();
        assert_eq!((tr.old, tr.new, tr.trigger), (TailLossProbe, Recovery, "loss_after_probe"));
    }

    #[test]
    fn bbr_without_ssthresh() {
        let w = WindowView { cwnd: 50_000, ssthresh: None, cap: None, had_loss: false };
        assert_eq!(StateMachine::growth_state(&w), SlowStart);
        let w = WindowView { had_loss: true, ..w };
        assert_eq!(StateMachine::growth_state(&w), CongestionAvoidance);
    }
}
