"""A stack's fingerprint (Marx et al., EPIQ'20, "Same Standards, Different Decisions"), from
its server's log of a bulk download: the flow-control windows each side announced in its
transport parameters (the server's own: `local`; its client's: `remote`, or the client's
own log where the server's log has no remote parameters: our endpoint, since quinn exposes
none) and how the client raised them (MAX_DATA, MAX_STREAM_DATA over time), the max
datagram size announced and sent, and ACK delay (announced max_ack_delay, the client's
measured ack_delay). Stream scheduling and 0-RTT come from other runs (scheduling.py,
zero_rtt.py). A value the log does not show is absent (the stack does not log it).
"""

from __future__ import annotations

import numpy as np

from .trace import ConnTrace

# transport parameters (RFC 9000 §18.2) in the fingerprint: name -> unit
PARAMETERS = {
    "initial_max_data": "bytes",
    "initial_max_stream_data_bidi_local": "bytes",
    "initial_max_stream_data_bidi_remote": "bytes",
    "initial_max_streams_bidi": "streams",
    "max_udp_payload_size": "bytes",
    "max_ack_delay": "ms",
    "ack_delay_exponent": "",
}


def _parameter_rows(params: dict, side: str) -> list[dict]:
    rows = []
    for name, unit in PARAMETERS.items():
        v = params.get(name)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            rows.append({"side": side, "field": name, "value": float(v), "unit": unit})
    return rows


def _growth_rows(raises: list[tuple[float, float]], initial: float | None, name: str) -> list[dict]:
    """How a window the client announced grew: raises seen, the last value, the last over the
    announced initial one, the median time between raises."""
    if not raises:
        return []
    t = np.array([r[0] for r in raises])
    values = [r[1] for r in raises]
    rows = [
        {"side": "client", "field": f"{name}_updates", "value": float(len(values)), "unit": "frames"},
        {"side": "client", "field": f"{name}_final", "value": max(values), "unit": "bytes"},
    ]
    if initial:
        rows.append({"side": "client", "field": f"{name}_growth", "value": max(values) / initial, "unit": "x initial"})
    if len(t) > 1:
        rows.append(
            {"side": "client", "field": f"{name}_interval_median", "value": float(np.median(np.diff(t))), "unit": "ms"}
        )
    return rows


def fingerprint(tr: ConnTrace, client: ConnTrace | None = None) -> list[dict]:
    """Rows {side, field, value, unit}: side = server (the stack's own server) or client.
    `client`: the client's own log of the same connection, where there is one."""
    params = tr.info.get("parameters") or {}
    remote = params.get("remote") or ((client.info.get("parameters") or {}).get("local") if client else None) or {}
    rows = _parameter_rows(params.get("local") or {}, "server") + _parameter_rows(remote, "client")
    rows += _growth_rows(tr.max_data, remote.get("initial_max_data"), "max_data")
    # the stream's window: the server sends the response, so the client's bidi_local limit
    per_stream: dict = {}
    for t, sid, m in tr.max_stream_data:
        per_stream.setdefault(sid, []).append((t, m))
    if per_stream:
        busiest = max(per_stream.values(), key=len)
        rows += _growth_rows(busiest, remote.get("initial_max_stream_data_bidi_local"), "max_stream_data")
    # our endpoint logs no MAX_DATA / MAX_STREAM_DATA frames; quinn counts them (at close)
    stats = tr.info.get("connection_stats") or {}
    have = {r["field"] for r in rows}
    for field, key in (
        ("max_data_updates", "max_data_frames_received"),
        ("max_stream_data_updates", "max_stream_data_frames_received"),
        ("ack_frames", "ack_frames_received"),
    ):
        if field not in have and isinstance(stats.get(key), (int, float)):
            rows.append(
                {
                    "side": "client",
                    "field": field,
                    "value": float(stats[key]),
                    "unit": "frames",
                    "note": "quinn's count at the connection's close (values not logged)",
                }
            )
    if tr.ack_delays:
        rows.append(
            {"side": "client", "field": "ack_delay_median", "value": float(np.median(tr.ack_delays)), "unit": "ms"}
        )
    sizes = tr.sent["size"].dropna()
    if len(sizes):
        rows.append({"side": "server", "field": "max_datagram_sent", "value": float(sizes.max()), "unit": "bytes"})
    return rows
