"""Concurrent bulk flows through one testbed: each flow is an `endpoint fetch --mode bulk`
in the client namespace, started at its own offset and stopped after its duration."""

from __future__ import annotations

import json
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from ...binaries import find_binary
from ...core.status import classify
from ...stacks.endpoint import SERVER_ADDR
from ...stacks.fetch_result import EXIT_OK
from .spec import FlowSpec

# The endpoint's largest object (10 GB) outlasts any duration-bounded flow we run.
ENDLESS_OBJECT = "10000m"
GRACE_S = 30.0  # beyond a flow's duration before it counts as hung


@dataclass
class FlowOutcome:
    spec: FlowSpec
    run_id: str  # the fetch's --run-id (the server files its logs under it)
    status: str  # ok | failed | timeout | protocol_mismatch
    error: str | None
    document: dict  # the fetch JSON ({} if none)

    @property
    def local_addr(self) -> str | None:
        return self.document.get("local_addr")


def flow_slug(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")


def run_concurrent_flows(
    tb,
    *,
    port: int,
    cert_dir: Path,
    flows: list[FlowSpec],
    run_id: str,
    run_dir: Path,
    duration_s: float | None,
    object_size: str = ENDLESS_OBJECT,
    keylog: Path | None = None,
    binary: Path | None = None,
) -> tuple[float, list[FlowOutcome]]:
    """Start every flow at its `start_s` after launch, wait for all, return the launch time
    (Unix seconds, the run's t = 0) and each flow's outcome.

    With `duration_s`, each flow stops receiving at `duration_s` after launch (its own
    duration is shortened by its start offset); without it, each fetches `object_size` whole.
    With `keylog`, every flow appends its TLS secrets there ([capture] keylog). `binary`:
    another build of the endpoint's client (ours@VERSION); default the workspace's.
    """
    run_dir.mkdir(parents=True, exist_ok=True)
    endpoint = str(binary or find_binary("endpoint"))
    pending = sorted(flows, key=lambda f: f.start_s)
    started: list[tuple[FlowSpec, str, Path, subprocess.Popen, float]] = []
    launch_unix = time.time()
    launch = time.monotonic()
    for spec in pending:
        delay = launch + spec.start_s - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        slug = flow_slug(spec.label)
        flow_run_id = f"{run_id}-{slug}"
        out = run_dir / f"{slug}.json"
        budget = (duration_s - spec.start_s) if duration_s is not None else None
        timeout_s = (budget or 120.0) + GRACE_S
        argv = [
            endpoint,
            "fetch",
            "--url",
            f"https://{SERVER_ADDR}:{port}/bulk/{object_size}",
            "--proto",
            spec.protocol,
            "--mode",
            "bulk",
            "--ca",
            str(cert_dir / "cert.pem"),
            "--run-id",
            flow_run_id,
            "--out",
            str(out),
            "--timeout-s",
            f"{timeout_s:g}",
            "--goodput-interval-ms",
            "100",
        ]
        if budget is not None:
            argv += ["--duration-s", f"{budget:.3f}"]
        if keylog is not None:
            argv += ["--keylog", str(keylog)]
        with open(run_dir / f"{slug}.stderr", "wb") as err:
            proc = tb.popen("client", argv, stdout=subprocess.DEVNULL, stderr=err)
        started.append((spec, flow_run_id, out, proc, timeout_s))

    outcomes = []
    for spec, flow_run_id, out, proc, timeout_s in started:
        remaining = launch + spec.start_s + timeout_s + 5 - time.monotonic()
        try:
            code = proc.wait(max(remaining, 0.1))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            outcomes.append(FlowOutcome(spec, flow_run_id, "timeout", "no result in time", {}))
            continue
        outcomes.append(_outcome(spec, flow_run_id, out, code))
    tb.check()  # flows measured over a dead link are not measurements
    return launch_unix, outcomes


def _outcome(spec: FlowSpec, flow_run_id: str, out: Path, code: int) -> FlowOutcome:
    try:
        doc = json.loads(out.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return FlowOutcome(spec, flow_run_id, "failed", f"no JSON result (exit {code})", {})
    status = classify(
        ok=code == EXIT_OK and bool(doc.get("ok")), requested=spec.protocol, negotiated=doc.get("protocol")
    )
    error = {"ok": None, "protocol_mismatch": f"requested {spec.protocol}, negotiated {doc.get('protocol')}"}.get(
        status, doc.get("error") or f"exit {code}"
    )
    return FlowOutcome(spec, flow_run_id, status, error, doc)
