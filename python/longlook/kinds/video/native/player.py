"""The native DASH player: our endpoint client on one connection, an ABR rule of dash.js,
and the playback buffer simulated in real time (the network time is real; decoding is not
done). It fetches the manifest, the init segments and then each segment (video, then its
audio) one at a time, as dash.js does for one stream, and waits while the buffer is above
the rule's target. When every segment is in, the rest of playback is determined, so the run
ends without waiting for the clip to finish playing.

The manifest is fetched over the network for timing, then parsed from the served file (the
session does not hand bodies back).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..mpd import Manifest
from ..qoe import Playback
from .abr import RULES, AbrState
from .playback import PlaybackModel
from .session import EndpointSession, ObjectFetch, SessionError

SAMPLE_S = 1.0


@dataclass
class Request:
    """One GET of the run: t in s from the run's start."""

    path: str
    kind: str  # manifest | init | video | audio
    level: int | None
    segment: int | None
    status: int
    bytes: int
    start_s: float
    end_s: float
    protocol: str | None = None  # filled in once the session reports it


@dataclass
class PlayerRun:
    playback: Playback | None
    requests: list[Request] = field(default_factory=list)
    error: str | None = None
    timed_out: bool = False
    handshake_ms: float | None = None
    cpu_s: float | None = None
    wall_s: float = 0.0
    decisions: list[dict] = field(default_factory=list)
    t0_mono_s: float | None = None  # the requests' zero on this host's CLOCK_MONOTONIC

    def as_details(self) -> dict:
        return {
            "handshake_ms": self.handshake_ms,
            "player_cpu_s": self.cpu_s,
            "player_wall_s": self.wall_s,
            "decisions": self.decisions,
        }


def play(session: EndpointSession, manifest: Manifest, base: str, *, rule: str, timeout_s: float) -> PlayerRun:
    """Stream the clip over `session` (its connection already up or coming up); `base` is
    the manifest's directory as a URL path ("/")."""
    t0 = time.monotonic()
    now = lambda: time.monotonic() - t0  # noqa: E731
    deadline = timeout_s
    levels = [r.bandwidth / 1000 for r in manifest.video]
    abr = RULES[rule]()
    state = AbrState(levels_kbit=levels)
    model = PlaybackModel(manifest.segment_s, manifest.segments, levels)
    run = PlayerRun(playback=None, t0_mono_s=t0)

    def get(path: str, kind: str, level: int | None = None, segment: int | None = None) -> ObjectFetch:
        left = deadline - now()
        if left <= 0:
            raise TimeoutError
        started = now()
        f = session.get(base + path, timeout_s=left)
        run.requests.append(
            Request(
                path=base + path,
                kind=kind,
                level=level,
                segment=segment,
                status=f.status,
                bytes=f.bytes,
                start_s=started,
                end_s=now(),
                protocol=f.protocol,
            )
        )
        if f.status != 200:
            raise SessionError(f"GET {base + path}: status {f.status}")
        return f

    try:
        session.wait_ready(timeout_s)
        run.handshake_ms = session.handshake_ms
        get("manifest.mpd", "manifest")
        audio = manifest.audio[0] if manifest.audio else None
        if audio:
            get(audio.init, "init")
        have_init: set[int] = set()
        for i in range(manifest.segments):
            level = abr.choose(state)
            # wait while the buffer is above the rule's target (dash.js's scheduler)
            target = abr.target_buffer_s(state, level)
            while model.buffer_at(now()) > target - manifest.segment_s:
                time.sleep(min(0.1, max(0.0, deadline - now())))
                if now() >= deadline:
                    raise TimeoutError
            st = model.state_at(now())
            state.buffer_s, state.stalls = st.buffer, len(st.stalls)
            level = abr.choose(state)
            rep = manifest.video[level]
            if level not in have_init:
                get(rep.init, "init", level)
                have_init.add(level)
            f = get(rep.segment_path(i), "video", level, i)
            took_ms = max(f.end_ms - f.first_byte_ms, 1.0)
            state.throughput_kbit.append(f.bytes * 8 / took_ms)  # bits per ms = kbit/s
            if audio and i < audio.segments:
                get(audio.segment_path(i), "audio", None, i)
            model.add(now(), level)
            state.last_level = level
            run.decisions.append(
                {
                    "segment": i,
                    "level": level,
                    "buffer_s": round(state.buffer_s, 3),
                    "throughput_kbit": round(state.throughput_kbit[-1], 1),
                }
            )
        end = model.end_time() or now()
    except TimeoutError:
        run.timed_out, run.error, end = True, f"the clip did not finish within {timeout_s:.0f} s", now()
    except SessionError as e:
        run.error, end = str(e), now()
        run.timed_out = end >= deadline - 1.0  # the answer did not come before the deadline
    run.cpu_s = session.cpu_s()
    run.wall_s = now()
    run.playback = model.playback(max(end, now()) if run.error else end, SAMPLE_S)
    return run
