"""What a testbed is built from, without building one: link profiles load or name their bad
field, and a host that cannot build one (not root, a missing tool, a bad CPU latency
setting) gets one clear error. Its lifecycle on real namespaces:
tests/testbed/testbed/test_testbed_lifecycle.py."""

import os
from pathlib import Path

import pytest

from longlook.errors import LonglookError
from longlook.linkprofile import LinkProfile, load_link_profile
from repo_paths import ROOT

PROFILE = LinkProfile(name="t", rate_mbit=50, delay_ms=5, buffer_bytes=100_000)


@pytest.mark.parametrize(
    "text,field",
    [
        ("rate_mbit = 10\ndelay_ms = -1\n", "delay_ms"),
        ("rate_mbps = 10\n", "rate_mbps: unknown field"),
        ("delay_ms = 10\n", "exactly one of rate_mbit or trace"),
        ("rate_mbit = 10\n[up]\nloss = 1.5\n", "up.loss"),
        ("rate_mbit = 10\nbuffer_bytes = 3000\nbuffer_packets = 2\n", "buffer_bytes or buffer_packets"),
    ],
)
def test_malformed_profile_names_its_field(tmp_path: Path, text: str, field: str):
    f = tmp_path / "bad.toml"
    f.write_text(text)
    with pytest.raises(LonglookError, match=field):
        load_link_profile(f)


def test_shipped_profiles_load():
    for f in (ROOT / "link-profiles").glob("*.toml"):
        load_link_profile(f)


def test_a_bad_cpu_latency_setting_is_one_error(monkeypatch):
    from longlook.testbed.host import TestbedError, cpu_wakeup_latency_us

    monkeypatch.setenv("LONGLOOK_CPU_LATENCY_US", "-3")
    with pytest.raises(TestbedError, match="LONGLOOK_CPU_LATENCY_US='-3' is not a whole number"):
        cpu_wakeup_latency_us()


def test_not_root_is_a_clear_error(monkeypatch):
    from longlook.testbed import Testbed, TestbedError

    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(TestbedError, match="needs root .* run it with sudo"):
        Testbed(PROFILE).open()


def test_missing_tool_is_a_clear_error(monkeypatch):
    from longlook.testbed import host

    host.tool.cache_clear()
    monkeypatch.setattr(host.shutil, "which", lambda *a, **k: None)
    try:
        with pytest.raises(host.TestbedError, match="'ethtool' is not installed"):
            host.tool("ethtool")
    finally:
        host.tool.cache_clear()
