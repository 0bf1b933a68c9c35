"""Each installed QUIC stack, server and client, loads a 10-object page over h3 through the
testbed (the page-load kind, through core.execute.Runner), against itself and against our
endpoint; its qlogs (and our server's) parse (raw: the stack's JSON or JSON-SEQ, with packet and
metrics events) and read
into Table-3 states. Two versions of one stack run side by side, their versions recorded."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from longlook.qlog import RECORD_SEPARATOR, read_qlog
from longlook.qlog.dialects import load_any
from longlook.analyses.states import analyse_runs, load_runs
from longlook.analyses.states.export import cwnd_groups
from longlook.analyses.states.trace import QUIC_STATES, StateTrace
from longlook.core.execute import Runner
from longlook.core.store import Store
from longlook.kinds.pageload import Scenario
from longlook.stacks.registry import STACKS, resolve
from testbed_helpers import needs_testbed

LINK = """
seed = 1
rounds = 1
retries = 2
timeout_s = 30
[[links]]
rate_mbit = 100
rtt_ms = 36
buffer_bytes = 450000
[workloads]
object_count = 10
object_size = "10k"
[fidelity]  # not about fidelity: a run flagged on a busy machine still counts
exclude_flagged = false
"""


def _needs_stack(spec: str):
    """Skip where a stack is not installed, except in CI (scripts/setup.sh installs all)."""
    if resolve(spec).installed():
        return []
    reason = f"{spec} is not installed (longlook stacks install {spec})"
    return [pytest.mark.skip(reason=reason)] if not os.environ.get("CI") else []


def _run(tmp_path: Path, toml: str):
    sc = Scenario.from_toml(toml)
    summary = Runner(sc, tmp_path, link_check=False).run()
    with Store.open(tmp_path, read_only=True) as store:
        runs = store.runs_frame()
        versions = store.experiment()["versions"]
    return summary, runs, versions


def _check_raw(path: Path, qlog_format: str = "JSON-SEQ") -> None:
    """The file is a qlog in the stack's serialisation, every record whole JSON (JSON-SEQ: RFC
    7464 records, header first; JSON: one document with traces), with packet events (numbered)
    and metrics (with a window) under their 0.3 names or the stack's draft's (`quic:*`)."""
    raw = path.read_bytes()
    if qlog_format == "JSON-SEQ":
        assert raw[:1] == RECORD_SEPARATOR, (path, raw[:40])
        records = [json.loads(r) for r in raw.split(RECORD_SEPARATOR)[1:]]  # strict: no torn record
        assert {"qlog_version", "file_schema"} & set(records[0]), (path, records[0])
    else:
        assert "traces" in json.loads(raw), path
    header, events = load_any(path)
    names = {e["name"] for e in events}
    assert {"transport:packet_sent", "recovery:metrics_updated"} <= names, (path, sorted(names))
    sent = [e for e in events if e["name"] == "transport:packet_sent"]
    assert all(isinstance(e["time"], (int, float)) for e in events)
    assert any(((e.get("data") or {}).get("header") or {}).get("packet_number") is not None for e in sent), sent[:2]
    metrics = [e.get("data") or {} for e in events if e["name"] == "recovery:metrics_updated"]
    assert any(m.get("congestion_window", m.get("cwnd")) for m in metrics), metrics[:2]


def _check_states(path: Path) -> StateTrace:
    log = read_qlog(path)
    trace = StateTrace.from_qlog(log, path.name)
    assert len(trace.states) > 1 and set(trace.states) <= set(QUIC_STATES), trace.states
    return trace


@needs_testbed("linkem", "endpoint")
@pytest.mark.parametrize("name", [pytest.param(n, marks=_needs_stack(n)) for n in STACKS])
def test_stack_server_and_client_load_a_page_over_h3(tmp_path: Path, name: str):
    toml = f"""name = "stack-{name}"
{LINK}
[[arms]]
label = "{name}"
protocol = "h3"
server = "{name}"
client = "{name}"
[[arms]]
label = "ours-client"
protocol = "h3"
server = "{name}"
zero_rtt = false
[[arms]]
label = "ours-server"
protocol = "h3"
client = "{name}"
"""
    summary, runs, versions = _run(tmp_path, toml)
    stack = resolve(name)
    ok = runs[runs.status == "ok"]
    # a server that cannot serve our client (declared: gm-quic's needs SNI) fails that arm
    serves_ours = "handshake" not in stack.unsupported_as_server
    expected = {name, "ours-server"} | ({"ours-client"} if serves_ours else set())
    assert set(ok.arm) == expected, runs[["arm", "status", "error"]].to_string()
    assert (ok.protocol_negotiated == "h3").all()
    assert stack.spec in versions["stacks"]
    for r in ok.itertuples():
        arts = r.artifacts
        fetch = json.loads((tmp_path / arts["fetch"]).read_text())
        assert len(fetch["objects"]) == 11 and fetch["bytes"] >= 100_000, fetch
        assert all(o["status"] == 200 for o in fetch["objects"])
        if r.arm != "ours-server":  # the stack's server wrote the qlog, if it writes one
            if stack.writes_qlog:
                _check_raw(tmp_path / arts["qlog_raw"], stack.qlog_format)
                _check_states(tmp_path / arts["qlog"])
            else:
                assert "qlog" not in arts and "qlog_raw" not in arts, arts
        else:  # ours: quinn's packet events merged with our controller's recovery events
            _check_raw(tmp_path / arts["qlog"])
            _check_states(tmp_path / arts["qlog"])
        if r.arm != "ours-client" and stack.writes_qlog:  # the stack's client did
            _check_raw(tmp_path / arts["client_qlog_raw"], stack.qlog_format)
            _check_states(tmp_path / arts["client_qlog"])
    if not serves_ours:
        failed = runs[runs.arm == "ours-client"]
        assert len(failed) and (failed.status != "ok").all(), failed[["status", "error"]].to_string()
    if stack.writes_qlog:
        _check_machines_per_stack(tmp_path, name, versions["stacks"][stack.spec], serves_ours)


# congestion_state_updated in the stack's qlog (else the states are derived from its metrics)
EMITS_STATES = {
    "quic-go": True,
    "quiche": True,
    "aioquic": False,
    "ngtcp2": False,
    "tquic": False,
    "s2n-quic": False,
    "kwik": False,
    "gm-quic": False,
}  # s2n-quic: its Cubic derived, its BBR emitted


def _check_machines_per_stack(directory: Path, name: str, version: str, serves_ours: bool = True) -> None:
    """The states analysis labels each machine by its server stack at its version (not all
    "QUIC"), says whether the states were emitted or derived, and draws a cwnd timeline per
    stack."""
    a = analyse_runs(load_runs(directory))
    by_arm = {m.arm: m for m in a.machines}
    assert by_arm["ours-server"].stack == "ours" and by_arm["ours-server"].states_source == "emitted"
    for arm in (name, "ours-client") if serves_ours else (name,):
        m = by_arm[arm]
        assert m.stack == version and version in m.label, (m.stack, version)
        if name in EMITS_STATES:
            assert m.states_source == ("emitted" if EMITS_STATES[name] else "derived"), m.states_source
    assert [stack for stack, _ in cwnd_groups(a)] == ["ours", version]


# (new, old): two builds of quic-go from the Go proxy; Debian's ngtcp2 beside bookworm-backports'
VERSIONS = [("quic-go@v0.65.0", "quic-go@v0.64.1"), ("ngtcp2@1.11.0", "ngtcp2@0.12.1")]


@needs_testbed("linkem", "endpoint")
@pytest.mark.parametrize(
    "specs", [pytest.param(p, marks=[m for s in p for m in _needs_stack(s)][:1], id=p[0]) for p in VERSIONS]
)
def test_two_versions_of_a_stack_run_side_by_side(tmp_path: Path, specs):
    new, old = specs
    toml = f"""name = "versions"
{LINK}
[[arms]]
label = "new"
protocol = "h3"
server = "{new}"
client = "{new}"
[[arms]]
label = "old"
protocol = "h3"
server = "{old}"
client = "{old}"
"""
    summary, runs, versions = _run(tmp_path, toml)
    assert set(runs[runs.status == "ok"].arm) == {"new", "old"}, runs[["arm", "status", "error"]].to_string()
    assert set(versions["stacks"]) == {new, old}


@needs_testbed("linkem", "endpoint")
def test_a_page_of_more_objects_than_a_server_opens_streams_for_at_once_loads(tmp_path: Path):
    # 121 request streams where servers allow 100 at a time (quinn's default, and most
    # stacks'): a client must wait for MAX_STREAMS, and a server must grant it as streams end
    installed = [n for n in STACKS if resolve(n).installed() or os.environ.get("CI")]
    arms = []
    for name in installed:
        arms.append(f'[[arms]]\nlabel = "{name}_ours"\nprotocol = "h3"\nclient = "{name}"\n')
        if not resolve(name).unsupported_as_server.get("handshake"):  # gm-quic's serves its own client only
            # (one connection each: our client's 0-RTT is the matrix's own case)
            arms.append(f'[[arms]]\nlabel = "ours_{name}"\nprotocol = "h3"\nserver = "{name}"\nzero_rtt = false\n')
    toml = 'name = "many-streams"\n' + LINK.replace("object_count = 10", "object_count = 120").replace('"10k"', '"1k"')
    _, runs, _ = _run(tmp_path, toml + "".join(arms))
    bad = runs[runs.status != "ok"]
    assert bad.empty and len(runs) == len(arms), bad[["arm", "error"]].to_string()
