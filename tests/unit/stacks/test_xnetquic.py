"""golang.org/x/net/quic (stack `go-x-net`) without a testbed: how it is built and called, what
it declares it cannot do, and its qlog in our vocabulary. Its server and client over the
testbed: tests/testbed/stacks/test_stacks_testbed.py (every registered stack)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from longlook.qlog import parse_records
from longlook.stacks.base import CLIENT_CASES
from longlook.stacks.registry import STACKS, resolve
from longlook.wire.cases import CASES


def test_registered_built_from_the_go_module_proxy_with_newreno_only():
    assert "go-x-net" in STACKS
    s = resolve("go-x-net")
    assert s.spec == "go-x-net@v0.62.0" and s.module == "golang.org/x/net" and s.ccs == ("newreno",)
    assert s.release_registry.kind == "go" and resolve("go-x-net@0.61.0").version == "v0.61.0"
    go_mod = (s.folder / "go.mod").read_text()
    assert "golang.org/x/net v0.62.0" in go_mod and "github.com/quic-go/qpack v0.6.0" in go_mod
    assert {f.name for f in s._program()} == {"main.go", "h3.go", "h3_test.go", "go.mod", "go.sum"}


def test_what_it_cannot_do_is_declared_with_a_reason_for_real_cases():
    s = resolve("go-x-net")
    for side in (s.unsupported_as_server, s.unsupported_as_client):
        assert set(side) <= set(CASES) and all(len(why) > 20 for why in side.values())
    # no interop case can be asked of its client: each one it cannot do is declared
    assert s.client_cases == () and set(CLIENT_CASES) <= set(s.unsupported_as_client)
    assert "0-RTT is not supported" in s.unsupported_as_server["zerortt"]


def test_commands_follow_the_harness_contract(tmp_path: Path):
    s = resolve("go-x-net")
    server = s.server_argv(
        port=4433,
        cert=tmp_path / "c.pem",
        key=tmp_path / "k.pem",
        root=tmp_path / "r",
        qlog_dir=tmp_path / "q",
        cc="newreno",
    )
    assert server.argv[:4] == [str(s.build_dir / "longlook-xnetquic"), "serve", "--listen", "0.0.0.0:4433"]
    assert server.prints_ready and server.env == {"QLOGDIR": str(tmp_path / "q")}
    client = s.client_argv(
        url="https://198.18.2.2:4433/page/4x10k.html", mode="page", ca=tmp_path / "c.pem", run_id="r1",
        out=tmp_path / "fetch.json", qlog_dir=tmp_path / "cq", timeout_s=30.0, cc="newreno",
    )  # fmt: skip
    assert client.argv[1] == "fetch" and client.argv[client.argv.index("--mode") + 1] == "page"
    keyed = s.with_keylog(client, tmp_path / "keys.log")
    assert keyed.argv[-2:] == ["--keylog", str(tmp_path / "keys.log")] and keyed.argv[:-2] == client.argv


def _record(doc: dict) -> bytes:
    return b"\x1e" + json.dumps(doc).encode() + b"\n"


def test_its_qlog_reads_in_our_vocabulary(tmp_path: Path):
    """The shape x/net/quic's qlog handler writes (seen over loopback): a JSON-SEQ header,
    relative times, metrics that carry the window only now and then, its own state names."""
    raw = tmp_path / "4701ce34a0631c95_server.sqlog"
    raw.write_bytes(
        _record({"qlog_version": "0.3", "qlog_format": "JSON-SEQ",
                 "trace": {"common_fields": {"protocol_type": ["QUIC"], "time_format": "relative"},
                           "vantage_point": {"name": "go quic", "type": "server"}}})
        + _record({"time": 0.03, "name": "connectivity:connection_started", "data": {"src_port": 4433}})
        + _record({"time": 0.9, "name": "recovery:metrics_updated", "data": {"bytes_in_flight": 1200}})
        + _record({"time": 1.0, "name": "recovery:metrics_updated",
                   "data": {"congestion_window": 12000, "bytes_in_flight": 2400, "smoothed_rtt": 20.0}})
        + _record({"time": 1.2, "name": "recovery:congestion_state_updated",
                   "data": {"old": "slow_start", "new": "application_limited"}})
    )  # fmt: skip
    out = tmp_path / "server.sqlog"
    resolve("go-x-net").normalise_qlog(raw, out)
    header, *events = parse_records(out.read_bytes())
    assert header["trace"]["longlook"]["stack"] == "go-x-net"
    states = [e["data"]["new"] for e in events if e["name"] == "recovery:congestion_state_updated"]
    assert states == ["ApplicationLimited"]
    assert any(e["data"].get("congestion_window") == 12000 for e in events if e["name"] == "recovery:metrics_updated")


@pytest.mark.skipif(shutil.which("go") is None, reason="needs Go (scripts/setup.sh --all-stacks builds with it)")
def test_the_go_tests_of_its_http3_and_the_shared_fetch_package_pass(tmp_path: Path):
    # varints (RFC 9000's examples), a HEADERS frame through QPACK and back, no file outside the
    # root; the shared page load; run on a copy with the source tree's layout (the replace line)
    stacks = Path(resolve("go-x-net").folder).parents[1]
    for part in ("adapters/xnetquic", "builds/gofetch"):
        shutil.copytree(stacks / part, tmp_path / part)
    env = {**os.environ, "GOFLAGS": "-mod=readonly"}
    for part in ("adapters/xnetquic", "builds/gofetch"):
        done = subprocess.run(["go", "test", "./..."], cwd=tmp_path / part, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr


def test_a_build_is_stale_when_the_shared_fetch_package_changed(tmp_path: Path, monkeypatch):
    from longlook.stacks.builds.go_module import GOFETCH

    monkeypatch.setenv("LONGLOOK_STACKS_DIR", str(tmp_path))
    s = resolve("go-x-net")
    # what install leaves, without Go: the program, its go.mod at the release, the package beside
    src = s.build_dir / "src"
    src.mkdir(parents=True)
    for f in s._program():
        shutil.copy(f, src / f.name)
    shutil.copytree(GOFETCH, s.build_dir / GOFETCH.name)
    s.binary.write_bytes(b"\x7fELF not really")
    assert s.installed()
    (s.build_dir / GOFETCH.name / "gofetch.go").write_text("package gofetch\n")
    assert not s.installed()  # rebuilt on its next use
