"""A stack's fingerprint (Marx et al., EPIQ'20, "Same Standards, Different Decisions"), from
its server's log of a bulk download: the flow-control windows each side announced in its
transport parameters (the server's own: `local`; its client's: `remote`) and how the
client raised the connection window (MAX_DATA), the max datagram size announced and sent,
and ACK delay (announced max_ack_delay, the client's measured ack_delay).

Stream scheduling and 0-RTT need a multiplexed page and a resumed connection: not in this
kind's bulk runs. A value the log does not show is absent (the stack does not log it).
"""

from __future__ import annotations

import numpy as np

from .trace import ConnTrace

# transport parameters (RFC 9000 §18.2) in the fingerprint: name -> unit
PARAMETERS = {"initial_max_data": "bytes", "initial_max_stream_data_bidi_local": "bytes",
              "initial_max_stream_data_bidi_remote": "bytes", "initial_max_streams_bidi": "streams",
              "max_udp_payload_size": "bytes", "max_ack_delay": "ms", "ack_delay_exponent": ""}


def fingerprint(tr: ConnTrace) -> list[dict]:
    """Rows {side, field, value, unit}: side = server (the stack's own server) or client."""
    rows = []
    params = tr.info.get("parameters") or {}
    for owner, side in (("local", "server"), ("remote", "client")):
        p = params.get(owner) or {}
        for name, unit in PARAMETERS.items():
            v = p.get(name)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                rows.append({"side": side, "field": name, "value": float(v), "unit": unit})
    if tr.max_data:
        values = [m for _, m in tr.max_data]
        rows += [{"side": "client", "field": "max_data_updates", "value": float(len(values)), "unit": "frames"},
                 {"side": "client", "field": "max_data_final", "value": max(values), "unit": "bytes"}]
    if tr.ack_delays:
        rows.append({"side": "client", "field": "ack_delay_median", "value": float(np.median(tr.ack_delays)),
                     "unit": "ms"})
    sizes = tr.sent["size"].dropna()
    if len(sizes):
        rows.append({"side": "server", "field": "max_datagram_sent", "value": float(sizes.max()), "unit": "bytes"})
    return rows
