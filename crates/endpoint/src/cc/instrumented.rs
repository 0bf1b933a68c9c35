//! The instrumented controller quinn runs: `InstrumentedFactory` builds, per connection, an
//! `InstrumentedController` that wraps the real algorithm, applies the knobs, drives the
//! state machine and writes the recovery events (see the module documentation of `cc`).

use std::any::Any;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use quinn::congestion::{BbrConfig, Controller, ControllerFactory, ControllerMetrics, CubicConfig, NewRenoConfig};
use quinn_proto::RttEstimator;

use super::cubic_n;
use super::knobs::{Algorithm, CcKnobs};
use super::loss_trigger::{infer_trigger, LossTrigger, TIMER_GRANULARITY, TIME_THRESHOLD};
use super::state::{self, StateMachine, Transition, WindowView};
use crate::qlog::{opt_num, SharedQlog};

/// quinn's default max_ack_delay; a PTO can never fire sooner than srtt + this.
const MAX_ACK_DELAY: Duration = Duration::from_millis(25);
/// Sent-time -> packet-number records kept to name lost packets.
const SENT_LOG_CAP: usize = 1 << 16;

pub struct InstrumentedFactory {
    pub knobs: CcKnobs,
    pub qlog: Option<SharedQlog>,
    /// Minimum spacing of `metrics_updated` events (zero = every change).
    pub metrics_interval: Duration,
}

impl ControllerFactory for InstrumentedFactory {
    fn build(self: Arc<Self>, now: Instant, current_mtu: u16) -> Box<dyn Controller> {
        let inner = build_inner(&self.knobs, now, current_mtu);
        let ctl =
            InstrumentedController::new(inner, &self.knobs, current_mtu, self.qlog.clone(), self.metrics_interval);
        if let Some(q) = &self.qlog {
            let k = &self.knobs;
            let data = format!(
                "{{\"algorithm\":\"{}\",\"n_connections\":{},\"max_cwnd_packets\":{},\"initial_window_packets\":{},\"initial_window_bytes\":{},\"pacing_requested\":{},\"pacing_effective\":true,\"mtu\":{}}}",
                k.algorithm.name(), k.n_connections, opt_num(k.max_cwnd_packets), opt_num(k.initial_window_packets),
                ctl.inner.initial_window(), k.pacing, current_mtu
            );
            q.lock().unwrap().event(now, "longlook:congestion_control", &data);
        }
        Box::new(ctl)
    }
}

fn build_inner(k: &CcKnobs, now: Instant, mtu: u16) -> Box<dyn Controller> {
    let iw = k.initial_window_packets.map(|p| p * mtu as u64);
    match k.algorithm {
        Algorithm::Cubic if k.needs_own_cubic() => {
            let default_iw = Arc::new(CubicConfig::default()).build(now, mtu).initial_window();
            let cap = k.max_cwnd_packets.map(|p| p * mtu as u64).unwrap_or(u64::MAX);
            Box::new(cubic_n::CubicN::new(k.n_connections, mtu, iw.unwrap_or(default_iw), cap))
        }
        Algorithm::Cubic => {
            let mut c = CubicConfig::default();
            if let Some(iw) = iw {
                c.initial_window(iw);
            }
            Arc::new(c).build(now, mtu)
        }
        Algorithm::NewReno => {
            let mut c = NewRenoConfig::default();
            if let Some(iw) = iw {
                c.initial_window(iw);
            }
            Arc::new(c).build(now, mtu)
        }
        Algorithm::Bbr => {
            let mut c = BbrConfig::default();
            if let Some(iw) = iw {
                c.initial_window(iw);
            }
            Arc::new(c).build(now, mtu)
        }
    }
}

/// Packets sent by one `poll_transmit` round share a send time; we keep their number range.
#[derive(Clone, Copy, Debug)]
struct SentRange {
    time: Instant,
    first_pn: u64,
    last_pn: u64,
}

#[derive(Default, Clone, Copy, Debug)]
struct LossCounters {
    reordering: u64,
    time: u64,
    ambiguous: u64,
    persistent: u64,
    ecn: u64,
}

pub struct InstrumentedController {
    inner: Box<dyn Controller>,
    /// quinn's Cubic/NewReno have no window cap: we stop feeding them acks at the cap so
    /// their window (and thus the next loss reduction) stays at it. BBR derives its window
    /// from bandwidth samples, so it gets every ack and is only clamped.
    withhold_acks_at_cap: bool,
    cap_packets: Option<u64>,
    mtu: u64,
    sm: StateMachine,
    had_loss: bool,
    qlog: Option<SharedQlog>,
    metrics_interval: Duration,
    last_metrics: (u64, Option<u64>, u64, Duration, Duration),
    last_metrics_at: Option<Instant>,
    sent: VecDeque<SentRange>,
    prev_last_pn: Option<u64>,
    last_ack_batch: Option<Instant>,
    largest_acked: Option<u64>,
    in_flight: u64,
    last_ack_at: Option<Instant>,
    probe_flagged: bool,
    srtt: Duration,
    min_rtt: Duration,
    latest_rtt: Duration,
    conservative_rtt: Duration,
    newest_acked_sent: Option<Instant>,
    losses: LossCounters,
    /// An ack that would end TailLossProbe: (ack batch time, sent time, app_limited). Applied
    /// once we know the same ack batch did not also declare a loss (quinn runs loss
    /// detection after the acks), so that probe -> loss reads TailLossProbe -> Recovery /
    /// RetransmissionTimeout rather than passing through a momentary growth state.
    probe_exit: Option<(Instant, Instant, bool)>,
}

impl InstrumentedController {
    pub fn new(
        inner: Box<dyn Controller>,
        knobs: &CcKnobs,
        mtu: u16,
        qlog: Option<SharedQlog>,
        metrics_interval: Duration,
    ) -> Self {
        InstrumentedController {
            withhold_acks_at_cap: matches!(knobs.algorithm, Algorithm::Cubic | Algorithm::NewReno)
                && !knobs.needs_own_cubic(),
            inner,
            cap_packets: knobs.max_cwnd_packets,
            mtu: mtu as u64,
            sm: StateMachine::default(),
            had_loss: false,
            qlog,
            metrics_interval,
            last_metrics: (0, None, 0, Duration::ZERO, Duration::ZERO),
            last_metrics_at: None,
            sent: VecDeque::new(),
            prev_last_pn: None,
            last_ack_batch: None,
            largest_acked: None,
            in_flight: 0,
            last_ack_at: None,
            probe_flagged: false,
            srtt: Duration::ZERO,
            min_rtt: Duration::ZERO,
            latest_rtt: Duration::ZERO,
            conservative_rtt: Duration::ZERO,
            newest_acked_sent: None,
            losses: LossCounters::default(),
            probe_exit: None,
        }
    }

    /// Apply a deferred TailLossProbe exit unless `now` is still the same ack batch.
    fn settle_probe_exit(&mut self, now: Instant) {
        if let Some((at, sent, app_limited)) = self.probe_exit {
            if at != now {
                self.probe_exit = None;
                let v = self.view();
                let t = self.sm.on_ack(sent, app_limited, &v);
                self.log_transition(at, t);
            }
        }
    }

    fn cap_bytes(&self) -> Option<u64> {
        self.cap_packets.map(|p| p * self.mtu)
    }

    fn view(&self) -> WindowView {
        let m = self.inner.metrics();
        WindowView { cwnd: self.window(), ssthresh: m.ssthresh, cap: self.cap_bytes(), had_loss: self.had_loss }
    }

    fn log_transition(&self, now: Instant, t: Option<Transition>) {
        if let (Some(t), Some(q)) = (t, &self.qlog) {
            let data = format!(
                "{{\"old\":\"{}\",\"new\":\"{}\",\"trigger\":\"{}\",\"congestion_window\":{},\"ssthresh\":{},\"bytes_in_flight\":{},\"smoothed_rtt\":{:.3}}}",
                t.old.name(), t.new.name(), t.trigger, self.window(), opt_num(self.inner.metrics().ssthresh.filter(|s| *s != u64::MAX)),
                self.in_flight, self.srtt.as_secs_f64() * 1000.0
            );
            q.lock().unwrap().event(now, "recovery:congestion_state_updated", &data);
        }
    }

    /// One ACK frame that acknowledged new packets (quinn calls `on_end_acks` once per such
    /// frame, while it processes the packet whose `transport:packet_received` it has just
    /// logged). qlog's `frames_processed` is the schema's event for frames logged apart from
    /// their packet; quinn 0.11 logs packets without frames, so the ACK-frequency and
    /// fingerprint readers take ACKs from here. ACKs that acknowledge nothing new are not seen.
    fn log_ack_frame(&self, now: Instant, largest: Option<u64>) {
        if let Some(q) = &self.qlog {
            let data =
                format!("{{\"frames\":[{{\"frame_type\":\"ack\",\"largest_acknowledged\":{}}}]}}", opt_num(largest));
            q.lock().unwrap().event(now, "transport:frames_processed", &data);
        }
    }

    fn log_metrics(&mut self, now: Instant, force: bool) {
        let Some(q) = &self.qlog else { return };
        let ssthresh = self.inner.metrics().ssthresh.filter(|s| *s != u64::MAX);
        let m = (self.window(), ssthresh, self.in_flight, self.srtt, self.latest_rtt);
        if m == self.last_metrics {
            return;
        }
        if !force && self.last_metrics_at.is_some_and(|t| now.saturating_duration_since(t) < self.metrics_interval) {
            return;
        }
        self.last_metrics = m;
        self.last_metrics_at = Some(now);
        let data = format!(
            "{{\"congestion_window\":{},\"ssthresh\":{},\"bytes_in_flight\":{},\"smoothed_rtt\":{:.3},\"latest_rtt\":{:.3},\"min_rtt\":{:.3}}}",
            m.0, opt_num(m.1), m.2, m.3.as_secs_f64() * 1000.0, m.4.as_secs_f64() * 1000.0, self.min_rtt.as_secs_f64() * 1000.0
        );
        q.lock().unwrap().event(now, "recovery:metrics_updated", &data);
    }

    fn lost_range(&self, sent: Instant) -> Option<(u64, u64)> {
        let i = self.sent.partition_point(|r| r.time < sent);
        self.sent.get(i).filter(|r| r.time == sent).map(|r| (r.first_pn, r.last_pn))
    }
}

impl Controller for InstrumentedController {
    fn on_sent(&mut self, now: Instant, bytes: u64, last_packet_number: u64) {
        self.inner.on_sent(now, bytes, last_packet_number);
        self.settle_probe_exit(now);
        let first = self.prev_last_pn.map_or(last_packet_number, |p| (p + 1).min(last_packet_number));
        self.prev_last_pn = Some(last_packet_number);
        match self.sent.back_mut() {
            Some(r) if r.time == now => r.last_pn = last_packet_number,
            _ => {
                if self.sent.len() == SENT_LOG_CAP {
                    self.sent.pop_front();
                }
                self.sent.push_back(SentRange { time: now, first_pn: first, last_pn: last_packet_number });
            }
        }
        // A send after at least srtt + max_ack_delay without any ack, with data in flight,
        // can only be a PTO probe (quinn's tail loss probe): nothing else opens the window.
        if !self.probe_flagged && self.in_flight > 0 {
            if let Some(last) = self.last_ack_at {
                if now.saturating_duration_since(last) >= self.srtt + MAX_ACK_DELAY {
                    self.probe_flagged = true;
                    let t = self.sm.on_probe();
                    self.log_transition(now, t);
                }
            }
        }
        self.in_flight += bytes;
    }

    fn on_ack(&mut self, now: Instant, sent: Instant, bytes: u64, app_limited: bool, rtt: &RttEstimator) {
        self.srtt = rtt.get();
        self.min_rtt = rtt.min();
        self.conservative_rtt = rtt.conservative();
        if self.newest_acked_sent.is_none_or(|s| sent >= s) {
            self.newest_acked_sent = Some(sent);
            self.latest_rtt = now.saturating_duration_since(sent);
        }
        let at_cap = self.cap_bytes().is_some_and(|c| self.inner.window() >= c);
        if !(self.withhold_acks_at_cap && at_cap) {
            self.inner.on_ack(now, sent, bytes, app_limited, rtt);
        }
        self.in_flight = self.in_flight.saturating_sub(bytes);
        self.last_ack_at = Some(now);
        self.probe_flagged = false;
        self.settle_probe_exit(now);
        if self.sm.state() == state::CongestionState::TailLossProbe {
            self.probe_exit = Some((now, sent, app_limited));
            return;
        }
        let v = self.view();
        let t = self.sm.on_ack(sent, app_limited, &v);
        self.log_transition(now, t);
    }

    fn on_end_acks(&mut self, now: Instant, in_flight: u64, app_limited: bool, largest_packet_num_acked: Option<u64>) {
        self.inner.on_end_acks(now, in_flight, app_limited, largest_packet_num_acked);
        self.log_ack_frame(now, largest_packet_num_acked);
        self.in_flight = in_flight;
        self.largest_acked = largest_packet_num_acked;
        self.last_ack_batch = Some(now);
        if let Some(la) = largest_packet_num_acked {
            // Packets well below the largest acked cannot be declared lost any more.
            while self.sent.len() > 1 && self.sent.front().is_some_and(|r| r.last_pn + 4096 < la) {
                self.sent.pop_front();
            }
        }
        // Re-check the growth state once per ack batch (the window may also move without a
        // per-packet ack reaching the state machine, e.g. through the MTU-scaled cap).
        let v = self.view();
        let t = self.sm.on_window_change(&v);
        self.log_transition(now, t);
        self.log_metrics(now, false);
    }

    fn on_congestion_event(&mut self, now: Instant, sent: Instant, is_persistent_congestion: bool, lost_bytes: u64) {
        self.inner.on_congestion_event(now, sent, is_persistent_congestion, lost_bytes);
        self.settle_probe_exit(now);
        // The probe's ack batch also declared a loss: go straight from TailLossProbe.
        self.probe_exit = None;
        self.had_loss = true;
        self.in_flight = self.in_flight.saturating_sub(lost_bytes);
        if lost_bytes == 0 {
            self.losses.ecn += 1; // quinn reports ECN-CE with zero lost bytes
            if let Some(q) = &self.qlog {
                // the signal itself, apart from a loss: what the window did after it is read
                // from the metrics that follow (qlog/ce_reaction.py)
                let mut q = q.lock().unwrap();
                let data = format!("{{\"largest_marked_sent_time\":{:.3}}}", q.rel_ms(sent));
                q.event(now, "longlook:ecn_ce", &data);
            }
        } else {
            let range = self.lost_range(sent);
            let loss_delay = self.conservative_rtt.mul_f64(TIME_THRESHOLD).max(TIMER_GRANULARITY);
            let old_enough = now.saturating_duration_since(sent) >= loss_delay;
            let trigger = infer_trigger(self.last_ack_batch == Some(now), self.largest_acked, range, old_enough);
            match trigger {
                LossTrigger::ReorderingThreshold => self.losses.reordering += 1,
                LossTrigger::TimeThreshold => self.losses.time += 1,
                LossTrigger::Ambiguous => self.losses.ambiguous += 1,
            }
            if is_persistent_congestion {
                self.losses.persistent += 1;
            }
            if let Some(q) = &self.qlog {
                let mut q = q.lock().unwrap();
                let data = format!(
                    "{{\"trigger\":\"{}\",\"trigger_certain\":{},\"lost_bytes\":{},\"lost_packets_estimate\":{},\"largest_lost_sent_time\":{:.3},\"largest_lost_packet_number_range\":{},\"persistent_congestion\":{},\"batch\":true}}",
                    match trigger { LossTrigger::TimeThreshold => "time_threshold", _ => "reordering_threshold" },
                    trigger != LossTrigger::Ambiguous,
                    lost_bytes,
                    lost_bytes.div_ceil(self.mtu.max(1)),
                    q.rel_ms(sent),
                    range.map(|(a, b)| format!("[{a},{b}]")).unwrap_or_else(|| "null".into()),
                    is_persistent_congestion,
                );
                q.event(now, "recovery:packet_lost", &data);
            }
        }
        let t = self.sm.on_congestion(now, sent, is_persistent_congestion);
        self.log_transition(now, t);
        self.log_metrics(now, true);
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        self.inner.on_mtu_update(new_mtu);
        self.mtu = new_mtu as u64;
        let v = self.view();
        let t = self.sm.on_window_change(&v);
        self.log_transition(Instant::now(), t);
    }

    fn window(&self) -> u64 {
        match self.cap_bytes() {
            Some(c) => self.inner.window().min(c),
            None => self.inner.window(),
        }
    }

    fn metrics(&self) -> ControllerMetrics {
        let mut m = self.inner.metrics();
        m.congestion_window = self.window();
        m
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(InstrumentedController {
            inner: self.inner.clone_box(),
            withhold_acks_at_cap: self.withhold_acks_at_cap,
            cap_packets: self.cap_packets,
            mtu: self.mtu,
            sm: self.sm.clone(),
            had_loss: self.had_loss,
            qlog: self.qlog.clone(),
            metrics_interval: self.metrics_interval,
            last_metrics: self.last_metrics,
            last_metrics_at: self.last_metrics_at,
            sent: VecDeque::new(),
            prev_last_pn: self.prev_last_pn,
            last_ack_batch: None,
            largest_acked: self.largest_acked,
            in_flight: self.in_flight,
            last_ack_at: self.last_ack_at,
            probe_flagged: self.probe_flagged,
            srtt: self.srtt,
            min_rtt: self.min_rtt,
            latest_rtt: self.latest_rtt,
            conservative_rtt: self.conservative_rtt,
            newest_acked_sent: self.newest_acked_sent,
            losses: LossCounters::default(),
            probe_exit: self.probe_exit,
        })
    }

    fn initial_window(&self) -> u64 {
        self.inner.initial_window()
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

impl Drop for InstrumentedController {
    fn drop(&mut self) {
        if let Some(q) = &self.qlog {
            let l = self.losses;
            // quinn 0.11's Controller trait has no spurious-loss callback and acks of packets
            // already declared lost never reach the controller, so spurious losses are unknown.
            let data = format!(
                "{{\"loss_events_reordering_threshold\":{},\"loss_events_time_threshold\":{},\"loss_events_ambiguous\":{},\"persistent_congestion_events\":{},\"ecn_ce_events\":{},\"spurious_losses\":null,\"final_state\":\"{}\"}}",
                l.reordering, l.time, l.ambiguous, l.persistent, l.ecn, self.sm.state().name()
            );
            if let Ok(mut q) = q.lock() {
                q.event(Instant::now(), "longlook:loss_summary", &data);
                q.flush();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn knobs(cap: Option<u64>) -> CcKnobs {
        CcKnobs { max_cwnd_packets: cap, ..CcKnobs::default() }
    }

    #[test]
    fn wrapper_caps_window_and_logs_transitions() {
        let t0 = Instant::now();
        let path = std::env::temp_dir().join(format!("ll-cc-test-{}.sqlog", std::process::id()));
        let q = crate::qlog::QlogWriter::create(&path, "t", "QUIC", crate::qlog::VantagePoint::Server, t0).unwrap();
        let q = Arc::new(std::sync::Mutex::new(q));
        let k = knobs(Some(20));
        let f = Arc::new(InstrumentedFactory { knobs: k, qlog: Some(q.clone()), metrics_interval: Duration::ZERO });
        let mut c = f.clone().build(t0, 1200);
        for pn in 0..40u64 {
            c.on_sent(t0 + Duration::from_micros(pn), 1200, pn);
        }
        // Ack everything (quinn's RttEstimator cannot be built outside quinn, so drive the
        // inner controller through end-of-ack batches and congestion events only).
        c.on_end_acks(t0 + Duration::from_millis(1), 0, false, Some(39));
        assert!(c.window() <= 20 * 1200);
        // Time-threshold loss from the timer (different `now` from the last ack batch).
        c.on_congestion_event(t0 + Duration::from_millis(5), t0 + Duration::from_micros(38), false, 1200);
        drop(c);
        drop(f);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).ok();
        assert!(text.contains("\"name\":\"recovery:packet_lost\""));
        assert!(text.contains("\"trigger\":\"time_threshold\""));
        assert!(text.contains("\"new\":\"Recovery\""));
        assert!(text.contains("longlook:loss_summary"));
        assert!(text.contains("\"old\":\"Init\""));
        // the ack batch's ACK frame, as qlog's frames_processed
        assert!(text.contains("\"name\":\"transport:frames_processed\",\"data\":{\"frames\":[{\"frame_type\":\"ack\",\"largest_acknowledged\":39}]}"));
    }
}
