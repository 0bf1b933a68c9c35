"""One page load: a fresh client process fetches the cell's workload from the server of the
arm's options; the fetch JSON becomes the run's metrics, its objects a table, and the
server's log of that connection (qlog, or the TCP log) an artifact."""

from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import asdict
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ...core.audit import host_buffer_reasons, tcp_ecn_check, tcp_summary
from ...core.kind import Measurement, Metric, RunContext
from ...core.record import RunRecord
from ...core.status import classify
from ...errors import LonglookError
from ...flowlog import (
    GAP_LOG_INTERVAL_MS,
    changes_path,
    flow_log_size,
    linkem_start_mono_ms,
    longest_delivery_gap,
    read_flow_log,
)
from ...qlog.controllers import controllers
from ...qlog.gaps import longest_receive_gap_in
from ...qlog.reader import read_qlog
from ...stacks.base import MOVING_CLIENT_CASES
from ...stacks.endpoint import CLIENT_QLOG, ServerOptions
from ...stacks.fetch_result import FetchResult
from ...stacks.race import race_measures
from ...stacks.registry import migrates_by_route, sends_run_header
from ...linkprofile import HANDOVER_CLIENT_ADDR
from ...testbed.route_handover import RouteHandover
from ...testbed.tcp_ecn import tcp_ecn
from .proxied import route_for
from .spec import RunOptions

# linkem's flow-log interval where a path changes under the runs: the resolution of the
# delivery gap (a two-round-trip stall at 20 ms RTT is 40 ms)

PAGE_LOAD_METRICS = (
    Metric("plt_ms", "ms", "lower", "page load time", on_failure="timeout"),
    Metric("handshake_ms", "ms", "lower", "handshake"),
    Metric("ttfb_ms", "ms", "lower", "time to first byte"),
)
# the objects of a page load, as the fetch JSON times them (ms from the first packet sent)
OBJECTS_TABLE = {
    "path": "VARCHAR",
    "status": "INTEGER",
    "bytes": "BIGINT",
    "start_ms": "DOUBLE",
    "first_byte_ms": "DOUBLE",
    "end_ms": "DOUBLE",
}
OBJECT_COLUMNS = tuple(OBJECTS_TABLE)


def server_options(opts: RunOptions, keylog: bool = False, logs: bool = True) -> ServerOptions:
    """Our endpoint's server configuration for a run (other stacks use `server_cc` only);
    `keylog`: it logs its TLS secrets ([capture] keylog); `logs`: its qlog and TCP logs
    (the scenario's `server_logs`)."""
    return ServerOptions(
        quic_cc=opts.quic_cc,
        max_cwnd_packets=opts.max_cwnd_packets,
        initial_window_packets=opts.initial_window_packets,
        n_conn=opts.n_conn,
        tcp_cc=opts.tcp_cc,
        keylog=keylog,
        qlog=logs,
        ecn=opts.ecn is not False,
    )


def measure(ctx: RunContext) -> Measurement:
    opts = ctx.cell.run_options(ctx.arm)
    port, server = ctx.session["servers"].get(
        opts.server,
        server_options(opts, ctx.scenario.capture.keylog, ctx.scenario.server_logs),
        opts.server_cc,
        workload=ctx.cell.workload,
        case=opts.server_case,
    )
    route = route_for(ctx, opts, port)  # straight to the server, or through the cell's proxy
    fetch = ctx.state["fetchers"][opts.client]
    racing = opts.protocol == "race"  # the racing client makes full handshakes (no 0-RTT)
    race = (
        {
            "race_argv": ctx.scenario.race.argv(
                ctx.scenario.race.state_file(ctx.experiment_dir, ctx.cell.index, ctx.arm.label)
            )
        }
        if racing
        else {}
    )
    # only the native client has the switch (Scenario._reads keeps ecn off other clients' arms)
    ecn = {} if opts.ecn is None or opts.protocol == "h2" else {"ecn": opts.ecn}
    # a handover: our client, and a stack's asked for connection migration, are told to move
    # (stacks/endpoint.migration_argv); any other client meets it as its OS makes it, the
    # default route moving to the second address, and so does one told only when to move,
    # which takes the address the route then names (Stack.migrates_by_route)
    handover = getattr(ctx.cell.link, "handover", None)
    asked = opts.client_case in MOVING_CLIENT_CASES and not migrates_by_route(opts.client)
    told = opts.client == "native" or asked
    moves = RouteHandover(ctx.testbed, handover.notice_ms) if handover and not told else nullcontext()
    changes = changes_path(ctx.scenario)
    log_from = flow_log_size(ctx.testbed) if changes else None
    url = route.url(ctx.cell.workload.url_path())
    fetch_start, fetch_start_unix = time.monotonic(), time.time()
    with route.active(), tcp_ecn(ctx.testbed, opts.ecn if opts.protocol != "h3" else None), moves as moved:
        result: FetchResult = fetch(
            ctx.testbed,
            url=url,
            protocol=opts.protocol,
            run_id=ctx.run_id,
            cert_dir=route.cert_dir,
            out=ctx.run_dir / "fetch.json",
            timeout_s=ctx.scenario.timeout_s,
            mode=ctx.cell.workload.mode,
            zero_rtt=opts.zero_rtt and not racing,
            keylog=ctx.keylog,
            **race,
            **ecn,
            **({"client_case": opts.client_case} if opts.client_case else {}),
        )
    fetch_end = time.monotonic()
    artifacts = _artifacts(ctx.run_dir, result.document)
    proxy_artifacts, proxy_details = route.record(result.document, ctx.run_dir)
    artifacts.update(proxy_artifacts)
    # a client that cannot name its run in a header: its connection is the one since it started
    since = None if sends_run_header(opts.client) else (result.document.get("started_unix_ms") or 0)
    artifacts.update(server.take_artifacts(ctx.run_id, ctx.run_dir, unlabelled_since_ms=since))
    if not server.alive():
        result = FetchResult(
            "failed",
            result.document,
            f"the {opts.server} server died during the run (see {server.log_dir}/server.stderr)",
            result.wall_s,
        )
    if route.proxied and not route.pool.alive():
        result = FetchResult(
            "failed",
            result.document,
            f"the proxy died during the run (see {route.pool.root}/*/proxy.stderr)",
            result.wall_s,
        )
    m = from_fetch(
        result.document,
        protocol_requested=None if racing else opts.protocol,
        status=result.status,
        error=result.error,
        options=asdict(opts),
        artifacts=artifacts,
    )
    # a client that wrote no result (killed at its timeout) still asked for this URL: its
    # capture is judged against the server it names (analyses/wire_runs)
    m.details["url"] = m.details.get("url") or url
    if "tcp_log" in artifacts:
        summary = tcp_summary(ctx.run_dir / artifacts["tcp_log"])  # read once, for both checks
        buffers = getattr(ctx.testbed, "host_buffers", None)
        rmem_max = buffers.tcp_rmem_max if buffers is not None else None
        m.audit_reasons += host_buffer_reasons(summary, rmem_max)
        if opts.ecn is not None:
            figures, reasons = tcp_ecn_check(summary, opts.ecn)
            m.details.update(figures)
            m.audit_reasons += reasons
    if ctx.cell.proxy_dim:
        m.details.update(proxy_details)
    if moved is not None:  # the OS moved the route: when, from the fetch's start
        at = None if moved.moved_mono_s is None else round((moved.moved_mono_s - fetch_start) * 1000, 3)
        # a client asked to migrate that takes the route's address moved itself, once it could
        by = "client" if opts.client_case in MOVING_CLIENT_CASES else "route"
        m.details["migration"] = {"by": by, "at_ms": at, "to": HANDOVER_CLIENT_ADDR, "not_moved": moved.error}
    # when the client ran and which server answered, on this host's CLOCK_MONOTONIC: a fault
    # (a killed process, a stopped linkem) is judged against the fetch itself (bench soak);
    # its start on the wall clock too, which places the document's own times on that clock
    if changes and (gap := _receive_stall(ctx.run_dir / CLIENT_QLOG)) is not None:
        # the longest silence our QUIC client met: a path that changed under it shows here,
        # and the scenario's cells without a NAT give the baseline (a handshake, a slow start)
        m.details["receive_stall_ms"] = gap.ms
        m.details["receive_stall_from_ms"] = gap.from_ms
    if changes and (gap := delivery_gap(ctx, route.url(""), fetch_start, fetch_end, log_from)) is not None:
        # the same, as the router saw it, for every client and protocol: the longest time
        # between releases of the server's packets toward the client
        m.details["delivery_gap_ms"], m.details["delivery_gap_from_ms"] = gap
    if changes and "qlog" in artifacts and (cc := _server_controllers(ctx.run_dir / artifacts["qlog"])):
        m.details["server_controllers"] = cc
    m.details.update(
        fetch_start_mono_s=fetch_start,
        fetch_end_mono_s=fetch_end,
        fetch_start_unix_s=fetch_start_unix,
        server_pid=getattr(getattr(server, "process", None), "pid", None),
    )
    return m


def delivery_gap(
    ctx: RunContext, url: str, start_mono_s: float, end_mono_s: float, from_byte: int | None
) -> tuple[float, float] | None:
    """The longest gap between linkem's releases of the run's server's packets toward the
    client, from the fetch's start to its end (flowlog.longest_delivery_gap, on linkem's
    clock through its stats), and when it began (ms from the fetch's start); None without a
    flow log or with too few releases."""
    linkem = getattr(ctx.testbed, "linkem", None)
    path = getattr(linkem, "flow_log_path", None)
    if path is None or from_byte is None:
        return None
    time.sleep(2 * GAP_LOG_INTERVAL_MS / 1000)  # the run's last lines
    try:
        t0_s = linkem_start_mono_ms(linkem.stats()) / 1000
        log = read_flow_log(path, from_byte)
    except (LonglookError, OSError, ValueError):
        return None
    parts = urlsplit(url)
    return longest_delivery_gap(
        log, parts.hostname or "", parts.port, start_s=start_mono_s - t0_s, end_s=end_mono_s - t0_s
    )


def _receive_stall(path: Path):
    """The longest gap between packets the client received (qlog.gaps); None without a
    client trace (TCP, another client) or with too few packets in it."""
    if not path.is_file():
        return None
    return longest_receive_gap_in(path)


def _server_controllers(path: Path) -> dict | None:
    """Our server's congestion controllers of the run's QUIC connection (qlog.controllers):
    how many, and the window before and after the first change (a reset on a new address)."""
    if not path.is_file():
        return None
    found = controllers(read_qlog(path))
    if found is None:
        return None
    n, changes = found
    first = changes[0] if changes else None
    return {
        "count": n,
        "changed_at_ms": first.t_ms if first else None,
        "cwnd_before": first.cwnd_before if first else None,
        "cwnd_after": first.cwnd_after if first else None,
    }


def _artifacts(run_dir: Path, document: dict) -> dict[str, str]:
    """fetch.json and the files the client names in it (Chromium: har, netlog)."""
    found = {"fetch": "fetch.json"} if (run_dir / "fetch.json").exists() else {}
    for name, file in (document.get("artifacts") or {}).items():
        if (run_dir / file).is_file():
            found[name] = file
    return found


def fetch_status(fetch: dict, requested: str, timed_out: bool = False) -> str:
    """What a fetch JSON says of its run's status (core.status.classify)."""
    return classify(
        ok=bool(fetch.get("ok")), requested=requested, negotiated=fetch.get("protocol"), timed_out=timed_out
    )


def record_from_fetch(
    fetch: dict,
    *,
    run_id: str,
    cell_id: str,
    round: int,
    position: int,
    arm: str,
    attempt: int = 1,
    protocol_requested: str | None = None,
    duration_s: float | None = None,
    **kw: Any,
) -> RunRecord:
    """A stored run straight from a fetch JSON (notebooks, tests, importing results);
    the protocol asked for defaults to the document's, the options', else the arm label."""
    requested = (
        protocol_requested or fetch.get("protocol_requested") or (kw.get("options") or {}).get("protocol") or arm
    )
    m = from_fetch(fetch, protocol_requested=None if requested == "race" else requested, **kw)
    return RunRecord.of(
        m,
        run_id=run_id,
        cell_id=cell_id,
        round=round,
        position=position,
        arm=arm,
        attempt=attempt,
        duration_s=duration_s,
    )


def from_fetch(
    fetch: dict,
    *,
    protocol_requested: str | None,
    status: str | None = None,
    error: str | None = None,
    timed_out: bool = False,
    options: dict | None = None,
    artifacts: dict[str, str] | None = None,
) -> Measurement:
    """The fetch JSON of docs/interfaces.md as a Measurement. `fetch` may be {} when the
    client produced nothing (crash, timeout). The status is derived from the document unless
    given; a run over another protocol than requested is never "ok"."""
    derived = fetch_status(fetch, protocol_requested, timed_out)
    if status is None or (status == "ok" and derived == "protocol_mismatch"):
        status = derived
    zr = fetch.get("zero_rtt") or {}
    details: dict[str, Any] = {
        "zero_rtt_attempted": bool(zr.get("attempted", False)),
        "zero_rtt_accepted": bool(zr.get("accepted", False)),
        # an address-validation token lifts the 3x anti-amplification cap on 0-RTT replies
        "zero_rtt_token_presented": zr.get("token_presented"),
        "bytes": fetch.get("bytes"),
        "url": fetch.get("url"),
        "mode": fetch.get("mode"),
        "local_addr": fetch.get("local_addr"),
        "goodput": fetch.get("goodput") or [],
        # where a failed fetch stopped: setup, connect, handshake, request or transfer
        "failure_phase": fetch.get("failure_phase"),
    }
    objects = [{c: o.get(c) for c in OBJECT_COLUMNS} for o in fetch.get("objects") or []]
    race_metrics, race_details = race_measures(fetch)  # racing client: fallback, shares
    details.update(race_details)
    if fetch.get("migration"):  # a client that moved paths: when, to where, or why not
        details["migration"] = fetch["migration"]
    return Measurement(
        status=status,
        error=error or fetch.get("error") or ("timed out" if status == "timeout" else None),
        protocol_requested=protocol_requested,
        protocol_negotiated=fetch.get("protocol"),
        started_unix_ms=fetch.get("started_unix_ms"),
        metrics={
            "plt_ms": fetch.get("plt_ms"),
            "handshake_ms": fetch.get("handshake_ms"),
            "ttfb_ms": fetch.get("ttfb_ms"),
            **race_metrics,
        },
        details=details,
        rows={"objects": objects},
        artifacts=artifacts or {},
        options=options or {},
    )
