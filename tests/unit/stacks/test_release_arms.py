"""Releases as arms in every kind (stacks/builds/release_arms.py): the fairness and video
kinds' `server` / `client` / `versions`, their labels, their alternation within a round, the
errors a scenario gets at load, what each run and experiment records, and the release
history on them. The registry is a recorded listing (no network)."""

from __future__ import annotations

import json

import pytest

from longlook.analyses.releases import swept_arms
from longlook.errors import LonglookError
from longlook.kinds.fairness import FairnessScenario
from longlook.kinds.pageload import Scenario as PageLoadScenario
from longlook.kinds.video import VideoScenario
from longlook.stacks.builds.release_arms import chosen_releases, recorded_versions
from unit.stacks.test_quinn_releases import SWEEP

QUINN_PROTO = ("0.11.12", "0.11.13", "0.11.14", "0.11.15", "0.11.16", "0.11.19")


@pytest.fixture(autouse=True)
def listing(tmp_path, monkeypatch):
    """quinn-proto's crates.io index as a fresh cached listing."""
    monkeypatch.setenv("LONGLOOK_CACHE", str(tmp_path))
    (tmp_path / "releases").mkdir()
    (tmp_path / "releases" / "ours.json").write_text(
        "\n".join(json.dumps({"name": "quinn-proto", "vers": v, "yanked": False}) for v in QUINN_PROTO)
    )


FAIRNESS = """
kind = "fairness"
name = "fair-releases"
rounds = 3
duration_s = 5
versions = "ours@0.11.13..0.11.15"
[link]
rate_mbit = 10
rtt_ms = 36
[[matchups]]
quic = 1
tcp = 1
"""

VIDEO = """
kind = "video"
name = "video-releases"
rounds = 3
versions = ["ours@0.11.14", "ours@0.11.16"]
[[links]]
rate_mbit = 10
rtt_ms = 36
"""


def fairness(text: str = FAIRNESS) -> FairnessScenario:
    return FairnessScenario.from_toml(text, source="test")


def video(text: str = VIDEO) -> VideoScenario:
    return VideoScenario.from_toml(text, source="test")


# ---------------------------------------------------------------- fairness


def test_a_fairness_range_is_one_arm_per_release_each_running_every_flow_on_its_build():
    sc = fairness()
    assert [(a.label, a.server, a.client) for a in sc.arm_list()] == [
        (f"flows-{v}", f"ours@{v}", None) for v in ("0.11.13", "0.11.14", "0.11.15")
    ]
    # the client stays the workspace's unless it is swept too
    assert [sc.stacks_of(a) for a in sc.arm_list()][0] == ("ours@0.11.13", "native")
    both = fairness(FAIRNESS.replace("versions =", 'client = "ours"\nversions ='))
    assert {both.stacks_of(a) for a in both.arm_list()} == {
        (f"ours@{v}",) * 2 for v in ("0.11.13", "0.11.14", "0.11.15")
    }
    # the cells are what they were: releases are arms, not cells
    plain = fairness(FAIRNESS.replace('versions = "ours@0.11.13..0.11.15"\n', ""))
    assert [c.id for c in sc.cells()] == [c.id for c in plain.cells()]
    assert sc.comparisons() == [("flows-0.11.13", "flows-0.11.15"), ("flows-0.11.14", "flows-0.11.15")]
    assert sc.total_runs() == 3 * 3


def test_the_releases_of_a_fairness_cell_alternate_within_each_round():
    sc = fairness()
    cell = sc.cells()[0]
    orders = [[a.label for a in sc.round_order(cell, r)] for r in range(sc.rounds)]
    for order in orders:  # every release once per round, back to back
        assert sorted(order) == sorted(a.label for a in sc.arm_list())
    assert len({tuple(o) for o in orders + [[a.label for a in sc.round_order(cell, r)] for r in range(3, 12)]}) > 1


def test_a_fairness_scenario_without_versions_keeps_its_one_flows_arm_and_can_name_a_release():
    plain = fairness(FAIRNESS.replace('versions = "ours@0.11.13..0.11.15"\n', ""))
    assert [a.label for a in plain.arm_list()] == ["flows"] and plain.comparisons() == []
    assert plain.stacks_of(plain.arm_list()[0]) == ("ours", "native")
    one = fairness(FAIRNESS.replace('versions = "ours@0.11.13..0.11.15"', 'server = "ours@0.11.14"'))
    assert one.stacks_of(one.arm_list()[0]) == ("ours@0.11.14", "native")
    arms = fairness(
        FAIRNESS.replace('versions = "ours@0.11.13..0.11.15"\n', "")
        + """
[[arms]]
label = "old"
server = "ours@0.11.13"
[[arms]]
label = "new"
server = "ours@0.11.15"
client = "ours@0.11.15"
"""
    )
    assert [arms.stacks_of(a) for a in arms.arm_list()] == [("ours@0.11.13", "native"), ("ours@0.11.15",) * 2]


@pytest.mark.parametrize(
    "change, message",
    [
        (
            ('versions = "ours@0.11.13..0.11.15"', 'versions = "ours@0.11.20..0.11.30"'),
            r"versions: ours@0.11.20..0.11.30: crates.io has no release in this range \(nearest releases: .*0.11.16",
        ),
        (('versions = "ours@0.11.13..0.11.15"', 'versions = "ours@0.11.15..0.11.13"'), "the range is empty"),
        (('versions = "ours@0.11.13..0.11.15"', 'versions = "nosuch@1..2"'), "nosuch: no registry lists its releases"),
        (
            ('versions = "ours@0.11.13..0.11.15"', 'versions = "ours@0.11.12..0.11.14"'),
            "builds against quinn-proto 0.11.13",
        ),  # a release our endpoint cannot build with
        (('versions = "ours@0.11.13..0.11.15"', 'versions = "quic-go@v0.65.0"'), "no arm runs quic-go"),
        (
            ('versions = "ours@0.11.13..0.11.15"', 'server = "quic-go@v0.65.0"'),
            'server "quic-go@v0.65.0": fairness flows run against our endpoint',
        ),
        (('versions = "ours@0.11.13..0.11.15"', 'server = "nosuch"'), 'server "nosuch": fairness flows run'),
        (('versions = "ours@0.11.13..0.11.15"', 'client = "chromium"'), 'client "chromium": fairness flows are'),
        (('versions = "ours@0.11.13..0.11.15"', 'server = "ours@0.12.0"'), "builds against quinn-proto 0.11.13 up to"),
        (
            ('versions = "ours@0.11.13..0.11.15"', 'server = "ours@0.11.99"'),
            "ours@0.11.99: crates.io has no such release",
        ),
        (
            ('versions = "ours@0.11.13..0.11.15"', 'client = "ours@0.11.17"'),
            "ours@0.11.17: crates.io has no such release",
        ),
    ],
)
def test_what_a_fairness_flow_cannot_run_is_one_error_at_load(change, message):
    with pytest.raises(LonglookError, match=message) as e:
        fairness(FAIRNESS.replace(*change))
    assert "Traceback" not in str(e.value)


def test_a_release_the_registry_does_not_list_is_one_error_at_load_naming_the_nearest():
    with pytest.raises(
        LonglookError,
        match=r"versions: ours@0.11.17: crates.io has no such release; "
        r"nearest releases: 0.11.15, 0.11.16",
    ):
        fairness(FAIRNESS.replace('"ours@0.11.13..0.11.15"', '["ours@0.11.14", "ours@0.11.17"]'))
    with pytest.raises(LonglookError, match="no release in this range"):
        fairness(FAIRNESS.replace("0.11.13..0.11.15", "0.11.17..0.11.18"))


def test_a_congestion_control_the_arm_s_server_lacks_is_one_error(monkeypatch):
    from longlook.stacks.adapters.ours import Ours

    monkeypatch.setattr(Ours, "ccs", ("cubic", "newreno"))  # a build without BBR
    with pytest.raises(LonglookError, match='arm "flows-0.11.13": stack ours@0.11.13 has no congestion control'):
        fairness(FAIRNESS + '[sweep]\nquic_cc = ["cubic", "bbr"]\n')
    fairness(FAIRNESS.replace("quic = 1\ntcp = 1\n", "tcp = 2\n") + '[sweep]\nquic_cc = ["bbr"]\n')  # no QUIC flow


# ---------------------------------------------------------------- video


def test_a_video_sweep_makes_the_h3_arm_one_arm_per_release_and_keeps_h2_as_the_baseline():
    sc = video()
    assert [(a.label, a.protocol, a.server, a.client) for a in sc.arm_list()] == [
        ("h3-0.11.14", "h3", "ours@0.11.14", None),
        ("h3-0.11.16", "h3", "ours@0.11.16", None),
        ("h2", "h2", None, None),
    ]
    assert sc.comparisons() == [("h3-0.11.14", "h2"), ("h3-0.11.16", "h2")]
    assert sc.stacks_of(sc.arm("h2")) == ("ours", "native")
    cell = sc.cells()[0]
    for r in range(sc.rounds):
        assert sorted(a.label for a in sc.round_order(cell, r)) == sorted(a.label for a in sc.arm_list())
    # the native player's client swept too; the racing arm is a QUIC arm as well
    both = video(VIDEO.replace("versions =", 'client = "ours"\nprotocols = ["h3", "race", "h2"]\nversions ='))
    assert [(a.label, both.stacks_of(a)) for a in both.arm_list()] == [
        ("h3-0.11.14", ("ours@0.11.14",) * 2),
        ("h3-0.11.16", ("ours@0.11.16",) * 2),
        ("quic-enabled-0.11.14", ("ours@0.11.14",) * 2),
        ("quic-enabled-0.11.16", ("ours@0.11.16",) * 2),
        ("h2", ("ours", "ours")),
    ]
    plain = video(VIDEO.replace('versions = ["ours@0.11.14", "ours@0.11.16"]\n', 'server = "ours@0.11.15"\n'))
    assert [(a.label, plain.stacks_of(a)[0]) for a in plain.arm_list()] == [
        ("h3", "ours@0.11.15"),
        ("h2", "ours@0.11.15"),
    ]


@pytest.mark.parametrize(
    "change, message",
    [
        (("ours@0.11.16", "ours@0.11.17"), "versions: ours@0.11.17: crates.io has no such release"),
        (
            ('versions = ["ours@0.11.14", "ours@0.11.16"]', 'versions = "ours@0.11.20..0.11.30"'),
            "no release in this range",
        ),
        (('versions = ["ours@0.11.14", "ours@0.11.16"]', 'versions = "quic-go@v0.65.0"'), "no arm runs quic-go"),
        (
            ('versions = ["ours@0.11.14", "ours@0.11.16"]', 'server = "quic-go@v0.65.0"'),
            'server "quic-go@v0.65.0": the video kind serves its clip\'s folder .* with our endpoint',
        ),
        (
            ('versions = ["ours@0.11.14", "ours@0.11.16"]', 'client = "aioquic"'),
            'client "aioquic": the native player runs',
        ),
        (('versions = ["ours@0.11.14", "ours@0.11.16"]', 'versions = "ours"'), "names no release"),
    ],
)
def test_what_a_video_arm_cannot_run_is_one_error_at_load(change, message):
    with pytest.raises(LonglookError, match=message):
        video(VIDEO.replace(*change))


# ---------------------------------------------------------------- one shared path


def test_page_loads_fairness_and_video_expand_releases_the_same_way():
    page = PageLoadScenario.from_toml(SWEEP, source="test")  # ours@0.11.13..0.11.15 on one h3 arm
    labels = {"pageload": [a.label for a in page.arms], "fairness": [a.label for a in fairness().arm_list()]}
    assert labels == {
        "pageload": ["ours-0.11.13", "ours-0.11.14", "ours-0.11.15"],
        "fairness": ["flows-0.11.13", "flows-0.11.14", "flows-0.11.15"],
    }
    assert chosen_releases(["ours@0.11.13..0.11.14", "ours@0.11.14"]) == {"ours": ["0.11.13", "0.11.14"]}
    # the release history finds each kind's family
    assert {f: [v for _, v in arms] for f, arms in swept_arms(fairness()).items()} == {
        "flows": ["0.11.13", "0.11.14", "0.11.15"]
    }
    assert {f: [v for _, v in arms] for f, arms in swept_arms(video()).items()} == {"h3": ["0.11.14", "0.11.16"]}


def test_what_an_experiment_records_of_its_builds(monkeypatch):
    from longlook.stacks.adapters.ours import Ours

    monkeypatch.setattr(Ours, "version_info", lambda self: f"endpoint with quinn-proto {self.version}")
    monkeypatch.setattr(
        "longlook.stacks.builds.release_arms.binary_digests",
        lambda specs: {s: f"digest-{s}" for s in dict.fromkeys(specs) if "@" in s},
    )
    from longlook.kinds.fairness import KIND

    got = KIND.versions(fairness())
    assert got["stacks"] == {f"ours@{v}": f"endpoint with quinn-proto {v}" for v in ("0.11.13", "0.11.14", "0.11.15")}
    assert set(got["stack_binaries"]) == set(got["stacks"])
    assert recorded_versions(["ours", "native"]) == {}  # the workspace's build: the core records it
