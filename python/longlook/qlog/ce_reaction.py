"""How a QUIC sender's congestion window answered the congestion signals it met, from its own
qlog (normalised to longlook's vocabulary, qlog.dialects): a CE mark its peer reported (the
ECN-CE count of an ACK frame going up, RFC 9000 §13.4.1) or a packet it declared lost
(`recovery:packet_lost`); our endpoint, whose qlog has no ACK ECN counts, logs the CE signal
quinn hands its controller (`longlook:ecn_ce`). RFC 9002 §7.3.2 treats both alike: one reduction of the window per
round trip (a recovery period), by the controller's factor (NewReno's kLossReductionFactor
0.5, Cubic's beta 0.7, RFC 9438; RFC 8511 suggests a milder one for ECN).

A signal's reaction is the first window logged after it that is below the window at the
signal, within two smoothed RTTs (else: none). A CE signal with a loss declared before its
reaction is left out (which signal moved the window cannot be told), and a loss with a CE
increase likewise. A reduction less than one smoothed RTT after the previous one is counted
apart: a second reduction in one round trip, which RFC 9002 rules out."""

from __future__ import annotations

from dataclasses import dataclass, field

from .reader import QlogFile

_RECEIVED = "transport:packet_received"
_LOST = "recovery:packet_lost"
_METRICS = "recovery:metrics_updated"
_OUR_CE = "longlook:ecn_ce"


@dataclass
class Reaction:
    """One kind of signal's reactions over a connection."""

    signals: int = 0  # signals met (CE count increases, or loss episodes)
    reduced: int = 0  # followed by a reduction within two smoothed RTTs
    factors: list[float] = field(default_factory=list)  # new window / window at the signal
    again_within_rtt: int = 0  # reductions less than one smoothed RTT after the previous


@dataclass
class Reactions:
    ce: Reaction
    loss: Reaction
    ce_reported: bool  # the log carries ACK ECN counts at all


def _ce_count(event: dict) -> int | None:
    frames = (event.get("data") or {}).get("frames") or []
    counts = [f["ce"] for f in frames if f.get("frame_type") == "ack" and isinstance(f.get("ce"), int)]
    return max(counts) if counts else None


# A stack may log the cut before the ACK that caused it (quic-go logs the packet's frames
# after processing them): a cut this close before a signal, not yet credited, is its reaction.
SAME_BATCH_MS = 1.0


def reactions(log: QlogFile) -> Reactions:
    ce, loss = Reaction(), Reaction()
    ce_max, reported = 0, False
    cwnd: int | None = None
    srtt = 0.0
    pending: tuple[str, float, int, bool] | None = None  # kind, time, window at it, mixed
    last: tuple[Reaction | None, float] | None = None  # the last cut: whose (None: not yet known), when
    uncredited: tuple[float, int, int] | None = None  # a cut no signal has claimed: when, from, to

    def in_recovery(t: float) -> bool:
        # within a round trip of the last cut: the same congestion event (RFC 9002 §7.3.2)
        return last is not None and srtt > 0 and t - last[1] < srtt

    def credit(r: Reaction, before: int, after: int, t: float) -> None:
        nonlocal last
        r.reduced += 1
        r.factors.append(round(after / before, 4))
        last = (r, t)

    def signal(kind: str, t: float) -> None:
        nonlocal pending, uncredited
        r = ce if kind == "ce" else loss
        if uncredited is not None and 0 <= t - uncredited[0] <= SAME_BATCH_MS:
            r.signals += 1
            credit(r, uncredited[1], uncredited[2], uncredited[0])
            uncredited = None
            return
        if pending is None and cwnd is not None and not in_recovery(t):
            r.signals += 1
            pending = (kind, t, cwnd, False)
        elif pending is not None and pending[0] != kind:
            pending = (*pending[:3], True)

    for e in log.events:
        name, t = e.get("name"), e.get("time")
        if not isinstance(t, (int, float)):
            continue
        t = float(t)
        if name == _RECEIVED:
            count = _ce_count(e)
            if count is None:
                continue
            reported = True
            if count > ce_max:
                ce_max = count
                signal("ce", t)
        elif name == _OUR_CE:
            reported = True
            signal("ce", t)
        elif name == _LOST:
            signal("loss", t)
        elif name == _METRICS:
            data = e.get("data") or {}
            if isinstance(data.get("smoothed_rtt"), (int, float)):
                srtt = float(data["smoothed_rtt"])
            w = data.get("congestion_window")
            if not isinstance(w, int):
                continue
            if pending is not None:
                kind, at, before, mixed = pending
                if w < before:
                    r = ce if kind == "ce" else loss
                    if mixed:
                        last = (r, t)
                    else:
                        credit(r, before, w, t)
                    pending = None
                elif srtt and t - at > 2 * srtt:
                    pending = None
            elif cwnd is not None and w < cwnd:
                if in_recovery(t) and last is not None and last[0] is not None:
                    last[0].again_within_rtt += 1  # a second cut in the same round trip
                    last = (last[0], t)
                else:
                    uncredited = (t, cwnd, w)  # its signal may be logged just after it
                    last = (None, t)
            cwnd = w
    return Reactions(ce=ce, loss=loss, ce_reported=reported)
