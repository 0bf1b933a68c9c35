"""s2n-quic and kwik without a testbed: what they offer, how their pins are rewritten for
another release, and the conformance cells they get (each CC against the kernel's)."""

from __future__ import annotations

import pytest

from longlook.core.spec import parse_scenario
from longlook.errors import LonglookError
from longlook.stacks.registry import resolve


def test_each_offers_its_own_congestion_controls():
    assert resolve("s2n-quic").ccs == ("cubic", "bbr")
    assert resolve("kwik").ccs == ("newreno",)  # kwik has NewReno only
    with pytest.raises(LonglookError, match="no congestion control 'bbr'"):
        resolve("kwik").cc("bbr")


def test_another_s2n_quic_release_rewrites_the_pin_and_only_the_pin():
    s = resolve("s2n-quic@1.90.0")
    manifest = (s.source / "Cargo.toml").read_text()
    pinned = s._pinned(manifest)
    assert 's2n-quic = { version = "=1.90.0"' in pinned
    assert pinned.replace("=1.90.0", "=1.91.0") == manifest
    assert resolve("s2n-quic")._pinned(manifest) == manifest  # the default: the shipped lockfile holds


def test_kwik_is_pinned_to_the_release_flupke_was_built_with():
    with pytest.raises(LonglookError, match="no version"):
        resolve("kwik@0.10.9")  # needs agent15 3.2, which Maven Central does not serve
    assert "flupke 0.9.4" in resolve("kwik").version_info()


def test_conformance_cells_hold_each_cc_against_the_kernels():
    s = parse_scenario(
        'kind = "conformance"\nname = "c"\nrounds = 2\nstacks = ["s2n-quic", "kwik"]\n'
        "[[links]]\nrate_mbit = 20\nrtt_ms = 36\nbuffer_bytes = 90000\n"
    )
    got = {(c.entry.label, c.cc, c.kernel_cc) for c in s.cells()}
    assert got == {("s2n-quic", "cubic", "cubic"), ("s2n-quic", "bbr", "bbr"), ("kwik", "newreno", "reno")}
