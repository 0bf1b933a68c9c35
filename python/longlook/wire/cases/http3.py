"""http3: HTTP/3 both ways: each side sent SETTINGS (on its control stream, RFC 9114 6.2.1,
the first frame it must send) and HEADERS (a request, a response). tshark's HTTP/3 dissector
finds the frames in the decrypted STREAM data. A failure says how the connection ended and
whether a side sent reserved frame types first (GREASE), which the other must ignore."""

from __future__ import annotations

from ..model import H3_HEADERS, H3_SETTINGS, ONE_RTT, ZERO_RTT, Capture
from . import view
from .result import CaseResult, failed, not_measurable, passed

WANTED = {H3_SETTINGS: "SETTINGS", H3_HEADERS: "HEADERS"}


def reserved(frame_type: int) -> bool:
    """A reserved frame type, 0x1f * N + 0x21 (RFC 9114 §7.2.8): sent to exercise the
    rule that a receiver ignores frame types it does not know (§9), never to mean anything."""
    return frame_type >= 0x21 and (frame_type - 0x21) % 0x1F == 0


def greased(capture: Capture) -> str:
    """Each side's first datagram with reserved frame types, in words ('' if none)."""
    said = []
    for by in (view.CLIENT, view.SERVER):
        for d in capture.datagrams:
            kinds = [t for t in d.http3 if reserved(t)]
            if kinds and view.sender(capture, d) == by:
                types = ", ".join(f"0x{t:x}" for t in kinds)
                said.append(f"the {by} sent reserved frame types ({types}) at {d.where}, which a receiver ignores")
                break
    return "; " + "; ".join(said) if said else ""


@view.measurable
def check(capture: Capture) -> CaseResult:
    seen, missing = [], []
    for by in (view.CLIENT, view.SERVER):
        for t, name in WANTED.items():
            d = view.first(d for d in capture.datagrams if view.sender(capture, d) == by and t in d.http3)
            if d is None:
                missing.append((by, name))
            else:
                seen.append(f"the {by}'s {name} at {d.where}")
    if not missing:
        return passed("SETTINGS and HEADERS both ways: " + ", ".join(seen))
    what = "; ".join(f"no {name} from the {by}" for by, name in missing)
    hidden = [by for by, _ in missing if view.hidden(capture, by, ONE_RTT, ZERO_RTT)]
    if hidden:
        return not_measurable(f"{what}, but some of the {hidden[0]}'s packets were not decrypted")
    # what the sides sent that the other may have refused, and how it ended
    return failed(what + greased(capture) + view.closing(capture))
