"""Each QUIC stack's 10 MB download at 100 Mbit/s, 36 ms RTT as a share of the physical limit:
the `longlook bench endpoint` figure (bench_endpoint.py, same limit model and efficiency
from linkem's counters), now per stack, its own server and client.

    python -m longlook.stacks.bench [SPEC ...] [--runs 3] [--size 10m] [--out FILE.json]

SPEC is a stack (`quic-go`, `quic-go@v0.64.1`, `ngtcp2`, ...), optionally with a congestion
control (`tquic:cubic`; default the stack's own), or `ours` (our endpoint, h3, Cubic);
default: ours and every installed stack. A benchmark, not a test: it prints a table and
writes the rows as JSON (the report's stacks table reads `stacks-bench.json` beside an
experiment's store).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from ..analyses.qlog import read_qlog
from ..bench_endpoint import _settled_stats, physical_limit_ms
from ..core.audit import linkem_delta
from ..core.units import format_size, parse_size
from ..errors import LonglookError
from ..linkprofile import LinkProfile
from ..testbed import Testbed
from .base import OURS
from .content import ensure_content
from .endpoint import SERVER_ADDR, EndpointServer, ServerOptions, fetch
from .registry import STACKS, resolve
from .runner import StackServers, stack_fetcher


@dataclass
class StackBenchRow:
    stack: str  # NAME@VERSION, or ours
    version: str  # exact
    cc: str
    runs: int
    plt_ms_median: float
    goodput_mbit_median: float
    efficiency: float
    initial_window_bytes: int
    limit_ms: float
    share: float  # limit / measured median: 1.0 = at the physical limit


def _initial_window(qlog: Path | None, default: int = 10 * 1200) -> int:
    """The first congestion window the server's (translated) qlog states."""
    if qlog is None or not qlog.is_file():
        return default
    log = read_qlog(qlog)
    cc = log.last("longlook:congestion_control")
    if cc and cc.get("initial_window_bytes"):
        return int(cc["initial_window_bytes"])
    for e in log.named("recovery:metrics_updated"):
        w = (e.get("data") or {}).get("congestion_window")
        if w:
            return int(w)
    return default


def bench_stacks(specs: list[str], size: str = "10m", rate_mbit: float = 100.0, rtt_ms: float = 36.0,
                 runs: int = 3, workdir: Path | None = None) -> list[StackBenchRow]:
    work = Path(workdir or tempfile.mkdtemp(prefix="longlook-bench-stacks-"))
    stacks = {s: resolve(s.partition(":")[0]) for s in specs if s != OURS}
    for spec, s in stacks.items():
        s.require(spec.partition(":")[2] or None)
    bdp = int(rate_mbit * 1e6 / 8 * rtt_ms / 1e3)
    link = LinkProfile(rate_mbit=rate_mbit, delay_ms=rtt_ms / 2, buffer_bytes=max(bdp, 30_000))
    n_bytes = parse_size(size)
    rows = []
    with Testbed(link, workdir=work / "tb") as tb:
        pool = StackServers(tb, work / "cert", work / "logs", work / "content")
        ensure_content(pool.content_root, "bulk", 1, n_bytes)
        url_path = f"/bulk/{format_size(n_bytes)}"
        for spec in specs:
            stack = stacks.get(spec)
            if stack is None:
                ours = EndpointServer.start(tb, ServerOptions(), port=4433, cert_dir=work / "cert",
                                            log_dir=work / "logs" / "ours")
                port, server, get, cc, version = 4433, ours, fetch, "cubic", OURS
            else:
                cc = stack.cc(spec.partition(":")[2] or None)
                port, server = pool.get(stack, cc)
                get, version = stack_fetcher(stack), stack.version_info()  # its client: default cc
            plts, effs, iw = [], [], 0
            for i in range(runs):
                run_dir = work / spec.replace("@", "-").replace(":", "-") / str(i)
                run_dir.mkdir(parents=True, exist_ok=True)
                before = tb.linkem_stats()
                r = get(tb, url=f"https://{SERVER_ADDR}:{port}{url_path}", protocol="h3", run_id=f"{spec}-{i}",
                        cert_dir=work / "cert", out=run_dir / "fetch.json", timeout_s=120, mode="bulk")
                if r.status != "ok":
                    raise LonglookError(f"{spec} run {i}: {r.status}: {r.error}")
                down = linkem_delta(before, _settled_stats(tb))["directions"]["down"]
                effs.append(r.document["bytes"] / down["bytes"])
                plts.append(r.document["plt_ms"])
                taken = server.take_logs(f"{spec}-{i}", run_dir)
                qlog = run_dir / taken["qlog"] if isinstance(taken, dict) and "qlog" in taken else \
                    next(iter(sorted(run_dir.glob("h3-*.sqlog"))), None)
                iw = _initial_window(qlog)
            if stack is None:
                ours.stop()
            eff, med = statistics.median(effs), statistics.median(plts)
            limit = physical_limit_ms(n_bytes, rate_mbit, rtt_ms, "h3", iw, eff)
            rows.append(StackBenchRow(spec, version, cc, runs, med, n_bytes * 8 / med / 1e3, eff, iw, limit,
                                      limit / med))
        pool.stop_all()
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m longlook.stacks.bench", description=__doc__.split("\n")[0])
    ap.add_argument("stacks", nargs="*")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--size", default="10m")
    ap.add_argument("--rate-mbit", type=float, default=100.0)
    ap.add_argument("--rtt-ms", type=float, default=36.0)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args(argv)
    specs = a.stacks or [OURS, *(n for n in STACKS if resolve(n).installed())]
    try:
        rows = bench_stacks(specs, a.size, a.rate_mbit, a.rtt_ms, a.runs)
    except LonglookError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"{'stack':22} {'cc':8} {'PLT ms':>8} {'Mbit/s':>7} {'limit ms':>9} {'share':>6}")
    for r in rows:
        print(f"{r.stack:22} {r.cc:8} {r.plt_ms_median:8.0f} {r.goodput_mbit_median:7.1f} {r.limit_ms:9.0f} "
              f"{r.share:6.0%}")
    if a.out:
        a.out.write_text(json.dumps({"size": a.size, "rate_mbit": a.rate_mbit, "rtt_ms": a.rtt_ms,
                                     "rows": [asdict(r) for r in rows]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
