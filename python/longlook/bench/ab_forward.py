"""A/B of linkem binaries on one testbed: iperf3 -P 4 server -> client through a 10 Gbit/s
link, each binary in turn, `--reps` rounds, per delay. Prints linkem's CPU (% of a core,
/proc/PID/stat) and, saturating, CPU per Gbit/s delivered; medians per arm at the end.

    .venv/bin/python -m longlook.bench.ab_forward --bins /tmp/old /tmp/new \
        [--mbit 400] [--delays 0 20] [--reps 4]

Each --bins directory holds a `linkem` (and `linkem-probe`); --mbit caps the offered load
(iperf3 -b, split over the streams), else iperf3 saturates the path. Run the arms in one
session: the host is shared, so only alternated runs compare.
"""

import argparse
import json
import os
import statistics
import time

from ..linkprofile import LinkProfile
from ..testbed import Testbed
from ..testbed.probe import IPERF_PORT, PathProbe
from ..testbed.processes import cpu_seconds
from .link import ensure_tcp_buffers


def link(delay_ms: float) -> LinkProfile:
    return LinkProfile(name="ab", rate_mbit=10_000, delay_ms=delay_ms, buffer_bytes=20_000_000)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bins", nargs="+", required=True)
    ap.add_argument("--delays", nargs="+", type=float, default=[0.0, 20.0])
    ap.add_argument("--reps", type=int, default=4)
    ap.add_argument("--duration", type=float, default=5.0)
    ap.add_argument("--mbit", type=float, default=0.0, help="offered load; 0 = saturate")
    a = ap.parse_args()
    os.environ["LONGLOOK_BIN_DIR"] = a.bins[0]
    arms: dict[tuple, list[float]] = {}
    print("load", os.getloadavg(), flush=True)
    with Testbed(link(a.delays[0])) as tb, PathProbe(tb):
        for _ in range(a.reps):
            for d in a.delays:
                for b in a.bins:
                    os.environ["LONGLOOK_BIN_DIR"] = b
                    tb.reconfigure(link(d))
                    ensure_tcp_buffers(tb)
                    argv = [
                        "iperf3",
                        "-c",
                        tb.server_addr,
                        "-p",
                        str(IPERF_PORT),
                        "-J",
                        "-R",
                        "-P",
                        "4",
                        "-t",
                        str(a.duration),
                    ] + (["-b", f"{a.mbit / 4:g}M"] if a.mbit else [])
                    for _ in range(40):  # the server may still be busy with the last test
                        c0, t0 = cpu_seconds(tb.linkem.pid), time.monotonic()
                        p = tb.run("client", argv, timeout=a.duration + 30, check=False)
                        c1, t1 = cpu_seconds(tb.linkem.pid), time.monotonic()
                        doc = json.loads(p.stdout or "{}")
                        if doc.get("end", {}).get("sum_received"):
                            break
                        time.sleep(0.5)
                    mbit = doc["end"]["sum_received"]["bits_per_second"] / 1e6
                    cpu = 100 * (c1 - c0) / (t1 - t0)
                    figure = cpu if a.mbit else cpu / (mbit / 1000)
                    arms.setdefault((d, b), []).append(figure)
                    print(
                        f"delay {d:g} ms  {b}: {mbit:.0f} Mbit/s  linkem {cpu:.1f}%  "
                        f"{'' if a.mbit else f'{figure:.0f} %/Gbit/s  '}load {os.getloadavg()[0]:.1f}",
                        flush=True,
                    )
    for (d, b), xs in arms.items():
        print(f"median delay {d:g} ms {b}: {statistics.median(xs):.1f}  ({', '.join(f'{x:.1f}' for x in xs)})")


if __name__ == "__main__":
    main()
