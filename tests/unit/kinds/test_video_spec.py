"""The video kind's scenario part: its grid, and bad input as one clear error."""

from __future__ import annotations

import pytest

from longlook.core.spec import load_scenario, parse_scenario
from longlook.errors import LonglookError
from testbed_helpers import REPO

BASE = """
kind = "video"
name = "v"
{extra}
[link]
rate_mbit = 10
rtt_ms = 36
"""


def test_grid_and_defaults():
    sc = parse_scenario(BASE.format(extra='players = ["native", "dashjs"]\nabr = ["bola", "throughput"]'))
    cells = sc.cells()
    assert [c.id for c in cells] == [
        "player=native|abr=bola",
        "player=native|abr=throughput",
        "player=dashjs|abr=bola",
        "player=dashjs|abr=throughput",
    ]
    assert [a.label for a in sc.arm_list()] == ["h3", "h2"] and sc.comparisons() == [("h3", "h2")]
    assert sc.video.max_height == 720 and sc.run_timeout_s() == 3 * 20 + 30
    assert cells[0].dims()["player"] == "native"


def test_video_sessions_have_their_own_stall_limit_and_a_scenario_overrides_it():
    assert parse_scenario(BASE.format(extra="")).fidelity.max_stall_ms == 20.0
    own = parse_scenario(BASE.format(extra="[fidelity]\nmax_stall_ms = 7\nexclude_flagged = false"))
    assert own.fidelity.max_stall_ms == 7.0 and own.fidelity.max_release_late_ms == 20.0
    assert not own.fidelity.exclude_flagged
    assert load_scenario(REPO / "scenarios/quick.toml").fidelity.max_stall_ms == 5.0  # a page load


@pytest.mark.parametrize(
    "extra, words",
    [
        ('players = ["vlc"]', "players"),
        ("[video]\nduration_s = 9\nsegment_s = 2", "whole number"),
        ("[video]\nmax_height = 900", "max_height"),
        ('protocols = ["h3"]', "protocols"),
        ('quic_mode = "sometimes"', "quic_mode"),
    ],
)
def test_bad_input_is_one_error_naming_the_field(extra, words):
    with pytest.raises(LonglookError) as e:
        parse_scenario(BASE.format(extra=extra))
    assert words in str(e.value)


def test_the_ecn_switch_is_the_native_player_s_and_reaches_the_server():
    from types import SimpleNamespace

    from longlook.kinds.video.serving import VideoServerOptions

    off = parse_scenario(BASE.format(extra="ecn = false"))
    assert off.ecn is False and parse_scenario(BASE.format(extra="")).ecn is None
    with pytest.raises(LonglookError) as e:
        parse_scenario(BASE.format(extra='ecn = true\nplayers = ["native", "dashjs"]'))
    assert "dash.js plays in Chromium" in str(e.value)
    seen = {}
    pool = SimpleNamespace(get=lambda spec, options: seen.setdefault("options", options) and (4433, None))
    ctx = SimpleNamespace(scenario=off, arm=off.arm_list()[0], session={"servers": pool})
    from longlook.kinds.video.serving import server_for

    server_for(ctx, "/clip")
    assert isinstance(seen["options"], VideoServerOptions) and "--no-ecn" in seen["options"].argv()
