"""The soak's books (bench/soak.py): a fault is judged against the fetch it could have harmed,
on the clock both are timed with, and a killed client is reported as killed. On a real
testbed: tests/testbed/bench/test_soak_books_testbed.py."""

from __future__ import annotations

from datetime import timezone
from pathlib import Path

from longlook.bench.soak import Fault, _reasons, faults_in_counted_fetches, tally


def run(run_id: str, start: float | None, end: float | None, server_pid: int | None = 100) -> dict:
    return {"run_id": run_id, "fetch_start_mono_s": start, "fetch_end_mono_s": end, "server_pid": server_pid}


def test_a_kill_counts_against_a_run_only_inside_its_fetch_and_of_its_own_server():
    runs = [run("a", 10.0, 11.0), run("b", 20.0, 21.0, server_pid=200), run("c", 30.0, 31.0)]
    faults = [
        Fault("kill_server", 10.5, 10.5, pid=100),  # a's server, mid-fetch: a wrong result
        Fault("kill_server", 11.2, 11.2, pid=100),  # after a's fetch (its logs being taken)
        Fault("kill_server", 20.5, 20.5, pid=100),  # another link's idle server, during b
        Fault("kill_client", 30.9, 30.9, pid=7),  # c's client, mid-fetch
        Fault("kill_client", 29.0, 29.0, pid=8),
    ]  # before c's fetch began
    kills, stops, unjudged = faults_in_counted_fetches(runs, faults)
    assert [k.split(":")[0] for k in kills] == ["a", "c"], kills
    assert "0.500 s into a 1.000 s fetch" in kills[0]
    assert not stops and not unjudged


def test_a_linkem_stop_counts_when_it_overlaps_the_fetch_and_a_run_without_a_window_is_unjudged():
    runs = [run("a", 10.0, 11.0), run("b", 20.0, 21.0), run("c", None, None), run("d", float("nan"), 5.0)]
    faults = [
        Fault("pause_linkem", 10.9, 11.05, "pid 1, 150 ms"),  # overlaps a's end
        Fault("pause_linkem", 21.01, 21.2, "pid 1, 190 ms"),  # just after b
        Fault("disk_full", 10.0, 13.0),
        Fault("kill_driver", 20.5, 20.5),
    ]
    kills, stops, unjudged = faults_in_counted_fetches(runs, faults)
    assert not kills
    assert len(stops) == 1 and stops[0].startswith("a: linkem stopped pid 1, 150 ms, 0.900 s into"), stops
    assert [u.split(":")[0] for u in unjudged] == ["c", "d"]


def test_a_linkem_stop_counts_only_over_what_the_run_measured():
    """The fetch (10.0-11.0 s) measured its page from 10.1 s (its first packet, on the wall
    clock 1000.1 s) for 600 ms; before and after, the client was starting and exiting."""
    from datetime import datetime

    r = {
        **run("a", 10.0, 11.0),
        "fetch_start_unix_s": 1000.0,
        "plt_ms": 600.0,
        "started_at": datetime.fromtimestamp(1000.1, timezone.utc).replace(tzinfo=None),
    }
    stop = lambda t0, t1: Fault("pause_linkem", t0, t1, "pid 1")  # noqa: E731
    assert not faults_in_counted_fetches([r], [stop(10.75, 10.9), stop(10.0, 10.09)])[1]
    stops = faults_in_counted_fetches([r], [stop(10.65, 10.8), stop(10.05, 10.12)])[1]
    assert len(stops) == 2 and "(its page load: 0.098-0.702 s)" in stops[0], stops


def test_reasons_are_tallied_with_their_numbers_folded():
    assert tally(["failed: exit code 137", "failed: exit code 9", "timeout: timed out", None]) == {
        "failed: exit code N": 2,
        "timeout: timed out": 1,
        "None": 1,
    }
    # a run's stored reasons are "; "-joined, and a reason may hold "; " in its parentheses
    assert _reasons(
        "a release 5.3 ms late (limit 5 ms); linkem woke 8.7 ms later than it asked "
        "(linkem stalled; limit 5 ms); machine stalled 8.6 ms (limit 5 ms)"
    ) == [
        "a release 5.3 ms late (limit 5 ms)",
        "linkem woke 8.7 ms later than it asked (linkem stalled; limit 5 ms)",
        "machine stalled 8.6 ms (limit 5 ms)",
    ]


def test_a_killed_client_is_reported_as_killed_not_by_its_last_note(tmp_path: Path):
    from longlook.stacks.fetch_result import fetch_result

    r = fetch_result(
        tmp_path / "fetch.json", -9, "udp buffers: asked 4194304, granted recv 425984 send 425984\n", "h3", 0.2
    )
    assert (r.status, r.error) == ("failed", "no JSON result: killed by signal 9 (SIGKILL)")
    r = fetch_result(tmp_path / "fetch.json", 1, "error: connection refused\n", "h3", 0.2)
    assert r.error == "no JSON result: error: connection refused"
    # an abort says why before its backtrace (gm-quic's client against a first packet number
    # of 1,749,238,060: its receive journal asked for one slot per packet number from 0)
    stderr = "memory allocation of 153932949280 bytes failed\nstack backtrace:\n   0: std::alloc::rust_oom\n"
    r = fetch_result(tmp_path / "fetch.json", -6, stderr, "h3", 0.2)
    assert r.error == ("no JSON result: killed by signal 6 (SIGABRT): memory allocation of 153932949280 bytes failed")
