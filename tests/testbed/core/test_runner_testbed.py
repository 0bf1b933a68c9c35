"""The runner through the real testbed: namespaces, linkem, the endpoint. Short scenarios."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from testbed_helpers import needs_testbed

from longlook.errors import LonglookError
from longlook.core.execute import Runner
from longlook.kinds.pageload import Scenario
from longlook.core.status import counted_runs
from longlook.core.store import Store


def scenario(extra_link: str = "", rounds: int = 2, protocols: str = '["h3", "h2"]', timeout_s: float = 10) -> Scenario:
    return Scenario.from_toml(scenario_text(extra_link, rounds, protocols, timeout_s), source="test")


# Run counts here are about resume and retries, not the path audit: a run flagged on a busy
# machine is kept and counted, not measured again.
def scenario_text(extra_link: str = "", rounds: int = 2, protocols: str = '["h3", "h2"]', timeout_s: float = 10) -> str:
    return textwrap.dedent(f"""
        name = "runner-test"
        seed = 7
        rounds = {rounds}
        protocols = {protocols}
        timeout_s = {timeout_s}
        retries = 1
        workloads = ["5x20k"]
        [[links]]
        rate_mbit = 50
        rtt_ms = 10
        buffer_bytes = 60000
        {extra_link}
        [options]
        zero_rtt = false
        [fidelity]
        exclude_flagged = false
    """)


@needs_testbed("linkem", "endpoint")
def test_interrupted_run_resumes_to_a_complete_consistent_store(tmp_path: Path):
    sc = scenario(rounds=3)
    seen = []

    def interrupt_after_three(kind, **info):
        if kind == "run":
            seen.append(info)
            if len(seen) == 3:
                raise KeyboardInterrupt

    first = Runner(sc, tmp_path, link_check=False, progress=interrupt_after_three).run()
    assert first.interrupted and first.runs == 3

    with pytest.raises(LonglookError, match="already holds an experiment"):
        Runner(sc, tmp_path, link_check=False).run()

    second = Runner(sc, tmp_path, resume=True, link_check=False).run()
    assert not second.interrupted
    assert second.runs == 3 and second.skipped_done == 3

    with Store.open(tmp_path, read_only=True) as store:
        runs = store.runs_frame()
        orders = store.round_orders_frame()
    assert len(runs) == 6 and (runs.status == "ok").all()
    # every (round, arm) exactly once; each protocol really negotiated
    assert not runs.duplicated(["round", "arm"]).any()
    assert (runs.protocol_negotiated == runs.protocol_requested).all()
    assert set(runs.protocol_negotiated) == {"h3", "h2"}
    # the position of each run is its arm's place in the recorded order of its round
    for r in runs.itertuples():
        order = orders[orders["round"] == r.round].iloc[0]["arm_order"]
        assert order[r.position] == r.arm
    # artifacts: the fetch JSON, the server log of that connection, linkem's counters
    for r in runs.itertuples():
        arts = r.artifacts
        assert (tmp_path / arts["fetch"]).is_file()
        assert (tmp_path / arts["linkem"]).is_file()
        assert ("qlog" if r.arm == "h3" else "tcp_log") in arts
        # the native client's own trace of its QUIC connection, beside the server's
        assert ("client_qlog" in arts) == (r.arm == "h3")
        if r.arm == "h3":
            text = (tmp_path / arts["client_qlog"]).read_text()
            assert '"type":"client"' in text and '"name":"transport:packet_received"' in text
    # TCP's congestion states come from the kernel's tcp_cong_state_set tracepoint (exact),
    # not only from TCP_INFO samples, when the kernel has it
    from longlook.testbed.tracefs import tcp_tracefs

    if tcp_tracefs() is not None:
        tcp_log = (tmp_path / runs[runs.arm == "h2"].iloc[0].artifacts["tcp_log"]).read_text()
        assert '"source":"TCP_INFO+tracepoint"' in tcp_log


@needs_testbed("linkem", "endpoint")
def test_blocked_quic_handshake_is_a_retried_failure_with_its_phase_and_the_run_exits_1(tmp_path: Path):
    """UDP blocked: the QUIC handshake times out. That is a failure at "handshake" (retried,
    never a protocol mismatch, never counted), and the grid ends non-zero naming the cell."""
    from typer.testing import CliRunner
    from longlook.cli import app

    path = tmp_path / "blocked.toml"
    path.write_text(scenario_text(extra_link="[links.middlebox]\nblock_udp = true", rounds=2, timeout_s=4))
    result = CliRunner().invoke(app, ["run", str(path), "--out", str(tmp_path / "exp"), "--no-link-check"])
    assert result.exit_code == 1, result.output
    assert "h3 has 0 of 2 rounds counted" in result.output, result.output
    with Store.open(tmp_path / "exp", read_only=True) as store:
        runs = store.runs_frame()
    h3, h2 = runs[runs.arm == "h3"], runs[runs.arm == "h2"]
    assert (h2.status == "ok").all()
    # retries = 1: each round's h3 was tried twice
    assert len(h3) == 4 and sorted(h3.attempt) == [1, 1, 2, 2], h3[["round", "attempt", "status"]]
    assert (h3.status == "failed").all(), h3[["status", "error"]].to_string()
    assert (h3.failure_phase == "handshake").all(), h3[["failure_phase", "error"]].to_string()
    assert set(counted_runs(runs, exclude_flagged=False).arm) == {"h2"}  # as the scenario says


@needs_testbed("linkem", "endpoint")
def test_sigterm_says_interrupted_and_resume_completes(tmp_path: Path):
    """SIGTERM is an interruption like Ctrl-C: the same line naming `--resume`, exit 143,
    every finished run kept; `--resume` then completes the grid without duplicates."""
    import signal
    import subprocess
    import sys
    import time

    path = tmp_path / "s.toml"
    path.write_text(scenario_text(rounds=4))
    out = tmp_path / "exp"
    cmd = [sys.executable, "-m", "longlook.cli", "run", str(path), "--out", str(out), "--no-link-check"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(list((out / "runs").glob("*/linkem.json"))) < 2:
        time.sleep(0.1)
    p.send_signal(signal.SIGTERM)
    output, _ = p.communicate(timeout=60)
    assert p.returncode == 128 + signal.SIGTERM, output
    assert "interrupted (SIGTERM)" in output and "--resume" in output, output
    with Store.open(out, read_only=True) as store:
        kept = len(store.runs_frame())
    assert 2 <= kept < 8
    done = subprocess.run(cmd + ["--resume"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    with Store.open(out, read_only=True) as store:
        runs = store.runs_frame()
        ended = store.experiment()["ended_at"]
    assert len(runs[runs.status == "ok"].drop_duplicates(["cell_id", "round", "arm"])) == 8
    assert not runs.duplicated(["cell_id", "round", "arm", "attempt"]).any()
    # a resume with nothing left to run leaves the experiment, its end time and logs alone
    stderr_log = out / "testbed" / "linkem.stderr"
    before = stderr_log.stat().st_mtime_ns if stderr_log.exists() else None
    again = subprocess.run(cmd + ["--resume"], capture_output=True, text=True, timeout=60)
    assert again.returncode == 0, again.stdout + again.stderr
    with Store.open(out, read_only=True) as store:
        assert store.experiment()["ended_at"] == ended and len(store.runs_frame()) == len(runs)
    assert (stderr_log.stat().st_mtime_ns if stderr_log.exists() else None) == before


@needs_testbed("linkem", "endpoint")
def test_a_full_disk_says_no_space_left_and_keeps_the_finished_runs(tmp_path: Path):
    import subprocess
    import sys

    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", str(small)], check=True)
    try:
        path = tmp_path / "s.toml"
        path.write_text(scenario_text(rounds=40))
        p = subprocess.run(
            [sys.executable, "-m", "longlook.cli", "run", str(path), "--out", str(small / "exp"), "--no-link-check"],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert p.returncode == 2, p.stdout + p.stderr
        assert "no space left" in p.stderr.lower() and "Traceback" not in p.stderr, p.stderr
        with Store.open(small / "exp", read_only=True) as store:
            assert len(store.runs_frame()) > 0  # what finished before the disk filled
    finally:
        subprocess.run(["umount", "-l", str(small)], check=False)


@needs_testbed("linkem", "endpoint")
def test_server_logs_off_leaves_no_server_log_and_costs_no_wait(tmp_path: Path):
    """`server_logs = false` (CPU measurements): our server writes no qlog or TCP log, the
    runs succeed without those artifacts, and none waits for a log that will not come."""
    sc = Scenario.from_toml("server_logs = false\n" + scenario_text(rounds=1), source="test")
    summary = Runner(sc, tmp_path, link_check=False).run()
    assert summary.ok == 2, summary
    with Store.open(tmp_path, read_only=True) as store:
        runs = store.runs_frame()
    assert (runs.status == "ok").all()
    for r in runs.itertuples():
        assert "qlog" not in r.artifacts and "tcp_log" not in r.artifacts, r.artifacts
    assert (tmp_path / "server-logs").is_dir() and not any((tmp_path / "server-logs").rglob("*.sqlog"))
