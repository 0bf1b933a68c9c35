"""`longlook bench endpoint`: how close each protocol's download comes to the physical limit
of the emulated path (issue target: >= 90% for 10 MB at 100 Mbit/s, 36 ms RTT).

The limit, for a transfer of S payload bytes over a path of rate R and round-trip time T:

    handshake rounds x T           (h3: 1 = QUIC+TLS 1.3; h2: 2 = TCP, then TLS 1.3)
  + T                              (the request's way out and the last byte's way back)
  + slow-start rounds x T          (from the initial window, doubling, until one window
                                    fills the pipe: a round lasts max(T, window / rate))
  + what remains / (R x efficiency)

`efficiency` is payload over IP bytes, measured for each run from linkem's counters of
the downstream direction (so every header, ack-less retransmission and padding counts).
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass
from pathlib import Path

from .stacks.endpoint import CLIENT_QLOG, SERVER_ADDR, EndpointServer, ServerOptions, fetch
from .linkprofile import LinkProfile
from .analyses.qlog import read_qlog
from .core.audit import linkem_delta
from .testbed import Testbed

HANDSHAKE_ROUNDS = {"h3": 1, "h2": 2}


def physical_limit_ms(size: int, rate_mbit: float, rtt_ms: float, protocol: str,
                      initial_window: int, efficiency: float) -> float:
    rate_Bps = rate_mbit * 1e6 / 8 * efficiency  # payload bytes per second at line rate
    t = (HANDSHAKE_ROUNDS[protocol] + 1) * rtt_ms
    remaining, window = float(size), float(initial_window)
    while remaining > 0 and window / rate_Bps * 1e3 < rtt_ms:  # the pipe is not full yet
        sent = min(window, remaining)
        remaining -= sent
        t += rtt_ms if remaining > 0 else sent / rate_Bps * 1e3
        window *= 2
    return t + remaining / rate_Bps * 1e3


@dataclass
class EndpointBenchRow:
    protocol: str
    runs: int
    plt_ms_median: float
    goodput_mbit_median: float
    efficiency: float
    initial_window_bytes: int
    limit_ms: float
    ratio: float  # limit / measured median: 1.0 = at the physical limit


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


def bench_endpoint(size: str = "10m", rate_mbit: float = 100.0, rtt_ms: float = 36.0,
                   runs: int = 3, workdir: Path | None = None) -> list[EndpointBenchRow]:
    import tempfile
    work = Path(workdir or tempfile.mkdtemp(prefix="longlook-bench-endpoint-"))
    bdp = int(rate_mbit * 1e6 / 8 * rtt_ms / 1e3)
    link = LinkProfile(rate_mbit=rate_mbit, delay_ms=rtt_ms / 2, buffer_bytes=max(bdp, 30_000))
    rows = []
    with Testbed(link, workdir=work / "tb") as tb:
        server = EndpointServer.start(tb, ServerOptions(), port=4433, cert_dir=work / "cert",
                                      log_dir=work / "logs")
        for protocol in ("h3", "h2"):
            plts, effs, iw = [], [], 0
            for i in range(runs):
                run_dir = work / f"{protocol}-{i}"
                run_dir.mkdir(parents=True, exist_ok=True)
                before = tb.linkem_stats()
                r = fetch(tb, url=f"https://{SERVER_ADDR}:4433/bulk/{size}", protocol=protocol,
                          run_id=f"{protocol}-{i}", cert_dir=work / "cert", out=run_dir / "fetch.json",
                          timeout_s=120, mode="bulk")
                if r.status != "ok":
                    raise RuntimeError(f"{protocol} run {i}: {r.status}: {r.error}")
                tb_stats = _settled_stats(tb)
                down = linkem_delta(before, tb_stats)["directions"]["down"]
                effs.append(r.document["bytes"] / down["bytes"])
                plts.append(r.document["plt_ms"])
                server.take_logs(f"{protocol}-{i}", run_dir)
                iw = _initial_window(protocol, run_dir)
            size_bytes = r.document["bytes"]
            eff = statistics.median(effs)
            limit = physical_limit_ms(size_bytes, rate_mbit, rtt_ms, protocol, iw, eff)
            med = statistics.median(plts)
            rows.append(EndpointBenchRow(protocol, runs, med, size_bytes * 8 / med / 1e3, eff, iw,
                                         limit, limit / med))
        server.stop()
    return rows


def _settled_stats(tb) -> dict:
    """linkem rewrites its stats every 100 ms: wait one interval so the run's last packets
    are in the counters."""
    import time
    time.sleep(0.25)
    return tb.linkem_stats()


def rows_as_dicts(rows: list[EndpointBenchRow]) -> list[dict]:
    return [asdict(r) for r in rows]
