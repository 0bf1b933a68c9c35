"""The synthetic clip: Debian's ffmpeg encodes the ladder as DASH, cached by its parameters."""

from __future__ import annotations

from pathlib import Path

import pytest
from testbed_helpers import needs_ffmpeg

from longlook.errors import LonglookError
from longlook.kinds.video.content import VideoSpec, ensure_content, ladder
from longlook.kinds.video.mpd import parse_manifest


@needs_ffmpeg
def test_an_8_s_clip_has_the_ladder_in_2_s_segments(tmp_path: Path):
    spec = VideoSpec(duration_s=8, segment_s=2)
    d = ensure_content(spec, tmp_path)
    m = parse_manifest((d / "manifest.mpd").read_text())
    assert m.duration_s == 8 and m.segment_s == 2 and m.segments == 4
    assert [r.height for r in m.video] == [144, 240, 360, 480, 720]
    assert [r.bandwidth // 1000 for r in m.video] == [100, 250, 500, 900, 2000]
    assert m.audio and m.audio[0].kind == "audio"
    for r in [*m.video, m.audio[0]]:
        assert (d / r.init).is_file()
        sizes = [(d / r.segment_path(i)).stat().st_size for i in range(r.segments)]
        assert all(s > 0 for s in sizes)
    for r in m.video:  # constant bitrate: each rung within 15% of its nominal rate
        bits = sum((d / r.segment_path(i)).stat().st_size for i in range(r.segments)) * 8
        assert bits / m.duration_s == pytest.approx(r.bandwidth, rel=0.15)
    # a second call reuses the cache, a different clip gets its own directory
    assert ensure_content(spec, tmp_path) == d
    assert VideoSpec(duration_s=8, segment_s=4).key() != spec.key()


def test_missing_ffmpeg_says_how_to_install(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no ffmpeg on this PATH
    with pytest.raises(LonglookError) as e:
        ensure_content(VideoSpec(duration_s=8), tmp_path)
    assert "apt-get install -y ffmpeg" in str(e.value)


def test_ladder_default_stops_at_720p():
    assert ladder()[-1].name == "720p" and ladder(1080)[-1].name == "1080p"
    with pytest.raises(LonglookError):
        ladder(100)


def test_bad_manifest_is_one_clear_error():
    with pytest.raises(LonglookError, match="not a DASH manifest"):
        parse_manifest("<MPD", "x.mpd")
