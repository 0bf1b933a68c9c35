"""Our endpoint against quinn-proto releases (`ours@V`, stacks/adapters/ours/, stacks/adapters/ours/quinn_build.py):
the supported range, the quinn paired with each quinn-proto, the spec as server, client and
sweep, and the errors. The registry is replaced by recorded index lines (no network); the
build itself is exercised by `longlook stacks install ours@V` (docs/releases.md)."""

from __future__ import annotations

import json

import pytest

from longlook.errors import LonglookError
from longlook.stacks.adapters.ours import quinn_build
from longlook.stacks.registry import binary_digests, is_stack, resolve, versions_of


def _quinn_line(vers: str, proto_req: str, yanked: bool = False) -> dict:
    # as crates.io's index spells it: quinn renames quinn-proto to `proto`
    return {
        "name": "quinn",
        "vers": vers,
        "yanked": yanked,
        "deps": [
            {"name": "proto", "package": "quinn-proto", "req": proto_req, "kind": "normal"},
            {"name": "udp", "package": "quinn-udp", "req": "^0.5", "kind": "normal"},
        ],
    }


# quinn's real requirements (crates.io index, 2026-11)
QUINN_INDEX = [
    _quinn_line("0.11.8", "^0.11.12"),
    _quinn_line("0.11.9", "^0.11.12"),
    _quinn_line("0.11.10", "^0.11.13", yanked=True),
    _quinn_line("0.11.11", "^0.11.15"),
    _quinn_line("0.11.12", "^0.11.18"),
]


def test_each_quinn_proto_release_is_paired_with_the_quinn_that_was_current_for_it():
    pairs = {
        p: quinn_build.quinn_for(p, QUINN_INDEX)
        for p in ("0.11.13", "0.11.14", "0.11.15", "0.11.17", "0.11.18", "0.11.19")
    }
    assert pairs == {
        "0.11.13": "0.11.9",
        "0.11.14": "0.11.9",
        "0.11.15": "0.11.11",
        "0.11.17": "0.11.11",
        "0.11.18": "0.11.12",
        "0.11.19": "0.11.12",
    }  # never the yanked 0.11.10
    with pytest.raises(LonglookError, match="no quinn 0.11 release accepts"):
        quinn_build.quinn_for("0.11.11", [_quinn_line("0.11.12", "^0.11.18")])


def test_releases_outside_the_supported_range_are_one_error_naming_it():
    for bad in ("0.11.12", "0.10.6", "0.12.0", "latest"):
        with pytest.raises(LonglookError, match="builds against quinn-proto 0.11.13 up to") as e:
            resolve(f"ours@{bad}")
        assert "quinn-proto release" in e.value.hint
    assert resolve("ours@0.11.15").spec == "ours@0.11.15"
    assert resolve("ours").version == "workspace"


def test_a_release_build_is_a_cached_stack_and_plain_ours_stays_the_workspace_build(tmp_path, monkeypatch):
    monkeypatch.setenv("LONGLOOK_STACKS_DIR", str(tmp_path))
    assert is_stack("ours@0.11.15") and not is_stack("ours") and not is_stack("ours@workspace")
    s = resolve("ours@0.11.15")
    assert s.build_dir == tmp_path / "ours-0.11.15" and s.binary == tmp_path / "ours-0.11.15" / "endpoint"
    assert not s.installed()
    # a build from this checkout's endpoint code counts as installed; from other code, not
    s.build_dir.mkdir()
    s.binary.write_bytes(b"\x7fELF not really")
    build = {
        "quinn": "0.11.11",
        "quinn_proto": "0.11.15",
        "quinn_udp": "0.5.16",
        "endpoint_source": quinn_build.source_digest(),
    }
    (s.build_dir / quinn_build.BUILD_FILE).write_text(json.dumps(build))
    assert s.installed()
    assert versions_of(["ours@0.11.15", "ours"]) == {"ours@0.11.15": s.version_info()}
    assert "quinn 0.11.11, quinn-proto 0.11.15, quinn-udp 0.5.16" in s.version_info()
    assert set(binary_digests(["ours@0.11.15"])) == {"ours@0.11.15"}
    (s.build_dir / quinn_build.BUILD_FILE).write_text(json.dumps({**build, "endpoint_source": "0" * 12}))
    assert not s.installed()  # stale: rebuilt on its next use


def test_the_lockfile_s_quinn_versions_are_read_and_requirements_floors_parsed(tmp_path):
    lock = tmp_path / "Cargo.lock"
    lock.write_text(
        'version = 4\n[[package]]\nname = "quinn"\nversion = "0.11.9"\n'
        '[[package]]\nname = "quinn-proto"\nversion = "0.11.13"\n'
        '[[package]]\nname = "quinn-udp"\nversion = "0.5.16"\n[[package]]\nname = "tokio"\nversion = "1.0.0"\n'
    )
    assert quinn_build.locked(lock) == {"quinn": "0.11.9", "quinn-proto": "0.11.13", "quinn-udp": "0.5.16"}
    assert str(quinn_build._floor("^0.11.12")) == "0.11.12" and str(quinn_build._floor("0.11")) == "0.11"
    assert quinn_build._floor(">=0.11, <0.13") is None


SWEEP = """
name = "ours-sweep"
rounds = 2
workloads = ["1x1m"]
versions = "ours@0.11.13..0.11.15"
[[links]]
rate_mbit = 10
rtt_ms = 36
[[arms]]
label = "ours"
protocol = "h3"
server = "ours@0.11.19"
client = "ours@0.11.19"
"""


def test_a_quinn_proto_range_becomes_one_arm_per_release_with_server_and_client_of_that_build(tmp_path, monkeypatch):
    from longlook.kinds.pageload import Scenario

    monkeypatch.setenv("LONGLOOK_CACHE", str(tmp_path))
    (tmp_path / "releases").mkdir()
    (tmp_path / "releases" / "ours.json").write_text(
        "\n".join(  # quinn-proto's index: a fresh listing
            json.dumps({"name": "quinn-proto", "vers": v, "yanked": False})
            for v in ("0.11.12", "0.11.13", "0.11.14", "0.11.15", "0.11.16", "0.11.19")
        )
    )
    sc = Scenario.from_toml(SWEEP, source="test")
    assert [(a.label, a.server, a.client) for a in sc.arms] == [
        (f"ours-{v}", f"ours@{v}", f"ours@{v}") for v in ("0.11.13", "0.11.14", "0.11.15")
    ]
    with pytest.raises(LonglookError, match="builds against quinn-proto 0.11.13"):
        Scenario.from_toml(SWEEP.replace("0.11.13..0.11.15", "0.11.12..0.11.14"), source="test")
