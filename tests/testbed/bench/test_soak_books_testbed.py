"""The soak's books on a real testbed (bench/soak.py): each run records its fetch window and
the server that answered it, and a run whose server is killed mid-fetch fails. The books'
arithmetic: tests/unit/bench/test_soak_books.py."""

from __future__ import annotations

import os
import signal
import textwrap
import threading
import time
from datetime import timezone
from pathlib import Path

from testbed_helpers import needs_testbed

from longlook.bench.soak import _pids_named


SCENARIO = textwrap.dedent("""
    name = "fetch-window"
    seed = 3
    rounds = 1
    protocols = ["h3", "h2"]
    timeout_s = 8
    retries = 1
    workloads = ["bulk:3m"]
    [[links]]
    rate_mbit = 10
    rtt_ms = 20
    buffer_bytes = 60000
    [options]
    zero_rtt = false
    [fidelity]
    exclude_flagged = false
""")


def _pids(words: tuple[str, ...], where: str) -> list[int]:
    return [pid for pid, cmd in _pids_named(where) if all(w in cmd for w in words) and "/bin/sh" not in cmd]


@needs_testbed("linkem", "endpoint")
def test_each_run_records_its_fetch_window_and_a_server_killed_mid_fetch_fails_its_run(tmp_path: Path):
    """Two 3 MB downloads at 10 Mbit/s (~2.5 s each); 1 s into the first fetch its server is
    SIGKILLed. That run must fail, with the kill inside its recorded window and the killed
    pid its recorded server; the other run (the pool restarts the server) is ok."""
    from longlook.core.execute import Runner
    from longlook.kinds.pageload import Scenario
    from longlook.core.store import Store

    out = tmp_path / "exp"
    killed: list[tuple[float, int]] = []

    def killer():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not _pids(("endpoint", " fetch "), str(out)):
            time.sleep(0.05)
        time.sleep(1.0)
        for pid in _pids(("endpoint", " serve "), str(out)):
            killed.append((time.monotonic(), pid))
            os.kill(pid, signal.SIGKILL)

    t = threading.Thread(target=killer, daemon=True)
    t.start()
    Runner(Scenario.from_toml(SCENARIO, source="test"), out, link_check=False).run()
    t.join(5)
    assert len(killed) == 1, killed
    with Store.open(out, read_only=True) as store:
        runs = store.runs_frame()
    assert len(runs) >= 2
    for r in runs.to_dict("records"):
        t0, t1 = r["fetch_start_mono_s"], r["fetch_end_mono_s"]
        assert t0 < t1 <= time.monotonic()
        assert t1 - t0 <= r["duration_s"] + 1e-6
        if r["status"] == "ok":  # the page load, placed on the same clock, lies inside the fetch
            first = r["started_at"].replace(tzinfo=timezone.utc).timestamp() - r["fetch_start_unix_s"] + t0
            assert t0 - 0.002 <= first and first + r["plt_ms"] / 1000 <= t1 + 0.002, r
    ((at, pid),) = killed
    hit = [r for r in runs.to_dict("records") if r["fetch_start_mono_s"] <= at <= r["fetch_end_mono_s"]]
    assert len(hit) == 1, runs[["run_id", "status", "fetch_start_mono_s", "fetch_end_mono_s"]]
    assert int(hit[0]["server_pid"]) == pid and hit[0]["status"] != "ok", hit[0]
    assert (runs["status"] == "ok").sum() >= 2  # the hit (round, arm) again, and the other arm
