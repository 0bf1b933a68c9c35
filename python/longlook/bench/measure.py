"""How the benches read what the path carried: linkem's counters once they are settled, and
one bulk download's document and payload efficiency (payload over the IP bytes linkem
counted downstream)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from ..core.audit import linkem_delta
from ..errors import LonglookError

LINKEM_SETTLE_S = 0.25  # linkem rewrites its stats every 100 ms


def settled_stats(tb) -> dict:
    """linkem's stats with the last packets in them: linkem rewrites its stats every 100 ms,
    so wait one interval (and some) first."""
    time.sleep(LINKEM_SETTLE_S)
    return tb.linkem_stats()


def measure_download(
    tb, get: Callable, *, label: str, url: str, protocol: str, run_id: str, cert_dir: Path, run_dir: Path
) -> tuple[dict, float]:
    """One bulk download with `get` (the signature of stacks.endpoint.fetch) writing
    RUN_DIR/fetch.json: the client's document and the downstream payload efficiency. A run
    that did not end ok stops the bench (LonglookError naming `label`)."""
    before = tb.linkem_stats()
    r = get(
        tb,
        url=url,
        protocol=protocol,
        run_id=run_id,
        cert_dir=cert_dir,
        out=run_dir / "fetch.json",
        timeout_s=120,
        mode="bulk",
    )
    if r.status != "ok":
        raise LonglookError(f"{label}: {r.status}: {r.error}")
    down = linkem_delta(before, settled_stats(tb))["directions"]["down"]
    return r.document, r.document["bytes"] / down["bytes"]
