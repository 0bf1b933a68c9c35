"""F(t) of a video run measured at the router (Chaudhary et al.'s fallback traffic):
bytes per second over TCP and over UDP between the client and the video server, from linkem's
per-flow log, so the fallback series does not rest on what the client says it did. The
client's own per-request figures stay beside it as `F_client` / `F_udp_client`."""

from __future__ import annotations

import math
import shutil
import time
from dataclasses import replace

from ...flowlog import bytes_per_second, linkem_start_mono_ms, read_flow_log, series_rows
from ...core.kind import Measurement, RunContext
from ...errors import LonglookError
from ...stacks.endpoint import SERVER_ADDR

FLOW_LOG = "linkem-flows.jsonl"
FLUSH_S = 0.3  # linkem writes its flow log every 100 ms: wait for the run's last lines
CLIENT_NAMES = {"F": "F_client", "F_udp": "F_udp_client"}
FIRST_BYTES_BIN_S = 0.1  # linkem's flow-log interval: the finest a first byte can be placed


def _first_bin_end(bytes_per_bin) -> float | None:
    """The end of the first bin with bytes, in seconds since the session start (the flow
    log's line that showed them came at most then); None when no bin has any."""
    hit = bytes_per_bin.to_numpy() > 0
    if not hit.any():
        return None
    return round(float(bytes_per_bin.index[hit.argmax()]) + FIRST_BYTES_BIN_S, 3)


def _linkem_t0_unix(ctx: RunContext) -> float:
    """linkem's clock zero on the wall clock: from its stats (monotonic, exact) when it has
    written them, else the moment the testbed spawned it."""
    linkem = ctx.testbed.linkem
    try:
        return linkem_start_mono_ms(linkem.stats()) / 1000 + time.time() - time.monotonic()
    except LonglookError:
        return linkem.started_unix


def _quic_delay(first_tcp: float | None, first_udp: float | None, length_s: float | None) -> dict:
    """How long a session went from its first byte (either protocol) to QUIC's first: 0 when
    QUIC came first. A session QUIC never reached kept it out at least to its end: that lower
    bound, flagged `router_quic_never` (dropping such a session would leave only those where
    QUIC came, and so shorten the delay)."""
    starts = [t for t in (first_tcp, first_udp) if t is not None]
    if not starts:
        return {"router_quic_delay_s": None, "router_quic_never": None}
    if first_udp is not None:
        return {"router_quic_delay_s": round(first_udp - min(starts), 3), "router_quic_never": 0.0}
    bound = None if length_s is None else round(length_s - first_tcp, 3)
    return {"router_quic_delay_s": bound, "router_quic_never": 1.0}


def with_router_bytes(ctx: RunContext, m: Measurement, from_byte: int | None = None) -> Measurement:
    """`m` with series F and F_udp (bytes per second over TCP / UDP at the router, both
    directions, from the session start `m.started_unix_ms`) and metrics `router_bytes_tcp`,
    `router_bytes_udp`, `router_tcp_share`; the client-reported series are renamed. Left as
    it is when the run has no start time or linkem kept no flow log. The run's copy of the
    log begins at `from_byte` where given (where the log stood when the run began: a log
    written every few ms grows by megabytes a session), else it is the whole log."""
    path = ctx.testbed.linkem.flow_log_path
    if m.started_unix_ms is None or path is None or not path.exists():
        return m
    time.sleep(FLUSH_S)
    copy = ctx.run_dir / FLOW_LOG
    if from_byte:
        with path.open("rb") as src, copy.open("wb") as dst:
            src.seek(from_byte)
            shutil.copyfileobj(src, dst)
    else:
        shutil.copyfile(path, copy)
    start = m.started_unix_ms / 1000 - _linkem_t0_unix(ctx)
    ends = [r["t_s"] for r in m.series]  # the player's series: the session's length
    end = start + math.floor(max(ends)) + 1 if ends else None
    log = read_flow_log(copy)
    per = bytes_per_second(log, SERVER_ADDR, start_s=start, end_s=end)
    tcp, udp = float(per["tcp"].sum()), float(per["udp"].sum())
    # when each protocol first carried bytes, at the flow log's own resolution (100 ms): a
    # QUIC-enabled browser that learns QUIC from Alt-Svc begins over TCP (Chaudhary §4.1)
    fine = bytes_per_second(log, SERVER_ADDR, start_s=start, end_s=end, bin_s=FIRST_BYTES_BIN_S)
    first = {proto: _first_bin_end(fine[proto]) for proto in ("tcp", "udp")}
    series = [{**r, "name": CLIENT_NAMES.get(r["name"], r["name"])} for r in m.series]
    series += series_rows(per)
    metrics = {
        **m.metrics,
        "router_bytes_tcp": tcp,
        "router_bytes_udp": udp,
        "router_tcp_share": tcp / (tcp + udp) if tcp + udp > 0 else None,
        "router_first_tcp_s": first["tcp"],
        "router_first_udp_s": first["udp"],
        **_quic_delay(first["tcp"], first["udp"], None if end is None else end - start),
    }
    return replace(m, series=series, metrics=metrics, artifacts={**m.artifacts, "flow_log": FLOW_LOG})
