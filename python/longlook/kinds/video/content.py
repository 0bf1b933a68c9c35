"""The video a run streams: a synthetic clip (moving test pattern and a tone) encoded with
Debian's ffmpeg as an H.264 + AAC bitrate ladder with a DASH manifest (ffmpeg's dash muxer).

Generated once per set of parameters and cached under `cache_root()/<hash>`, so a second
experiment (or a resumed one) reuses it. The ladder follows Chaudhary et al. Table 4; every
rung is encoded constant-bitrate (x264 `nal-hrd=cbr`) so a segment's size is its nominal
bitrate times its duration, which is what the ABR rules assume.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from ...errors import LonglookError

MANIFEST = "manifest.mpd"
DONE = "content.json"  # written last: a directory without it is incomplete
FFMPEG_INSTALL = "apt-get install -y ffmpeg"
FPS = 24
AUDIO_KBIT = 32


@dataclass(frozen=True)
class Rung:
    name: str  # "360p"
    width: int
    height: int
    kbit: int  # nominal video bitrate


# Chaudhary et al. Table 4 (approximate YouTube bitrates); 1080p only when asked for
LADDER = (
    Rung("144p", 256, 144, 100),
    Rung("240p", 426, 240, 250),
    Rung("360p", 640, 360, 500),
    Rung("480p", 854, 480, 900),
    Rung("720p", 1280, 720, 2000),
    Rung("1080p", 1920, 1080, 4000),
)


def ladder(max_height: int = 720) -> tuple[Rung, ...]:
    rungs = tuple(r for r in LADDER if r.height <= max_height)
    if not rungs:
        raise LonglookError(
            f"video max_height = {max_height}: no rung of the ladder is that small",
            hint="use 144 or more (144, 240, 360, 480, 720, 1080)",
        )
    return rungs


@dataclass(frozen=True)
class VideoSpec:
    """What defines a clip; its hash names the cache directory."""

    duration_s: int = 20
    segment_s: int = 2
    max_height: int = 720

    def key(self) -> str:
        blob = json.dumps(
            {
                **asdict(self),
                "fps": FPS,
                "audio_kbit": AUDIO_KBIT,
                "ladder": [asdict(r) for r in ladder(self.max_height)],
                "v": 1,
            },
            sort_keys=True,
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def cache_root() -> Path:
    """`$LONGLOOK_VIDEO_CACHE`, else `$XDG_CACHE_HOME/longlook/video` (~/.cache/...)."""
    env = os.environ.get("LONGLOOK_VIDEO_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "longlook" / "video"


def ffmpeg_path() -> str:
    path = shutil.which("ffmpeg")
    if not path:
        raise LonglookError(
            "ffmpeg is not installed (the video kind encodes its clip with it)",
            hint=f"{FFMPEG_INSTALL} (or scripts/setup.sh)",
        )
    return path


def ffmpeg_version() -> str:
    out = subprocess.run([ffmpeg_path(), "-hide_banner", "-version"], capture_output=True, text=True)
    return (out.stdout.splitlines() or ["?"])[0]


def ensure_content(spec: VideoSpec, root: Path | None = None) -> Path:
    """The clip's directory (manifest.mpd, init and media segments), encoding it if absent."""
    root = root or cache_root()
    target = root / spec.key()
    if (target / DONE).is_file():
        return target
    ffmpeg = ffmpeg_path()
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{spec.key()}-", dir=root))
    try:
        argv = ffmpeg_argv(ffmpeg, spec, work / MANIFEST)
        proc = subprocess.run(argv, cwd=work, capture_output=True, text=True)
        if proc.returncode != 0:
            tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
            raise LonglookError(
                f"ffmpeg failed to encode the video (exit {proc.returncode}):\n{tail}",
                hint="check `ffmpeg -encoders | grep -e libx264 -e aac` (Debian's ffmpeg has both)",
            )
        (work / DONE).write_text(
            json.dumps({"spec": asdict(spec), "ffmpeg": ffmpeg_version(), "argv": argv[1:]}, indent=1) + "\n"
        )
        try:
            work.rename(target)
        except OSError:  # another process finished the same clip first
            if not (target / DONE).is_file():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def ffmpeg_argv(ffmpeg: str, spec: VideoSpec, manifest: Path) -> list[str]:
    """One ffmpeg run: the test pattern scaled to each rung, a sine tone as AAC, DASH out.

    Keyframes every segment (fixed GOP, no scene cuts) so every segment starts with one and
    the muxer cuts exactly `segment_s` apart."""
    rungs = ladder(spec.max_height)
    top = rungs[-1]
    d = spec.duration_s
    gop = FPS * spec.segment_s
    argv = [
        ffmpeg,
        "-hide_banner",
        "-nostdin",
        "-loglevel",
        "error",
        "-y",
        "-f",
        "lavfi",
        "-i",
        f"testsrc2=size={top.width}x{top.height}:rate={FPS}:duration={d}",
        "-f",
        "lavfi",
        "-i",
        f"sine=frequency=440:sample_rate=48000:duration={d}",
    ]
    for _ in rungs:
        argv += ["-map", "0:v"]
    argv += [
        "-map",
        "1:a",
        "-c:v",
        "libx264",
        "-preset",
        "veryfast",
        "-profile:v",
        "main",
        "-pix_fmt",
        "yuv420p",
        "-g",
        str(gop),
        "-keyint_min",
        str(gop),
        "-sc_threshold",
        "0",
        "-x264-params",
        "nal-hrd=cbr:force-cfr=1",
    ]
    for i, r in enumerate(rungs):
        k = f"{r.kbit}k"
        argv += [
            f"-s:v:{i}",
            f"{r.width}x{r.height}",
            f"-b:v:{i}",
            k,
            f"-minrate:v:{i}",
            k,
            f"-maxrate:v:{i}",
            k,
            f"-bufsize:v:{i}",
            f"{r.kbit * spec.segment_s // 2}k",
        ]
    argv += [
        "-c:a",
        "aac",
        "-b:a",
        f"{AUDIO_KBIT}k",
        "-ac",
        "1",
        "-f",
        "dash",
        "-seg_duration",
        str(spec.segment_s),
        "-use_template",
        "1",
        "-use_timeline",
        "0",
        "-adaptation_sets",
        "id=0,streams=v id=1,streams=a",
        "-init_seg_name",
        "init-$RepresentationID$.m4s",
        "-media_seg_name",
        "chunk-$RepresentationID$-$Number%05d$.m4s",
        str(manifest),
    ]
    return argv
