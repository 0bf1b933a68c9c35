"""`longlook bench endpoint`: how close each protocol's download with our endpoint comes to
the physical limit of the emulated path (limit.py; issue target: >= 90% for 10 MB at
100 Mbit/s, 36 ms RTT)."""

from __future__ import annotations

from pathlib import Path

from ..linkprofile import LinkProfile
from ..qlog import read_qlog
from ..stacks.base import OURS
from ..stacks.endpoint import CLIENT_QLOG, SERVER_ADDR, ServerOptions, fetch
from ..stacks.servers import open_servers
from ..testbed import Testbed
from .measure import measure_download
from .row import BenchRow


def _initial_window(protocol: str, run_dir: Path) -> int:
    """QUIC: as the server's qlog states it; TCP: Linux's IW10 of full segments."""
    if protocol == "h3":
        for log in run_dir.glob("*.sqlog"):
            if log.name == CLIENT_QLOG:  # the client's own trace, not the sender's window
                continue
            cc = read_qlog(log).last("longlook:congestion_control")
            if cc is not None:
                return int(cc["initial_window_bytes"])
    return 10 * 1448


def bench_endpoint(
    size: str = "10m", rate_mbit: float = 100.0, rtt_ms: float = 36.0, runs: int = 3, workdir: Path | None = None
) -> list[BenchRow]:
    import tempfile

    work = Path(workdir or tempfile.mkdtemp(prefix="longlook-bench-endpoint-"))
    bdp = int(rate_mbit * 1e6 / 8 * rtt_ms / 1e3)
    link = LinkProfile(rate_mbit=rate_mbit, delay_ms=rtt_ms / 2, buffer_bytes=max(bdp, 30_000))
    options = ServerOptions()
    rows = []
    with Testbed(link, workdir=work / "tb") as tb, open_servers(tb, work) as session:
        servers = session["servers"]
        port, server = servers.get(OURS, options)
        for protocol in ("h3", "h2"):
            plts, effs, iw = [], [], 0
            for i in range(runs):
                run_dir = work / f"{protocol}-{i}"
                run_dir.mkdir(parents=True, exist_ok=True)
                doc, eff = measure_download(
                    tb,
                    fetch,
                    label=f"{protocol} run {i}",
                    url=f"https://{SERVER_ADDR}:{port}/bulk/{size}",
                    protocol=protocol,
                    run_id=f"{protocol}-{i}",
                    cert_dir=servers.cert_dir,
                    run_dir=run_dir,
                )
                effs.append(eff)
                plts.append(doc["plt_ms"])
                server.take_logs(f"{protocol}-{i}", run_dir)
                iw = _initial_window(protocol, run_dir)
            rows.append(
                BenchRow.of_runs(
                    stack=OURS,
                    version=OURS,
                    cc=options.quic_cc if protocol == "h3" else options.tcp_cc,
                    protocol=protocol,
                    plts=plts,
                    effs=effs,
                    size_bytes=doc["bytes"],
                    initial_window=iw,
                    rate_mbit=rate_mbit,
                    rtt_ms=rtt_ms,
                )
            )
    return rows
