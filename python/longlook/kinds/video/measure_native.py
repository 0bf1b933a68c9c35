"""One run of the native player: a fresh endpoint client session, the arm's protocol, the
cell's ABR rule; every request's protocol is the session's negotiated one (one connection)."""

from __future__ import annotations

from dataclasses import asdict

from ...core.kind import Measurement, RunContext
from ...stacks.endpoint import SERVER_ADDR
from ...stacks.registry import is_stack, resolve
from ...stacks.race import race_measures
from ...testbed.tcp_ecn import tcp_ecn
from .dashjs import _tcp_share_series
from .native.player import play
from .native.session import EndpointSession
from .qoe import qoe_metrics, series_rows
from .serving import server_for


def measure_native(ctx: RunContext) -> Measurement:
    content, manifest = ctx.state["content"], ctx.state["manifest"]
    port, server = server_for(ctx, content)
    protocol = ctx.arm.protocol
    racing = protocol == "race"  # the racing client: each segment's protocol is its own
    timeout = ctx.scenario.run_timeout_s()
    client_spec = ctx.scenario.stacks_of(ctx.arm)[1]
    # the kernel's TCP ECN is read at the handshake: set before the client starts
    with tcp_ecn(ctx.testbed, ctx.scenario.ecn if protocol != "h3" else None):
        session = EndpointSession(
            ctx.testbed,
            url=f"https://{SERVER_ADDR}:{port}/",
            protocol=protocol,
            run_id=ctx.run_id,
            cert_dir=ctx.session["servers"].cert_dir,
            out=ctx.run_dir / "session.json",
            timeout_s=timeout + 30,
            stderr_path=ctx.run_dir / "client.stderr",
            race_argv=ctx.scenario.race.argv() if racing else None,
            keylog=ctx.keylog,
            binary=resolve(client_spec).binary if is_stack(client_spec) else None,
            ecn=ctx.scenario.ecn is not False,
        )
        try:
            run = play(session, manifest, "/", rule=ctx.cell.abr, timeout_s=timeout)
        finally:
            result = session.close()
    ctx.testbed.check()
    negotiated = result.document.get("protocol")
    for r in run.requests:
        r.protocol = r.protocol or negotiated
    race_metrics, race_details = race_measures(result.document)
    if racing:  # the session was "ready" before the race; the report knows who served first
        run.handshake_ms = result.document.get("handshake_ms")
    status, error = result.status, result.error
    if status == "ok" and run.error:
        status, error = ("timeout" if run.timed_out else "failed"), run.error
    artifacts = {"session": "session.json", "client_stderr": "client.stderr"}
    artifacts.update(server.take_artifacts(ctx.run_id, ctx.run_dir))
    if not server.alive():
        status, error = "failed", f"the endpoint server died during the run (see {server.log_dir}/server.stderr)"
    p = run.playback
    return Measurement(
        status=status,
        error=error,
        protocol_requested=None if racing else protocol,
        protocol_negotiated=negotiated,
        started_unix_ms=result.document.get("started_unix_ms"),
        metrics={**(qoe_metrics(p) if p else {}), **race_metrics},
        details={
            **run.as_details(),
            "requests_t0_mono_s": run.t0_mono_s,
            "player": "native",
            "abr": ctx.cell.abr,
            "ended": p.ended if p else False,
            "stalls": [asdict(s) for s in p.stalls] if p else [],
            **race_details,
        },
        series=(series_rows(p) if p else []) + (_tcp_share_series([asdict(r) for r in run.requests]) if racing else []),
        rows={"requests": [asdict(r) for r in run.requests]},
        artifacts=artifacts,
    )
