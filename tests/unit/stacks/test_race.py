"""The racing client's scenario part and what a racing fetch JSON becomes (no testbed)."""

from __future__ import annotations

import pytest

from longlook.errors import LonglookError
from longlook.kinds.pageload import Scenario, from_fetch
from longlook.kinds.video import VideoScenario
from longlook.stacks.race import RaceSettings, race_measures

RACE_SCENARIO = """
name = "r"
workloads = ["2x10k"]
[[arms]]
label = "quic-enabled"
protocol = "race"
{client}
[[arms]]
label = "tcp-only"
protocol = "h2"
[race]
default_delay_ms = 150
state = "cell"
[link]
rate_mbit = 10
rtt_ms = 20
"""


def racing_fetch(h3: int, h2: int, ttf: float | None) -> dict:
    objs = [
        {"path": f"/o{i}", "status": 200, "bytes": 10, "start_ms": 0, "first_byte_ms": 1, "end_ms": 2, "protocol": "h3"}
        for i in range(h3)
    ]
    objs += [
        {"path": f"/t{i}", "status": 200, "bytes": 10, "start_ms": 0, "first_byte_ms": 1, "end_ms": 2, "protocol": "h2"}
        for i in range(h2)
    ]
    proto = "mixed" if h3 and h2 else ("h3" if h3 else "h2")
    return {
        "ok": True,
        "protocol_requested": "race",
        "protocol": proto,
        "plt_ms": 50.0,
        "handshake_ms": 5.0,
        "ttfb_ms": 10.0,
        "objects": objs,
        "race": {
            "quic_attempted": True,
            "tcp_delay_ms": 300.0,
            "time_to_fallback_ms": ttf,
            "quic_handshake_ms": None if not h3 else 20.0,
            "requests": {"h3": h3, "h2": h2},
            "bytes": {"h3": 10 * h3, "h2": 10 * h2},
            "state_before": {"quic_worked": True, "origins": {}},
            "state_after": None,
        },
    }


def test_settings_become_the_endpoint_flags():
    s = RaceSettings(delay_factor=2, default_delay_ms=100, broken_for_s=5, initial="alt-svc-known")
    argv = s.argv()
    flags = dict(zip(argv[::2], argv[1::2]))
    assert flags == {
        "--race-delay-factor": "2.0",
        "--race-default-delay-ms": "100.0",
        "--race-max-delay-ms": "3000.0",
        "--quic-handshake-timeout-ms": "5000.0",
        "--quic-idle-timeout-ms": "30000.0",
        "--broken-for-s": "5.0",
        "--race-initial": "alt-svc-known",
    }
    assert "--race-state" not in argv


def test_state_file_only_when_the_cell_keeps_it(tmp_path):
    assert RaceSettings().state_file(tmp_path, 3, "quic-enabled") is None
    p = RaceSettings(state="cell").state_file(tmp_path, 3, "quic-enabled")
    assert p == tmp_path / "race-state" / "cell3-quic-enabled.json" and p.parent.is_dir()


@pytest.mark.parametrize(
    "bad",
    ["delay_factor = -1", 'initial = "maybe"', "quic_handshake_timeout_ms = 0", "nonsense = 1", 'state = "forever"'],
)
def test_bad_race_settings_are_one_error(bad: str):
    text = RACE_SCENARIO.format(client="").replace('default_delay_ms = 150\nstate = "cell"', bad)
    with pytest.raises(LonglookError) as e:
        Scenario.from_toml(text)
    assert "race." in str(e.value)


def test_a_race_arm_parses_and_needs_the_native_client():
    sc = Scenario.from_toml(RACE_SCENARIO.format(client=""))
    assert [a.protocol for a in sc.arms] == ["race", "h2"] and sc.race.default_delay_ms == 150
    with pytest.raises(LonglookError) as e:
        Scenario.from_toml(RACE_SCENARIO.format(client='client = "chromium"'))
    assert "chromium-discovery" in str(e.value)


def test_video_race_arm_is_quic_enabled_vs_h2_and_native_only():
    base = 'kind = "video"\nname = "v"\nprotocols = ["race", "h2"]\n{players}\n[link]\nrate_mbit = 5\nrtt_ms = 20\n'
    sc = VideoScenario.from_toml(base.format(players=""))
    assert [(a.label, a.protocol) for a in sc.arm_list()] == [("quic-enabled", "race"), ("h2", "h2")]
    assert sc.comparisons() == [("quic-enabled", "h2")]
    with pytest.raises(LonglookError):
        VideoScenario.from_toml(base.format(players='players = ["dashjs"]'))


def test_a_racing_run_counts_as_what_served_it():
    m = from_fetch(racing_fetch(h3=3, h2=1, ttf=310.0), protocol_requested=None)
    assert m.status == "ok" and m.protocol_negotiated == "mixed" and m.protocol_requested is None
    assert m.metrics["quic_share"] == pytest.approx(0.75)
    assert m.metrics["time_to_fallback_ms"] == 310.0 and m.metrics["bytes_h2"] == 10
    assert m.details["served_by"][-1] == ["/t0", "h2"]
    assert "state_before" not in m.details["race"] and m.details["race_state_before"]["quic_worked"]


def test_plain_runs_have_no_race_measures():
    assert race_measures({"protocol": "h3", "objects": []}) == ({}, {})
    m = from_fetch({"ok": True, "protocol": "h2", "plt_ms": 1.0}, protocol_requested="h3")
    assert m.status == "protocol_mismatch" and "quic_share" not in m.metrics
