"""keyupdate: the client updates its keys and the server follows, decrypted. The updating side
flips the key phase bit (RFC 9001 6); the peer must answer in the new phase. Decryption with
the logged secrets shows that both derived the next keys as RFC 9001 6.1 says; the bit
alone, in packets nobody could open, shows nothing.

The case asks the client to update, so the client has to be the one that started an update.
Some stacks update on their own early on (quinn after a random 10-1000 packets, quic-go at
the 100th), from either side: a server's own update that the client merely followed shows the
client can answer one, not that it can start one, and a client's unasked update would pass the
case on a run that never asked. Who started an update is on the wire: a side can only
follow an update after the packet that started it crossed the path, so at the router the
starter's first packet in the new phase comes first."""

from __future__ import annotations

from itertools import zip_longest

from ..model import ONE_RTT, Capture, Datagram
from . import view
from .result import CaseResult, failed, not_measurable, passed


def updates(capture: Capture, by: str) -> tuple[list[Datagram], int, int]:
    """The datagrams in which `by` first used each new key phase (its first, second... update),
    with its count of decrypted 1-RTT packets and of packets in a new phase left undecrypted.
    A packet in the old phase numbered below the current phase's first is a late one of the
    old keys (reordered on the path), not a further update."""
    starts: list[Datagram] = []
    phase, first_number, decrypted, hidden = 0, None, 0, 0
    for d, p in view.packets(capture, by, ONE_RTT):
        if not p.decrypted:
            hidden += p.key_phase != phase
            continue
        decrypted += 1
        if p.key_phase == phase:
            first_number = p.number if first_number is None else first_number
            continue
        if p.number is not None and first_number is not None and p.number < first_number:
            continue
        starts.append(d)
        phase, first_number = p.key_phase, p.number
    return starts, decrypted, hidden


@view.measurable
def check(capture: Capture) -> CaseResult:
    client, client_packets, client_hidden = updates(capture, view.CLIENT)
    server, _, server_hidden = updates(capture, view.SERVER)
    unanswered, answered = None, None
    for k, (c, s) in enumerate(zip_longest(client, server)):
        if c is not None and s is not None and c.number < s.number:
            nth = "" if k == 0 else f" (its update {k + 1}, after {k} the server started)"
            return passed(
                f"the client updated its keys at {c.where}{nth} and the server followed at {s.where}; "
                f"{view.count(len(client), 'key update')} from the client in all, every packet decrypted"
            )
        if c is not None and s is None:
            unanswered = unanswered or c
        if c is not None and s is not None:
            answered = answered or (s, c)
    if client_hidden or server_hidden:
        who, hidden = ("client", client_hidden) if client_hidden else ("server", server_hidden)
        return not_measurable(f"{view.count(hidden, '1-RTT packet')} in a new key phase from the {who}, none decrypted")
    if unanswered is not None:
        return failed(f"the client updated its keys at {unanswered.where}; the server never followed")
    if answered is not None:
        s, c = answered
        return failed(
            f"the server started the key update at {s.where} and the client only followed at {c.where}; "
            "the client started none of its own"
        )
    return failed(f"no 1-RTT packet in key phase 1 from the client ({client_packets} in key phase 0)")
