"""linkem's stats writer cost: the testbed has linkem rewrite its stats file
rarely (every STATS_INTERVAL_MS) and reads it on demand (SIGUSR1), while the flow log keeps
its own short interval. A reader still gets counters up to now, and the flow log's time
series its resolution."""

from __future__ import annotations

import json
import time

import numpy as np

from testbed_helpers import needs_testbed


def _to9(stats: dict, server: str) -> int:
    return sum(f["packets"] for f in stats.get("flows") or [] if f["direction"] == "up" and f["dst"] == f"{server}:9")


@needs_testbed("linkem")
def test_stats_are_rewritten_rarely_read_fresh_and_the_flow_log_keeps_its_interval():
    from longlook.flowlog import read_flow_log
    from longlook.linkprofile import LinkProfile
    from longlook.testbed import Testbed
    from longlook.testbed.linkem import FLOW_LOG_INTERVAL_MS, STATS_INTERVAL_MS

    assert STATS_INTERVAL_MS >= 500 and FLOW_LOG_INTERVAL_MS == 25
    with Testbed(LinkProfile(rate_mbit=50, delay_ms=10), flow_log=True) as tb:
        path = tb.linkem.stats_path
        # left alone, the file is rewritten once per STATS_INTERVAL_MS at most (was: 40/s)
        written = set()
        t_end = time.monotonic() + 1.2
        while time.monotonic() < t_end:
            written.add(json.loads(path.read_text())["mono_ms"])
            time.sleep(0.01)
        assert len(written) <= 1 + 1.2 * 1000 / STATS_INTERVAL_MS + 1, sorted(written)

        # 40 packets, one per 5 ms: a reader right after the last one's release has them all
        send = f"for i in $(seq 40); do echo x > /dev/udp/{Testbed.server_addr}/9; sleep 0.005; done; sleep 0.03"
        before = _to9(tb.linkem_stats(), Testbed.server_addr)
        tb.run("client", ["bash", "-c", send], check=False, timeout=10)
        asked = time.monotonic() * 1000
        got = tb.linkem_stats()
        assert _to9(got, Testbed.server_addr) - before == 40
        assert got["covers_mono_ms"] >= asked - 1

        # the flow log wrote the flow's counters every ~25 ms while they changed
        time.sleep(0.1)
        log = read_flow_log(tb.linkem.flow_log_path)
        t = np.unique(log[(log["direction"] == "up") & log["dst"].astype(str).str.endswith(":9")]["t"].to_numpy(float))
        assert len(t) >= 6, t
        gaps = np.diff(t)
        assert abs(np.median(gaps) - FLOW_LOG_INTERVAL_MS / 1000) < 0.006, gaps
