"""The runner through the real testbed: namespaces, linkem, the endpoint. Short scenarios."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from testbed_helpers import needs_testbed

from longlook.errors import LonglookError
from longlook.core.audit import linkem_delta
from longlook.core.execute import Runner
from longlook.kinds.pageload import Scenario
from longlook.core.status import counted_runs
from longlook.core.store import Store


def scenario(extra_link: str = "", rounds: int = 2, protocols: str = '["h3", "h2"]') -> Scenario:
    text = textwrap.dedent(f"""
        name = "runner-test"
        seed = 7
        rounds = {rounds}
        protocols = {protocols}
        timeout_s = 10
        retries = 1
        workloads = ["5x20k"]
        [[links]]
        rate_mbit = 50
        rtt_ms = 10
        buffer_bytes = 60000
        {extra_link}
        [options]
        zero_rtt = false
    """)
    return Scenario.from_toml(text, source="test")


def test_linkem_delta_subtracts_direction_counters():
    before = {"elapsed_s": 1.0, "directions": {"up": {"packets": 10, "bytes": 1000}}}
    after = {"elapsed_s": 3.5, "directions": {"up": {"packets": 25, "bytes": 4000},
                                              "down": {"packets": 5, "bytes": 700}}}
    delta = linkem_delta(before, after)
    assert delta["elapsed_s"] == 2.5
    assert delta["directions"]["up"] == {"packets": 15, "bytes": 3000}
    assert delta["directions"]["down"] == {"packets": 5, "bytes": 700}


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
    # TCP's congestion states come from the kernel's tcp_cong_state_set tracepoint (exact),
    # not only from TCP_INFO samples, when the kernel has it
    from longlook.testbed.tracefs import tcp_tracefs
    if tcp_tracefs() is not None:
        tcp_log = (tmp_path / runs[runs.arm == "h2"].iloc[0].artifacts["tcp_log"]).read_text()
        assert '"source":"TCP_INFO+tracepoint"' in tcp_log


@needs_testbed("linkem", "endpoint")
def test_quic_blocked_by_middlebox_is_labelled_and_never_counted_as_quic(tmp_path: Path):
    sc = scenario(extra_link="[links.middlebox]\nblock_udp = true", rounds=2)
    summary = Runner(sc, tmp_path, link_check=False).run()
    assert summary.mismatched + summary.failed >= 2
    with Store.open(tmp_path, read_only=True) as store:
        runs = store.runs_frame()
    h3 = runs[runs.arm == "h3"]
    h2 = runs[runs.arm == "h2"]
    assert (h2.status == "ok").all()
    assert len(h3) >= 2 and not (h3.status == "ok").any()
    assert (h3.status == "protocol_mismatch").all(), h3[["status", "error"]].to_string()
    counted = counted_runs(runs)
    assert set(counted.arm) == {"h2"}
