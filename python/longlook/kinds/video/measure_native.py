"""One run of the native player: a fresh endpoint client session, the arm's protocol, the
cell's ABR rule; every request's protocol is the session's negotiated one (one connection)."""

from __future__ import annotations

from dataclasses import asdict

from ...core.kind import Measurement, RunContext
from ...stacks.endpoint import SERVER_ADDR
from .native.player import play
from .native.session import EndpointSession
from .qoe import qoe_metrics, series_rows
from .serving import server_for


def measure_native(ctx: RunContext) -> Measurement:
    content, manifest = ctx.state["content"], ctx.state["manifest"]
    port, server = server_for(ctx, content)
    protocol = ctx.arm.protocol
    timeout = ctx.scenario.run_timeout_s()
    session = EndpointSession(ctx.testbed, url=f"https://{SERVER_ADDR}:{port}/", protocol=protocol,
                              run_id=ctx.run_id, cert_dir=ctx.cert_dir, out=ctx.run_dir / "session.json",
                              timeout_s=timeout + 30, stderr_path=ctx.run_dir / "client.stderr")
    try:
        run = play(session, manifest, "/", rule=ctx.cell.abr, timeout_s=timeout)
    finally:
        result = session.close()
    ctx.testbed.check()
    negotiated = result.document.get("protocol")
    for r in run.requests:
        r.protocol = negotiated
    status, error = result.status, result.error
    if status == "ok" and run.error:
        status, error = ("timeout" if run.timed_out else "failed"), run.error
    artifacts = {"session": "session.json", "client_stderr": "client.stderr"}
    for name in server.take_logs(ctx.run_id, ctx.run_dir):
        artifacts["tcp_log" if name.endswith(".tcp.sqlog") else "qlog" if name.endswith(".sqlog") else name] = name
    if not server.alive():
        status, error = "failed", f"the endpoint server died during the run (see {server.log_dir}/server.stderr)"
    p = run.playback
    return Measurement(
        status=status, error=error, protocol_requested=protocol, protocol_negotiated=negotiated,
        started_unix_ms=result.document.get("started_unix_ms"),
        metrics=qoe_metrics(p) if p else {},
        details={**run.as_details(), "player": "native", "abr": ctx.cell.abr, "ended": p.ended if p else False,
                 "stalls": [asdict(s) for s in p.stalls] if p else []},
        series=series_rows(p) if p else [],
        rows={"requests": [asdict(r) for r in run.requests]},
        artifacts=artifacts)
