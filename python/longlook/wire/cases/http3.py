"""http3: HTTP/3 both ways: each side sent SETTINGS (on its control stream, RFC 9114 6.2.1,
the first frame it must send) and HEADERS (a request, a response). tshark's HTTP/3 dissector
finds the frames in the decrypted STREAM data."""

from __future__ import annotations

from ..model import H3_HEADERS, H3_SETTINGS, ONE_RTT, ZERO_RTT, Capture
from . import view
from .result import CaseResult, failed, not_measurable, passed

WANTED = {H3_SETTINGS: "SETTINGS", H3_HEADERS: "HEADERS"}


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
    return failed(what)
