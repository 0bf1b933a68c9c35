"""Latency under load: a sparse flow beside a run's flows, the delay a competing
application's packets meet in the bottleneck's queue (a game, a call, a DNS lookup next to a
download). A small UDP probe every `interval_ms` from the client to the server and back
(linkem-probe rtt, echoed by linkem-probe serve), timed at the client. Drop-tail makes it
wait behind the bulk flows' standing queue; CoDel and PIE keep that queue near their target;
FQ-CoDel serves it as a sparse flow ahead of the bulk ones; DualPI2 keeps its Classic queue
near 15 ms. Its own load (92 IP bytes every 100 ms: 7 kbit/s) is nothing beside them.

    with LatencyProbe(tb, interval_ms=100, duration_s=30) as probe:
        ... the run ...
    samples = probe.samples()   # [(sent, monotonic s), rtt ms] of the probes that came back
"""

from __future__ import annotations

import json
import subprocess
import time

from ..binaries import find_binary
from .host import TestbedError
from .testbed import Testbed

PORT = 7100  # beside the path probe's 7000 (testbed/probe.py)
SIZE = 64  # UDP payload bytes


class LatencyProbe:
    def __init__(self, tb: Testbed, interval_ms: float, duration_s: float):
        if not interval_ms > 0 or not duration_s > 0:
            raise ValueError("latency probe: interval_ms and duration_s must be > 0")
        self.tb = tb
        self.interval_ms = interval_ms
        self.count = max(1, int(duration_s * 1000 / interval_ms))
        self.binary = str(find_binary("linkem-probe"))
        self._echo: subprocess.Popen | None = None
        self._sender: subprocess.Popen | None = None
        self._doc: dict | None = None
        self.error: str | None = None

    def __enter__(self) -> "LatencyProbe":
        # not the measured parties: as_party=False keeps them out of the CPU accounting
        self._echo = self.tb.popen(
            "server",
            [self.binary, "serve", "--bind", f"0.0.0.0:{PORT}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            as_party=False,
        )
        if self._echo.stdout.readline().strip() != "ready":
            raise TestbedError(f"linkem-probe serve did not start: {self._echo.stderr.read()[:500]}")
        args = ["rtt", "--target", f"{self.tb.server_addr}:{PORT}", "--count", str(self.count)]
        args += ["--interval-ms", f"{self.interval_ms:g}", "--size", str(SIZE), "--wait-ms", "1000", "--samples"]
        self._sender = self.tb.popen(
            "client", [self.binary, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, as_party=False
        )
        return self

    def __exit__(self, *exc) -> None:
        try:
            if exc[0] is None:
                self._collect()
        finally:
            for p in (self._sender, self._echo):
                if p is not None and p.poll() is None:
                    p.terminate()
                    try:
                        p.wait(3)
                    except subprocess.TimeoutExpired:
                        p.kill()

    def _collect(self) -> None:
        """The sender's report: it ends on its own after its last probe and a second's wait;
        a run that ended early stops it (it reports what it sent until then)."""
        p = self._sender
        deadline = time.monotonic() + 2.0
        while p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if p.poll() is None:
            p.terminate()
        out, err = p.communicate(timeout=5)
        try:
            self._doc = json.loads(out)
        except json.JSONDecodeError:
            # stopped before its last probe (a run that ended early): no report, no samples;
            # the run itself is not the probe's to fail
            self._doc, self.error = {}, f"the latency probe gave no report: {err.strip()[:300]}"

    def samples(self) -> list[tuple[float, float]]:
        """(send time on CLOCK_MONOTONIC in s, RTT in ms) of every probe that came back."""
        doc = self._doc or {}
        sent, rtt = doc.get("sent_mono_ms") or [], doc.get("samples_ms") or []
        return [(s / 1000.0, r) for s, r in zip(sent, rtt) if r is not None]

    def lost(self) -> int:
        return int((self._doc or {}).get("lost", 0))
