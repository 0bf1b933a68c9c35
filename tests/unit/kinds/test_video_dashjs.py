"""dash.js in Chromium: what the driver recorded becomes a Playback (a real recording of a
20 s clip over h2 at 20 Mbit/s, tests/data/video-dashjs-run.json) and the CPU-starvation
rule. A short clip played by dash.js over h3 and h2 on a testbed:
tests/testbed/kinds/test_video_dashjs_testbed.py."""

from __future__ import annotations

import copy
import json
import shutil

import pytest

from longlook.kinds.video.content import VideoSpec, ensure_content
from longlook.kinds.video.dashjs import cpu_figures, measurement_from_driver, playback_from_driver, starved_reason
from longlook.kinds.video.mpd import parse_manifest
from longlook.kinds.video.spec import VideoScenario
from longlook.kinds.video.qoe import qoe_metrics
from repo_paths import DATA

RUN = DATA / "video-dashjs-run.json"


@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    if not shutil.which("ffmpeg"):
        pytest.skip("needs ffmpeg")
    d = ensure_content(VideoSpec(duration_s=20, segment_s=2), tmp_path_factory.mktemp("clip"))
    return parse_manifest((d / "manifest.mpd").read_text())


def test_a_recorded_run_becomes_a_playback(manifest):
    doc = json.loads(RUN.read_text())
    p = playback_from_driver(doc, manifest)
    assert p.ended and p.stalls == [] and 1.0 < p.startup_s < 4.0
    assert len(p.segment_levels) == 10 and p.segment_levels[-1] == 4  # 720p once it settled
    m = qoe_metrics(p)
    assert m["stall_count"] == 0 and m["avg_bitrate_mbit"] > 1.5
    assert [s for s in p.samples if s.level is not None][-1].level == 4


def test_waiting_after_start_is_a_stall_and_the_end_is_not(manifest):
    doc = copy.deepcopy(json.loads(RUN.read_text()))
    start = next(e["t_s"] for e in doc["events"] if e["type"] == "video:playing")
    doc["events"] += [
        {"type": "video:waiting", "t_s": start + 5, "position": 5.0},
        {"type": "video:playing", "t_s": start + 7.5, "position": 5.0},
        {"type": "video:waiting", "t_s": start + 19.9, "position": 19.8},
    ]  # the end
    p = playback_from_driver(doc, manifest)
    assert [(round(s.start_s - start, 3), round(s.end_s - start, 3)) for s in p.stalls] == [(5.0, 7.5)]
    assert any(s.stalled for s in p.samples)


def test_protocol_and_cpu_starvation(manifest):
    doc = json.loads(RUN.read_text())
    sc = VideoScenario.from_toml('kind = "video"\nname = "x"\n[link]\nrate_mbit = 10\n')
    m = measurement_from_driver(doc, manifest, protocol="h2", scenario=sc, artifacts={})
    assert m.status == "ok" and m.protocol_negotiated == "h2"
    assert all(r["protocol"] == "h2" for r in m.rows["requests"])
    assert m.details["player_cpu_cores"] == pytest.approx(doc["cpu_s"] / doc["wall_s"])
    assert m.status == "ok" and "tcp_share" in {s["name"] for s in m.series}
    wrong = measurement_from_driver(doc, manifest, protocol="h3", scenario=sc, artifacts={})
    assert wrong.status == "protocol_mismatch"
    cpu = cpu_figures(doc)
    assert starved_reason(cpu, 1.6, 0.05) is None
    assert "cores" in starved_reason(cpu, 0.1, 0.05)
    busy = {**cpu, "player_cpu_cores": 1.1}
    assert "dropped" in starved_reason(
        {**busy, "unexplained_dropped_share": 0.2, "unexplained_dropped_frames": 120}, 1.6, 0.05
    )


def test_frames_dropped_at_stalls_and_switches_or_at_a_third_of_a_core_are_not_cpu_starvation():
    """Issue 33: a step-down video's h3 runs were flagged "client CPU-starved: 10-17% of the
    frames were dropped" at 0.33 cores; the drops sat around stalls and switches."""
    from longlook.kinds.video.dashjs import unexplained_drops
    from longlook.kinds.video.qoe import Stall

    # 30 fps for 20 s; 40 frames dropped during a stall at 8-10 s, 20 at a switch at 15 s
    samples = [
        {
            "t_s": float(t),
            "frames": 30 * t,
            "quality": 2 if t < 15 else 0,
            "dropped": (40 if t >= 9 else 0) + (20 if t >= 15 else 0),
        }
        for t in range(21)
    ]
    stalls = [Stall(8.0, 10.0)]
    assert unexplained_drops(samples, stalls) == 0
    doc = {"samples": samples, "cpu_s": 6.8, "wall_s": 20.0}
    cpu = cpu_figures(doc, stalls)
    assert cpu["dropped_share"] == 0.1 and starved_reason(cpu, 1.6, 0.05) is None
    # the same drops spread over the run while the browser kept a core busy: starved
    spread = [{**smp, "dropped": 3 * int(smp["t_s"]), "quality": 2} for smp in samples]
    busy = cpu_figures({"samples": spread, "cpu_s": 20.0, "wall_s": 20.0}, [])
    assert "dropped away from stalls" in starved_reason(busy, 1.6, 0.05)
    # ... but not at a third of a core, nor two drops of a short clip
    idle = cpu_figures({"samples": spread, "cpu_s": 6.8, "wall_s": 20.0}, [])
    assert starved_reason(idle, 1.6, 0.05) is None
    few = [{"t_s": float(t), "frames": 30 * t, "quality": 1, "dropped": 1 if t >= 1 else 0} for t in range(2)]
    few[-1]["dropped"] = 2
    assert starved_reason(cpu_figures({"samples": few, "cpu_s": 2.0, "wall_s": 2.0}, []), 1.6, 0.05) is None
