"""gm-quic without a network: what it offers, its pins (dquic with the h3-shim that takes it),
the commands its adapter builds, and its qlog read in our vocabulary."""

from __future__ import annotations

import json
import re

import pytest

from longlook.errors import LonglookError
from longlook.qlog.reader import RECORD_SEPARATOR, parse_records
from longlook.stacks.adapters.gmquic import H3_SHIM
from longlook.stacks.registry import resolve


def test_newreno_is_its_only_congestion_control_in_adapter_and_binary():
    s = resolve("gm-quic")
    assert s.ccs == ("newreno",)
    with pytest.raises(LonglookError, match="no congestion control 'cubic'"):
        s.cc("cubic")
    config_rs = (s.source / "src" / "config.rs").read_text()
    assert re.search(r'pub const CCS: &\[&str\] = &\["newreno"\];', config_rs)  # what `--cc` accepts


def test_pinned_to_the_dquic_release_h3_shim_takes():
    s = resolve("gm-quic")
    assert (s.version, s.library, s.binary_name) == ("0.5.1", "dquic", "longlook-gm-quic")
    with pytest.raises(LonglookError, match="no version"):
        resolve("gm-quic@0.8.1")  # no h3-shim takes dquic 0.6 and later
    manifest = (s.source / "Cargo.toml").read_text()
    assert 'dquic = { version = "=0.5.1"' in manifest and f'h3-shim = {{ version = "={H3_SHIM}"' in manifest
    lock = (s.source / "Cargo.lock").read_text()
    assert 'name = "dquic"\nversion = "0.5.1"' in lock and f'name = "h3-shim"\nversion = "{H3_SHIM}"' in lock
    assert s._pinned(manifest) == manifest  # the default: the shipped lockfile holds
    s.version = "0.5.0"  # a rewrite touches dquic's pin only, never h3-shim's
    pinned = s._pinned(manifest)
    assert 'dquic = { version = "=0.5.0", features = ["telemetry"] }' in pinned
    changed = [(a, b) for a, b in zip(manifest.splitlines(), pinned.splitlines()) if a != b]
    assert len(changed) == 1 and changed[0][0].startswith("dquic = ")
    assert f"h3-shim {H3_SHIM}" in resolve("gm-quic").version_info()


def test_commands_follow_the_rust_crate_contract(tmp_path):
    s = resolve("gm-quic")
    server = s.server_argv(
        port=4440, cert=tmp_path / "c.pem", key=tmp_path / "k.pem", root=tmp_path, qlog_dir=tmp_path / "q", cc="newreno"
    )
    assert server.prints_ready and server.argv[0] == str(s.build_dir / "longlook-gm-quic")
    assert server.argv[1:4] == ["serve", "--listen", "0.0.0.0:4440"]
    assert server.argv[server.argv.index("--cc") + 1] == "newreno"
    client = s.client_argv(
        url="https://198.18.2.2:4440/page/10x20k.html",
        mode="page",
        ca=tmp_path / "c.pem",
        run_id="r1",
        out=tmp_path / "fetch.json",
        qlog_dir=tmp_path / "q",
        timeout_s=30.0,
        cc="newreno",
    )
    assert client.argv[1] == "fetch" and client.argv[client.argv.index("--mode") + 1] == "page"
    keyed = s.with_keylog(client, tmp_path / "keys.log")
    assert keyed.argv[-2:] == ["--keylog", str(tmp_path / "keys.log")]
    assert keyed.argv[:-2] == client.argv


def _record(obj) -> bytes:
    return RECORD_SEPARATOR + json.dumps(obj).encode() + b"\n"


def test_its_qlog_reads_in_our_vocabulary(tmp_path):
    """The shape qevent's LegacySeqLogger writes (seen over loopback): a JSON-SEQ header,
    absolute times in ms, ssthresh u64::MAX while unset, no congestion states."""
    t = 1795948936540.0
    raw = tmp_path / "f8c09e8cdf1effa8_client.sqlog"
    raw.write_bytes(
        _record(
            {
                "qlog_version": "0.3",
                "qlog_format": "JSON-SEQ",
                "title": raw.name,
                "trace": {"vantage_point": {"type": "client"}},
            }
        )
        + _record({"time": t, "name": "connectivity:connection_started", "data": {"dst_port": 4433}})
        + _record(
            {
                "time": t + 2.0,
                "name": "recovery:metrics_updated",
                "data": {"congestion_window": 12291, "ssthresh": 18446744073709551615},
            }
        )
        + _record({"time": t + 2.1, "name": "recovery:metrics_updated", "data": {"smoothed_rtt": 1.6}})
        + _record({"time": t + 9.0, "name": "recovery:packet_lost", "data": {"header": {"packet_number": 7}}})
        + _record(
            {"time": t + 9.1, "name": "recovery:metrics_updated", "data": {"congestion_window": 6145, "ssthresh": 6145}}
        )
    )
    out = tmp_path / "client.sqlog"
    resolve("gm-quic").normalise_qlog(raw, out)
    header, *events = parse_records(out.read_bytes())
    assert header["trace"]["longlook"] == {"stack": "gm-quic", "states": "derived", "original_format": "JSON-SEQ"}
    assert events[0]["time"] == 0.0
    first_metrics = next(e for e in events if e["name"] == "recovery:metrics_updated")
    assert first_metrics["data"]["congestion_window"] == 12291 and first_metrics["data"]["ssthresh"] is None
    states = [e["data"]["new"] for e in events if e["name"] == "recovery:congestion_state_updated"]
    assert states[0] == "SlowStart" and "Recovery" in states
