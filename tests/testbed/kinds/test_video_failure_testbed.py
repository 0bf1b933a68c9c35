"""A manifest that fails to load: the run fails with the player's own error, recorded, for
the native player and for dash.js in Chromium ("Bad input"). The clip is served
from a copy with its manifest removed, so the player asks for it and gets a 404."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from testbed_helpers import needs_ffmpeg, needs_testbed

from longlook.core.execute import Runner
from longlook.core.store import Store
from longlook.kinds.video import VideoScenario


NO_MANIFEST = """
kind = "video"
name = "video-no-manifest"
runs = 1
retries = 0
players = ["{player}"]
timeout_s = 40
[video]
duration_s = 4
segment_s = 2
max_height = 240
cache_dir = "{cache}"
[link]
rate_mbit = 20
rtt_ms = 20
"""


def _run_without_manifest(player: str, tmp_path: Path):
    sc = VideoScenario.from_toml(NO_MANIFEST.format(player=player, cache=tmp_path / "cache"))
    runner = Runner(sc, tmp_path / "exp", link_check=False)
    served = tmp_path / "served"
    shutil.copytree(runner.state["content"], served)
    (served / "manifest.mpd").unlink()
    runner.state["content"] = served  # what the arm's server serves; the ladder stays parsed
    summary = runner.run()
    with Store.open(tmp_path / "exp", read_only=True) as store:
        return summary, store.runs_frame()


@needs_ffmpeg
@needs_testbed("linkem", "endpoint")
def test_native_player_fails_with_the_manifest_status(tmp_path: Path):
    summary, runs = _run_without_manifest("native", tmp_path)
    assert sorted(runs["arm"]) == ["h2", "h3"] and summary.ok == 0
    for r in runs.itertuples():
        assert r.status == "failed"
        assert "manifest.mpd: status 404" in r.error, r.error
    assert summary.short  # no arm has the runs a comparison needs, and the run says so


@needs_ffmpeg
@needs_testbed("linkem", "endpoint")
def test_dashjs_fails_with_its_own_error(tmp_path: Path):
    if not shutil.which("chromium"):
        pytest.skip("needs chromium (apt-get install -y chromium)")
    summary, runs = _run_without_manifest("dashjs", tmp_path)
    assert sorted(runs["arm"]) == ["h2", "h3"] and summary.ok == 0
    for r in runs.itertuples():
        assert r.status == "failed"
        # dash.js's own report of the failed download, not a timeout of ours
        assert r.error.startswith("dash.js error"), r.error
        assert r.duration_s < 30, r.duration_s
