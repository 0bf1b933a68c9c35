//! Why quinn declared a batch of packets lost: the qlog `packet_lost.trigger` inferred from
//! what quinn tells a congestion controller (see `infer_trigger`).

use std::time::Duration;

/// quinn's default packet reordering threshold (RFC 9002 kPacketThreshold); we never change it.
const PACKET_THRESHOLD: u64 = 3;
/// quinn's `time_threshold` (RFC 9002 kTimeThreshold), default 9/8.
pub const TIME_THRESHOLD: f64 = 9.0 / 8.0;
/// quinn's TIMER_GRANULARITY.
pub const TIMER_GRANULARITY: Duration = Duration::from_millis(1);

/// Why a batch of packets was declared lost (qlog `packet_lost.trigger`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossTrigger {
    ReorderingThreshold,
    TimeThreshold,
    /// Declared on an ack, the packet-number range of the lost packet straddles the packet
    /// threshold and the packet was also old enough for the time threshold: either rule
    /// could have fired (reported as reordering, flagged uncertain).
    Ambiguous,
}

/// Infer the loss trigger. quinn calls `on_congestion_event` from `detect_lost_packets`, which
/// runs either right after an ACK (in the same call as `on_end_acks`, so with the same `now`)
/// or from the loss-detection timer (a different `now`). Timer losses are time-threshold
/// losses by construction (RFC 9002 §6.1.2). On an ACK, the largest lost packet `L` was lost
/// by packet threshold iff `largest_acked >= L + 3`, otherwise by time threshold. Since
/// quinn hands us only the send time of `L`, `L` is known to lie in the range of packet
/// numbers sent at that instant; when the range straddles the threshold, the time rule
/// decides: a packet younger than quinn's loss delay (9/8 x max(srtt, latest rtt)) cannot have
/// been lost by time, so it was the packet threshold. quinn never declares loss on PTO (it
/// sends probes), so `pto_expired` does not occur; persistent congestion is flagged apart.
pub fn infer_trigger(
    due_to_ack: bool,
    largest_acked: Option<u64>,
    lost: Option<(u64, u64)>,
    old_enough_for_time: bool,
) -> LossTrigger {
    if !due_to_ack {
        return LossTrigger::TimeThreshold;
    }
    match (largest_acked, lost) {
        (Some(la), Some((first, last))) => {
            if la >= last + PACKET_THRESHOLD {
                LossTrigger::ReorderingThreshold
            } else if la < first + PACKET_THRESHOLD {
                LossTrigger::TimeThreshold
            } else if !old_enough_for_time {
                LossTrigger::ReorderingThreshold
            } else {
                LossTrigger::Ambiguous
            }
        }
        (Some(_), None) if !old_enough_for_time => LossTrigger::ReorderingThreshold,
        _ => LossTrigger::Ambiguous,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trigger_inference() {
        // Loss-detection timer: always time threshold.
        assert_eq!(infer_trigger(false, Some(100), Some((10, 12)), false), LossTrigger::TimeThreshold);
        // On an ack, 3 or more later packets acked for every candidate: packet threshold.
        assert_eq!(infer_trigger(true, Some(15), Some((10, 12)), true), LossTrigger::ReorderingThreshold);
        // Fewer than 3 later packets acked for every candidate: time threshold.
        assert_eq!(infer_trigger(true, Some(11), Some((10, 10)), true), LossTrigger::TimeThreshold);
        // Straddling range: a packet too young for the time rule was lost by packet threshold.
        assert_eq!(infer_trigger(true, Some(14), Some((10, 12)), false), LossTrigger::ReorderingThreshold);
        assert_eq!(infer_trigger(true, Some(14), Some((10, 12)), true), LossTrigger::Ambiguous);
        assert_eq!(infer_trigger(true, Some(14), None, true), LossTrigger::Ambiguous);
    }
}
