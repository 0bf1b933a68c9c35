"""Latency under load on real traffic (testbed/latency_probe.py): a sparse UDP probe beside a
bulk Cubic download meets the standing queue behind drop-tail, and hardly any queue behind
FQ-CoDel, which serves it as a new flow ahead of the download's packets."""

from __future__ import annotations

import statistics
import threading
import time
from pathlib import Path

from testbed_helpers import needs_testbed

from longlook.linkprofile import LinkProfile
from longlook.testbed import Testbed
from longlook.testbed.latency_probe import LatencyProbe
from longlook.testbed.probe import PathProbe

# 20 Mbit/s, 20 ms RTT, 500 KB of buffer: 200 ms of queue when full
LINK = dict(rate_mbit=20, delay_ms=10, buffer_bytes=500_000)


def _rtt_under_load(tmp_path: Path, link: LinkProfile) -> tuple[float, int]:
    """The probe's median RTT over the download's last 3 of 5 s (its queue built), and its
    samples there."""
    with Testbed(link, workdir=tmp_path / "tb", seed=1) as tb, PathProbe(tb) as bulk:
        with LatencyProbe(tb, interval_ms=50, duration_s=5) as probe:
            start = time.monotonic()
            load = threading.Thread(target=bulk.tcp, args=("down", 5.0))
            load.start()
            load.join()
    rtts = [r for t, r in probe.samples() if t - start >= 2.0]
    return statistics.median(rtts), len(rtts)


@needs_testbed("linkem", "linkem-probe")
def test_a_sparse_flow_waits_behind_drop_tail_and_not_behind_fq_codel(tmp_path: Path):
    tail, n_tail = _rtt_under_load(tmp_path / "tail", LinkProfile(**LINK))
    fq, n_fq = _rtt_under_load(tmp_path / "fq", LinkProfile(**LINK, down={"aqm": {"discipline": "fq_codel"}}))
    assert n_tail >= 40 and n_fq >= 40, (n_tail, n_fq)
    assert tail > 100, f"drop-tail: the probe should wait behind the standing queue, median {tail:.1f} ms"
    assert fq < 30, f"FQ-CoDel: the sparse flow should pass the bulk queue, median {fq:.1f} ms"
