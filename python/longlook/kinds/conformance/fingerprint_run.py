"""The `fingerprint` arm: what a bulk download cannot show about a stack (Marx et al.,
EPIQ'20). Its server, one connection after another through the bottleneck:

1. a multiplexed page (PAGE_OBJECTS objects of PAGE_OBJECT_SIZE, requested together over
   one connection by the stack's own client): the server's stream scheduling
   (params/scheduling.py);
2. a resumed connection from our client, for every stack (a warm-up connection for a
   session ticket, then one sending its request as 0-RTT): whether the stack's server
   accepts 0-RTT (side "server"), and, where the stack's own client in longlook can resume
   (today ours: the same connection), whether its client sends it (side "client";
   params/zero_rtt.py).

It stores `fingerprint` rows only; its metrics stay empty (no envelope, no parameters).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ...core.kind import Measurement, RunContext
from ...stacks.base import OURS
from ...stacks.endpoint import SERVER_ADDR, fetch
from ...stacks.registry import resolve, split
from ...units import format_size
from .measure import ours_options
from .params import read_trace
from .params.scheduling import scheduling
from .params.trace import ConnTrace
from .params.zero_rtt import server_zero_rtt, zero_rtt
from .spec import ConformanceCell

FINGERPRINT_ARM = "fingerprint"
PAGE_OBJECTS = 8
PAGE_OBJECT_SIZE = 100_000


@dataclass(frozen=True)
class PageContent:
    """The multiplexed page as stacks/content.py writes it for stacks that serve files."""

    object_size: int = PAGE_OBJECT_SIZE
    mode: str = "page"
    object_count: int = PAGE_OBJECTS


def client_resumes(stack: str) -> bool:
    """Our endpoint's client keeps a session ticket and sends 0-RTT (`--zero-rtt`); the
    other stacks' clients in longlook start every connection afresh (their fetchers run
    one connection per process with no session store)."""
    return split(stack)[0] == OURS


def measure_fingerprint(ctx: RunContext) -> Measurement:
    cell: ConformanceCell = ctx.cell
    servers = ctx.session["servers"]
    is_ours = split(cell.stack)[0] == OURS
    port, server = servers.get(
        cell.stack, ours_options(cell) if is_ours else None, None if is_ours else cell.cc, workload=PageContent()
    )
    runner = fetch if is_ours else resolve(cell.stack).fetcher(cell.cc)
    version = ctx.state.get("versions", {}).get(cell.stack) or resolve(cell.stack).spec
    base = f"https://{SERVER_ADDR}:{port}"
    common = dict(protocol="h3", cert_dir=servers.cert_dir, timeout_s=ctx.scenario.timeout_s)
    rows, details, artifacts, errors = [], {}, {}, []

    page_dir = ctx.run_dir / "page"
    page_dir.mkdir(parents=True, exist_ok=True)
    started_ms = time.time() * 1000
    page = runner(
        ctx.testbed,
        url=f"{base}/page/{PAGE_OBJECTS}x{format_size(PAGE_OBJECT_SIZE)}.html",
        run_id=f"{ctx.run_id}-page",
        out=page_dir / "fetch.json",
        mode="page",
        **common,
    )
    trace = _server_trace(ctx, server, "page", f"{ctx.run_id}-page", started_ms, artifacts)
    details["page_status"] = page.status
    if page.status == "ok":
        s = scheduling(trace.stream_sent if trace else [], page.document)
        if s is not None:
            rows.append(
                {
                    "side": "server",
                    "field": "stream_scheduling",
                    "value": s["value"],
                    "unit": "concurrency",
                    "label": s["label"],
                    "note": f"{s['objects']} objects; from the {s['source']}",
                }
            )
    else:
        errors.append(f"page: {page.status}: {page.error}")

    resumed = _resumed(ctx, server, base, common, artifacts)
    details["resumed_status"] = resumed.status
    zero_rtt_found = zero_rtt_rows(resumed.document or None, resumed.status == "ok", client_resumes(cell.stack))
    rows += zero_rtt_found
    if resumed.status != "ok":
        details["resumed_error"] = resumed.error
        if not any(r["side"] == "server" for r in zero_rtt_found):  # else the server's doing, measured
            errors.append(f"resumed: {resumed.status}: {resumed.error}")
    rows = [{"stack": cell.entry.label, "version": version, "cc": cell.cc, **r} for r in rows]
    status = "ok" if not errors else "failed"
    return Measurement(
        status=status,
        error="; ".join(errors) or None,
        protocol_requested=None,
        protocol_negotiated=(page.document or {}).get("protocol"),
        started_unix_ms=None,
        metrics={},
        details=details,
        series=[],
        rows={"fingerprint": rows},
        artifacts=artifacts,
    )


def _resumed(ctx: RunContext, server, base: str, common: dict, artifacts: dict):
    """Our client, resuming against the stack's server: one object of the page the server
    already serves (every stack's file server has it), its request sent as 0-RTT."""
    res_dir = ctx.run_dir / "resumed"
    res_dir.mkdir(parents=True, exist_ok=True)
    resumed = fetch(
        ctx.testbed,
        url=f"{base}/obj/{format_size(PAGE_OBJECT_SIZE)}/0.jpg",
        run_id=f"{ctx.run_id}-resumed",
        out=res_dir / "fetch.json",
        mode="bulk",
        zero_rtt=True,
        **common,
    )
    arts = server.take_artifacts(f"{ctx.run_id}-resumed", res_dir)
    artifacts.update({f"resumed_{k}": f"resumed/{v}" for k, v in arts.items()})
    return resumed


def zero_rtt_rows(document: dict | None, ok: bool, own_client_resumes: bool) -> list[dict]:
    """The 0-RTT rows of one resumed connection of our client (its fetch document, `ok`
    whether the fetch succeeded): the server's side, where measured (a failed fetch counts
    only when the server closed the 0-RTT connection), and the client's (ours: this very
    connection; another stack's client cannot resume in longlook, whatever happened)."""
    rows = []
    s = server_zero_rtt(document)
    if s is not None:
        rows.append(
            {
                "side": "server",
                "field": "zero_rtt",
                "value": s["value"],
                "unit": "accepted",
                "label": s["label"],
                "note": "our client resuming, its request as 0-RTT" + (f"; {s['note']}" if s["note"] else ""),
            }
        )
    if ok or not own_client_resumes:
        c = zero_rtt(document, own_client_resumes)
        rows.append(
            {
                "side": "client",
                "field": "zero_rtt",
                "value": c["value"],
                "unit": "accepted",
                "label": c["label"],
                "note": "its own client resuming, its request as 0-RTT"
                if own_client_resumes
                else "its client in longlook starts every connection afresh",
            }
        )
    return rows


def _server_trace(
    ctx: RunContext, server, folder: str, run_id: str, since_ms: float, artifacts: dict
) -> ConnTrace | None:
    """The server's log of the page's connection (its STREAM frames), where it wrote one."""
    dest = ctx.run_dir / folder
    arts = server.take_artifacts(run_id, dest, unlabelled_since_ms=since_ms - 1000)
    artifacts.update({f"{folder}_{k}": f"{folder}/{v}" for k, v in arts.items()})
    if "qlog" not in arts:
        return None
    try:
        return read_trace(dest / arts["qlog"])
    except (OSError, ValueError):
        return None
