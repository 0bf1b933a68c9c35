"""Measuring a testbed's path with linkem-probe and iperf3, in either direction.

`up` runs the sender in the client namespace towards the server; `down` the reverse. Probe
servers run on both ends for as long as the `PathProbe` is open.
"""

from __future__ import annotations

import json
import subprocess
import time
from typing import Literal

import numpy as np

from ..binaries import find_binary
from .host import TestbedError
from .netns_files import read_in_namespace
from .testbed import Testbed

Direction = Literal["up", "down"]
PROBE_PORT = 7000
IPERF_PORT = 5201


# The congestion control of the probes' TCP flows, set per socket (linkem-probe --cc, iperf3 -C):
# a namespace inherits the host's default (bbr on some hosts) and only the initial namespace
# may make a restricted algorithm such as cubic the default.
PROBE_TCP_CC = "cubic"


class PathProbe:
    def __init__(self, tb: Testbed):
        self.tb = tb
        self.binary = str(find_binary("linkem-probe"))
        self._servers: list[subprocess.Popen] = []

    def __enter__(self) -> "PathProbe":
        for role in ("client", "server"):
            p = self.tb.popen(
                role,
                [self.binary, "serve", "--bind", f"0.0.0.0:{PROBE_PORT}"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                as_party=False,
            )  # the path's probes, not a device
            self._servers.append(p)
            if p.stdout.readline().strip() != "ready":
                raise TestbedError(f"linkem-probe serve did not start in {role}: {p.stderr.read()[:500]}")
        self._servers.append(
            self.tb.popen(
                "server",
                ["iperf3", "-s", "-J", "-p", str(IPERF_PORT), "-i", str(IPERF_INTERVAL_S)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                as_party=False,
            )
        )
        return self

    def __exit__(self, *exc) -> None:
        for p in self._servers:
            if p.poll() is None:
                p.terminate()
        for p in self._servers:
            try:
                p.wait(3)
            except subprocess.TimeoutExpired:
                p.kill()

    def _ends(self, direction: Direction) -> tuple[str, str]:
        """(namespace of the sender, address of the receiver)."""
        if direction == "up":
            return "client", self.tb.server_addr
        if direction == "down":
            return "server", self.tb.client_addr
        raise ValueError(f"direction must be up or down, not {direction!r}")

    def receiver_of(self, direction: Direction) -> str:
        return "client" if direction == "down" else "server"

    def udp_counters(self, role: str) -> dict[str, int]:
        """The UDP counters of `role`'s namespace (/proc/net/snmp is per namespace): what its
        sockets received and what they dropped (RcvbufErrors: a full receive buffer)."""
        return udp_snmp(read_in_namespace(self.tb.ns[role], "snmp") or "")

    def _probe(self, role: str, args: list[str], timeout: float) -> dict:
        p = self.tb.run(role, [self.binary, *args], timeout=timeout, check=False, as_party=False)
        if p.returncode != 0:
            raise TestbedError(f"linkem-probe {args[0]} failed: {p.stderr.strip()}")
        return json.loads(p.stdout)

    def rtt(
        self,
        count: int = 2000,
        interval_ms: float = 2.0,
        size: int = 64,
        load_mbit: float = 0.0,
        wait_ms: int = 2000,
        samples: bool = False,
    ) -> dict:
        """Round trip client -> server -> client (load, if any, goes both ways)."""
        args = [
            "rtt",
            "--target",
            f"{self.tb.server_addr}:{PROBE_PORT}",
            "--count",
            str(count),
            "--interval-ms",
            str(interval_ms),
            "--size",
            str(size),
            "--wait-ms",
            str(wait_ms),
        ]
        if load_mbit > 0:
            args += ["--load-mbit", str(load_mbit)]
        if samples:
            args.append("--samples")
        return self._probe("client", args, timeout=count * interval_ms / 1e3 + wait_ms / 1e3 + 30)

    def udp(
        self,
        direction: Direction,
        rate_mbit: float,
        duration_s: float,
        size: int = 1200,
        interval_ms: int = 100,
        drain_ms: int = 1500,
    ) -> dict:
        role, addr = self._ends(direction)
        args = [
            "udp",
            "--target",
            f"{addr}:{PROBE_PORT}",
            "--rate-mbit",
            str(rate_mbit),
            "--duration-s",
            str(duration_s),
            "--size",
            str(size),
            "--interval-ms",
            str(interval_ms),
            "--drain-ms",
            str(drain_ms),
        ]
        return self._probe(role, args, timeout=duration_s + drain_ms / 1e3 + 30)

    def tcp(self, direction: Direction, duration_s: float, interval_ms: int = 250) -> dict:
        role, addr = self._ends(direction)
        args = [
            "tcp",
            "--target",
            f"{addr}:{PROBE_PORT}",
            "--duration-s",
            str(duration_s),
            "--interval-ms",
            str(interval_ms),
            "--cc",
            PROBE_TCP_CC,
        ]
        return self._probe(role, args, timeout=duration_s + 60)

    def iperf3(self, direction: Direction, duration_s: float, streams: int = 1) -> dict:
        """iperf3 TCP, an independent measurement; `down` uses -R (the server sends). The
        JSON includes the server's (`server_output_json`), so both ends' numbers are there."""
        argv = [
            "iperf3",
            "-c",
            self.tb.server_addr,
            "-p",
            str(IPERF_PORT),
            "-J",
            "-t",
            str(duration_s),
            "-P",
            str(streams),
            "--get-server-output",
            "-i",
            str(IPERF_INTERVAL_S),
            "-C",
            PROBE_TCP_CC,
        ]
        if direction == "down":
            argv.append("-R")
        for attempt in range(20):  # the server may still be starting
            p = self.tb.run("client", argv, timeout=duration_s + 30, check=False, as_party=False)
            if p.returncode == 0:
                return json.loads(p.stdout)
            time.sleep(0.2)
        raise TestbedError(f"iperf3 failed: {(p.stdout + p.stderr).strip()[-500:]}")


IPERF_INTERVAL_S = 0.25  # as the probe's own 250 ms intervals


def udp_snmp(text: str) -> dict[str, int]:
    """The `Udp:` counters of a /proc/net/snmp text (a header line, then a values line)."""
    rows = [line.split()[1:] for line in text.splitlines() if line.startswith("Udp:")]
    if len(rows) < 2:
        return {}
    return {k: int(v) for k, v in zip(rows[0], rows[1]) if v.lstrip("-").isdigit()}


def receiver_drops(before: dict[str, int], after: dict[str, int]) -> int | None:
    """Datagrams the receiving namespace dropped between two readings: a full socket buffer
    (RcvbufErrors) or any other receive error (InErrors counts both); None: not readable."""
    if "InErrors" not in before or "InErrors" not in after:
        return None
    return after["InErrors"] - before["InErrors"]


def iperf3_receiver_mbit(doc: dict, direction: Direction, after_s: float = 1.0) -> float:
    """Goodput at the receiver once past slow start: the median of the receiver's intervals
    (IPERF_INTERVAL_S) after `after_s` (the client's for `down`/-R, the server's for
    `up`). iperf3's own `sum_received` spans slow start and its -O handling skews it. Many
    short intervals, not two of 1 s: what the application reads in an interval can exceed
    the wire's rate when a loss recovery releases the data held behind a hole (slow start's
    overshoot into a one-BDP buffer at 112 ms: 11.3 Mbit/s read in one second of a 10 Mbit/s
    link), and a median of two intervals keeps that."""
    rx = doc if direction == "down" else doc.get("server_output_json", {})
    rates = [
        iv["sum"]["bits_per_second"] / 1e6
        for iv in rx.get("intervals", [])
        if iv["sum"]["start"] >= after_s - 0.001
        and iv["sum"]["seconds"] >= 0.99 * IPERF_INTERVAL_S
        and not iv["sum"].get("omitted")
    ]
    if not rates:
        return doc["end"]["sum_received"]["bits_per_second"] / 1e6
    return float(np.median(rates))


def steady_goodput_mbit(doc: dict, warmup_s: float = 1.0) -> float:
    """Goodput of a linkem-probe tcp/udp result once past `warmup_s` (slow start): the median
    of its per-interval rates. The median, because a receiver descheduled for a moment reads
    late and then in a burst, and a mean over a short window keeps part of that burst."""
    step = doc["interval_ms"] / 1000
    rows = [r for r in doc["intervals"] if r[0] / 1000 >= warmup_s][:-1]  # last is partial
    if len(rows) < 3:
        return doc.get("goodput_mbit") or doc.get("rate_mbit")
    return float(np.median([r[1] * 8 / step / 1e6 for r in rows]))
