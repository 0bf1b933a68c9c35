"""dash.js in Chromium on a real testbed: a short clip played by dash.js over h3 and h2, every
segment on the arm's protocol, without a stall. What the driver records becomes a Playback:
tests/unit/kinds/test_video_dashjs.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from longlook.kinds.video.spec import VideoScenario
from testbed_helpers import needs_ffmpeg, needs_testbed


SHORT = """
kind = "video"
name = "video-dashjs"
runs = 1
players = ["dashjs"]
[fidelity]
retry_flagged = false
[video]
duration_s = 8
cache_dir = "{cache}"
[link]
rate_mbit = 20
rtt_ms = 20
"""


@needs_ffmpeg
@needs_testbed("linkem", "endpoint")
def test_dashjs_plays_a_short_clip_over_h3_and_h2(tmp_path: Path):
    if not shutil.which("chromium"):
        pytest.skip("needs chromium (apt-get install -y chromium)")
    from longlook.core.execute import Runner
    from longlook.core.store import Store

    out = tmp_path / "exp"
    Runner(VideoScenario.from_toml(SHORT.format(cache=tmp_path / "cache")), out, link_check=False).run()
    with Store.open(out, read_only=True) as store:
        runs = store.runs_frame().sort_values("attempt").groupby("arm").tail(1)
        requests = store.table("requests")
    assert sorted(runs["arm"]) == ["h2", "h3"]
    for r in runs.itertuples():
        assert r.status == "ok", r.error
        assert r.stall_count == 0 and r.startup_s > 0
        seg = requests[(requests["run_id"] == r.run_id) & (requests["kind"] == "video")]
        assert sorted(set(seg["segment"])) == [0, 1, 2, 3]
        assert (requests[requests["run_id"] == r.run_id]["protocol"] == r.arm).all()
