"""keyupdate: 1-RTT packets in key phase 1 from both sides, decrypted. One side updates its
keys and flips the key phase bit (RFC 9001 6); the peer must follow with its own packets in
the new phase. Decryption with the logged secrets shows that both derived the next keys as
RFC 9001 6.1 says; the bit alone, in packets nobody could open, shows nothing."""

from __future__ import annotations

from ..model import ONE_RTT, Capture
from . import view
from .result import CaseResult, failed, not_measurable, passed


def phases(capture: Capture, by: str) -> tuple[list, int, int]:
    """Decrypted key phase 1 datagrams, and counts of decrypted phase 0 and hidden phase 1 packets."""
    ones, zeros, hidden = [], 0, 0
    for d, p in view.packets(capture, by, ONE_RTT):
        if p.key_phase == 1 and p.decrypted:
            ones.append(d)
        elif p.key_phase == 1:
            hidden += 1
        elif p.decrypted:
            zeros += 1
    return ones, zeros, hidden


@view.measurable
def check(capture: Capture) -> CaseResult:
    seen = {by: phases(capture, by) for by in (view.CLIENT, view.SERVER)}
    for by, (ones, zeros, hidden) in seen.items():
        if ones:
            continue
        if hidden:
            return not_measurable(f"{view.count(hidden, '1-RTT packet')} in key phase 1 from the {by}, none decrypted")
        return failed(f"no 1-RTT packet in key phase 1 from the {by} ({zeros} in key phase 0)")
    (c, _, _), (s, _, _) = seen[view.CLIENT], seen[view.SERVER]
    return passed(
        f"key phase 1 from the client from {c[0].where} ({view.count(len(c), 'packet')}) and from the server "
        f"from {s[0].where} ({view.count(len(s), 'packet')}), all decrypted"
    )
