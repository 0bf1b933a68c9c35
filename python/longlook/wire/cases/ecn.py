"""ecn: both sides mark their packets ECT and each reports, in ACK frames with ECN counts
(ACK_ECN, RFC 9000 19.3.2), the marks it received. Read per direction in the application
packet number space (0-RTT and 1-RTT, where the data flows, and where a stack validates
ECN, RFC 9000 13.4.2): the sender's datagrams carry ECT(0), ECT(1) or CE in the IP header,
and the receiver's last ACK_ECN frame counts (ECT(0) + ECT(1) + CE, so a router
re-marking ECT as CE changes nothing) at least as many packets as its ACK frames so far
acknowledged of those marked, and no more than were marked. Counts only grow and cover
every packet received, acknowledged or not, hence "at least"; a lost packet is neither
acknowledged nor counted."""

from __future__ import annotations

from dataclasses import replace

from ..model import ACK, ACK_ECN, ECN_NAMES, NOT_ECT, ONE_RTT, ZERO_RTT, Capture
from . import view
from .result import CaseResult, failed, not_measurable, passed

APPLICATION = (ZERO_RTT, ONE_RTT)


def direction(capture: Capture, by: str, to: str) -> CaseResult:
    sent = list(view.packets(capture, by, *APPLICATION))
    marked = [(d, p) for d, p in sent if d.ecn != NOT_ECT]
    if not marked:
        return failed(f"the {by} marked none of its {len(sent)} 0-RTT/1-RTT packets ECT (all Not-ECT)")
    acks = [(d, f) for d, p, f in view.frames(capture, to, ACK, ACK_ECN) if p.type == ONE_RTT]
    with_ecn = [(d, f) for d, f in acks if f.type == ACK_ECN]
    if not with_ecn:
        if not acks and view.hidden(capture, to, ONE_RTT):
            return not_measurable(f"no ACK frame from the {to} seen: its 1-RTT packets were not decrypted")
        return failed(
            f"the {by} marked {len(marked)} packets ECT, but the {to}'s {len(acks)} ACK frames carry no ECN counts"
        )
    d, ack = with_ecn[-1]
    reported = sum(ack.ecn)
    # counts only grow: every packet any ACK up to this one acknowledged was counted in it
    upto = acks[: next(i for i, (e, f) in enumerate(acks) if f is ack) + 1]
    ranges = [r for _, f in upto for r in f.acked]
    acked = sum(any(lo <= p.number <= hi for lo, hi in ranges) for _, p in marked if p.number is not None)
    codepoints = sorted({ECN_NAMES[m.ecn] for m, _ in marked})
    ect0, ect1, ce = ack.ecn
    said = f"the {to}'s last ACK_ECN at {d.where} counts {reported} (ECT(0) {ect0}, ECT(1) {ect1}, CE {ce})"
    if reported < acked:
        return failed(f"{said}, but its ACKs acknowledge {acked} packets the {by} marked {'/'.join(codepoints)}")
    if reported > len(marked):
        if view.hidden(capture, by, *APPLICATION):  # a packet not decrypted may hold several (GSO)
            return not_measurable(
                f"{said}, more than the {len(marked)} packets the {by} marked seen; some were not decrypted"
            )
        return failed(f"{said}, more than the {len(marked)} packets the {by} marked")
    return passed(
        f"{by} to {to}: {len(marked)} of {len(sent)} packets {'/'.join(codepoints)}; {said} "
        f"for the {acked} marked packets its ACKs acknowledge"
    )


def judge(conn: Capture) -> CaseResult:
    ways = [direction(conn, view.CLIENT, view.SERVER), direction(conn, view.SERVER, view.CLIENT)]
    bad = next((w for w in ways if not w.passed), None)
    return bad or passed("; ".join(w.evidence for w in ways))


@view.measurable
def check(capture: Capture) -> CaseResult:
    """Every connection: an ACK_ECN frame's counts are those of its own connection."""
    conns = view.started(capture) or [capture]
    verdicts = [judge(c) for c in conns]
    bad = next((v for v in verdicts if not v.passed), None)
    if bad is not None:
        return (
            bad if len(conns) == 1 else replace(bad, evidence=f"connection {verdicts.index(bad) + 1}: {bad.evidence}")
        )
    more = f" (and {view.count(len(conns) - 1, 'more connection')} alike)" if len(conns) > 1 else ""
    return passed(verdicts[0].evidence + more)
