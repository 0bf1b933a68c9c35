"""msquic without a testbed: what it offers, the one release its wrapper builds, how its
server and client are called, its pins, and the conformance cells it gets."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from longlook.core.spec import parse_scenario
from longlook.errors import LonglookError
from longlook.stacks.base import ClientCall
from longlook.stacks.registry import resolve


def test_msquic_offers_cubic_then_bbr():
    s = resolve("msquic")
    assert s.ccs == ("cubic", "bbr") and s.cc(None) == "cubic"
    with pytest.raises(LonglookError, match="no congestion control 'newreno'"):
        s.cc("newreno")


def test_msquic_is_the_one_release_msquic_async_takes():
    s = resolve("msquic")
    assert s.spec == "msquic@2.5.1-beta" and s.library == "msquic"
    with pytest.raises(LonglookError, match="no version"):
        resolve("msquic@2.5.0-beta4")  # msquic-async 0.4.1 needs ^2.5.1-beta
    assert "quictls" in s.version_info() and s.version_info().startswith("msquic@2.5.1-beta")


def test_its_build_needs_cmake_perl_and_libnuma():
    assert set(resolve("msquic").apt_needs) == {"cmake", "perl", "libnuma-dev"}


def test_the_crate_pins_the_wrappers_and_ships_its_lockfile():
    s = resolve("msquic")
    manifest = (s.source / "Cargo.toml").read_text()
    assert s._pinned(manifest) == manifest  # the default version: the shipped lockfile holds
    for crate, version in (("msquic", "2.5.1-beta"), ("msquic-async", "0.4.1"), ("h3-msquic-async", "0.3.1")):
        assert re.search(rf'^{re.escape(crate)} = \{{ version = "={re.escape(version)}"', manifest, re.M), crate
    assert '"static"' in manifest  # one binary, msquic and quictls inside
    lock = (s.source / "Cargo.lock").read_text()
    assert 'name = "msquic"\nversion = "2.5.1-beta"' in lock
    assert 'name = "h3-msquic-async"\nversion = "0.3.1"' in lock


def test_server_and_client_take_the_shared_arguments(tmp_path: Path):
    s = resolve("msquic")
    server = s.server_argv(
        port=4433,
        cert=tmp_path / "cert.pem",
        key=tmp_path / "key.pem",
        root=tmp_path / "root",
        qlog_dir=tmp_path / "qlog",
        cc="bbr",
    )
    assert server.argv[0] == str(s.build_dir / "longlook-msquic") and server.argv[1] == "serve"
    assert server.prints_ready and server.argv[server.argv.index("--cc") + 1] == "bbr"
    assert server.argv[server.argv.index("--listen") + 1] == "0.0.0.0:4433"
    client = s.client_argv(
        url="https://198.18.2.2:4433/page/4x10k.html",
        mode="page",
        ca=tmp_path / "cert.pem",
        run_id="r1",
        out=tmp_path / "fetch.json",
        qlog_dir=tmp_path / "cq",
        timeout_s=30.0,
        cc="cubic",
    )
    assert client.argv[1] == "fetch" and client.argv[client.argv.index("--ca") + 1] == str(tmp_path / "cert.pem")
    logged = s.with_keylog(client, tmp_path / "keys.log")
    assert isinstance(logged, ClientCall) and logged.argv[-2:] == ["--keylog", str(tmp_path / "keys.log")]


def test_the_binary_maps_our_cc_names_onto_msquics_two():
    config = (resolve("msquic").source / "src" / "config.rs").read_text()
    assert (
        '"cubic" => Ok(msquic::ffi::QUIC_CONGESTION_CONTROL_ALGORITHM_QUIC_CONGESTION_CONTROL_ALGORITHM_CUBIC' in config
    )
    assert '"bbr" => Ok(msquic::ffi::QUIC_CONGESTION_CONTROL_ALGORITHM_QUIC_CONGESTION_CONTROL_ALGORITHM_BBR' in config


def test_conformance_cells_hold_each_cc_against_the_kernels():
    s = parse_scenario(
        'kind = "conformance"\nname = "c"\nrounds = 2\nstacks = ["msquic"]\n'
        "[[links]]\nrate_mbit = 20\nrtt_ms = 36\nbuffer_bytes = 90000\n"
    )
    got = {(c.entry.label, c.cc, c.kernel_cc) for c in s.cells()}
    assert got == {("msquic", "cubic", "cubic"), ("msquic", "bbr", "bbr")}


def test_a_build_is_stale_when_the_shared_h3_harness_changed(tmp_path, monkeypatch):
    import shutil

    from longlook.stacks.builds.rust_crate import HARNESS, HARNESS_DEP

    monkeypatch.setenv("LONGLOOK_STACKS_DIR", str(tmp_path))
    s = resolve("msquic")
    manifest = (s.source / "Cargo.toml").read_text()
    assert HARNESS_DEP in manifest and (HARNESS / "Cargo.toml").is_file()
    # what install leaves, without cargo: the crate with its manifest as built, the harness beside
    shutil.copytree(s.source, s.build_dir / "src", ignore=shutil.ignore_patterns("target"))
    (s.build_dir / "src" / "Cargo.toml").write_text(s._as_built(manifest))
    shutil.copytree(HARNESS, s.build_dir / HARNESS.name, ignore=shutil.ignore_patterns("target", "Cargo.lock"))
    s.binary.write_bytes(b"\x7fELF not really")
    assert f'path = "{s.build_dir / HARNESS.name}"' in s._as_built(manifest)
    assert s.installed()
    (s.build_dir / HARNESS.name / "src" / "client.rs").write_text("// older\n")
    assert not s.installed()  # rebuilt on its next use
