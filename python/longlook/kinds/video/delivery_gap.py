"""The stall a video session met where its path changed (a NAT rebinding, a handover), as
the router saw it: the longest time the player waited on a request while linkem released none
of the server's packets toward the client (flowlog.longest_delivery_gap over the requests'
spans), whatever the protocol. A player idle with a full buffer waits on nothing, so its idle
gaps are not stalls; the page-load kind reads the same log over its one fetch."""

from __future__ import annotations

from dataclasses import replace

from ...core.kind import Measurement, RunContext
from ...errors import LonglookError
from ...flowlog import linkem_start_mono_ms, longest_delivery_gap, read_flow_log
from ...stacks.endpoint import SERVER_ADDR


def waiting_spans(requests: list[dict], t0_mono_s: float, linkem_zero_s: float) -> list[tuple[float, float]]:
    """The requests' [start, end] on linkem's clock (the player's times are from `t0_mono_s`
    on this host's CLOCK_MONOTONIC, as linkem's are from its start)."""
    return [
        (t0_mono_s + r["start_s"] - linkem_zero_s, t0_mono_s + r["end_s"] - linkem_zero_s)
        for r in requests
        if r.get("start_s") is not None and r.get("end_s") is not None
    ]


def with_delivery_gap(ctx: RunContext, m: Measurement, log_from: int | None) -> Measurement:
    """`m` with `delivery_gap_ms` (the longest wait on the server's packets during a request)
    and `delivery_gap_from_ms` (when it began, from the first request) in its details; as it
    is without a flow log, the player's request times (dash.js reports none here) or releases."""
    t0 = m.details.get("requests_t0_mono_s")
    requests = (m.rows or {}).get("requests") or []
    linkem = getattr(ctx.testbed, "linkem", None)
    path = getattr(linkem, "flow_log_path", None)
    if t0 is None or not requests or log_from is None or path is None:
        return m
    try:
        zero = linkem_start_mono_ms(linkem.stats()) / 1000
        log = read_flow_log(path, log_from)
    except (LonglookError, OSError, ValueError):
        return m
    spans = waiting_spans(requests, t0, zero)
    if not spans:
        return m
    start, end = min(s for s, _ in spans), max(e for _, e in spans)
    gap = longest_delivery_gap(log, SERVER_ADDR, None, start_s=start, end_s=end, waiting=spans)
    if gap is None:
        return m
    return replace(m, details={**m.details, "delivery_gap_ms": gap[0], "delivery_gap_from_ms": gap[1]})
