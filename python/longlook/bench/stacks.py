"""`longlook bench stacks [SPEC ...]`: each QUIC stack's download (10 MB at 100 Mbit/s,
36 ms RTT by default), its own server and client, as a share of the physical limit
(limit.py, the model of `bench endpoint`, efficiency from linkem's counters).

SPEC is a stack (`quic-go`, `quic-go@v0.64.1`, `ngtcp2`, ...), optionally with a congestion
control (`tquic:cubic`; default the stack's own), or `ours` (our endpoint, h3, Cubic);
default: ours and every installed stack. The report's stacks table reads the rows as JSON
(`--out DIR/stacks-bench.json` beside an experiment's store).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from ..linkprofile import LinkProfile
from ..qlog import read_qlog
from ..stacks.base import OURS
from ..stacks.content import ensure_content
from ..stacks.endpoint import SERVER_ADDR
from ..stacks.registry import STACKS, resolve
from ..stacks.servers import open_servers
from ..testbed import Testbed
from ..units import format_size, parse_size
from .measure import measure_download
from .row import BenchRow


def default_specs() -> list[str]:
    """ours and every installed stack."""
    return [OURS, *(n for n in STACKS if resolve(n).installed())]


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


def bench_stacks(
    specs: list[str],
    size: str = "10m",
    rate_mbit: float = 100.0,
    rtt_ms: float = 36.0,
    runs: int = 3,
    workdir: Path | None = None,
) -> list[BenchRow]:
    work = Path(workdir or tempfile.mkdtemp(prefix="longlook-bench-stacks-"))
    stacks = {s: resolve(s.partition(":")[0]) for s in specs}
    for spec, s in stacks.items():
        s.require(spec.partition(":")[2] or None)
    bdp = int(rate_mbit * 1e6 / 8 * rtt_ms / 1e3)
    link = LinkProfile(rate_mbit=rate_mbit, delay_ms=rtt_ms / 2, buffer_bytes=max(bdp, 30_000))
    n_bytes = parse_size(size)
    rows = []
    with Testbed(link, workdir=work / "tb") as tb, open_servers(tb, work) as session:
        pool = session["servers"]
        ensure_content(pool.content_root, "bulk", 1, n_bytes)
        url_path = f"/bulk/{format_size(n_bytes)}"
        for spec in specs:
            stack = stacks[spec]
            cc = stack.cc(spec.partition(":")[2] or None)
            port, server = pool.get(stack.spec, cc=cc)  # ours: its default options (Cubic)
            get = stack.fetcher()  # its client, with its default congestion control
            version = OURS if stack.name == OURS else stack.version_info()
            plts, effs, iw = [], [], 0
            for i in range(runs):
                run_dir = work / spec.replace("@", "-").replace(":", "-") / str(i)
                run_dir.mkdir(parents=True, exist_ok=True)
                doc, eff = measure_download(
                    tb,
                    get,
                    label=f"{spec} run {i}",
                    url=f"https://{SERVER_ADDR}:{port}{url_path}",
                    protocol="h3",
                    run_id=f"{spec}-{i}",
                    cert_dir=pool.cert_dir,
                    run_dir=run_dir,
                )
                effs.append(eff)
                plts.append(doc["plt_ms"])
                taken = server.take_artifacts(f"{spec}-{i}", run_dir)
                iw = _initial_window(run_dir / taken["qlog"] if "qlog" in taken else None)
            rows.append(
                BenchRow.of_runs(
                    stack=spec,
                    version=version,
                    cc=cc,
                    protocol="h3",
                    plts=plts,
                    effs=effs,
                    size_bytes=n_bytes,
                    initial_window=iw,
                    rate_mbit=rate_mbit,
                    rtt_ms=rtt_ms,
                )
            )
    return rows


def stacks_document(rows: list[BenchRow], size: str, rate_mbit: float, rtt_ms: float) -> dict:
    """What `--out` writes (stacks-bench.json): the path and one row per SPEC."""
    return {"size": size, "rate_mbit": rate_mbit, "rtt_ms": rtt_ms, "rows": [r.stacks_json() for r in rows]}
