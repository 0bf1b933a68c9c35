"""The native player's playback buffer, in real time: segments arrive at measured times, the
clip plays from the first arrival on, drains one second per second, stalls when empty before
the last segment, and resumes when the next one arrives. Pure: time is passed in, so the
player feeds it wall-clock times and the tests feed it numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..qoe import Playback, Sample, Stall


@dataclass
class _State:
    t: float = 0.0
    position: float = 0.0
    buffer: float = 0.0
    started: float | None = None
    playing: bool = False
    ended: float | None = None
    stalls: list[Stall] = field(default_factory=list)


class PlaybackModel:
    def __init__(self, segment_s: float, segments: int, levels_kbit: list[float]):
        self.segment_s = segment_s
        self.segments = segments
        self.levels_kbit = levels_kbit
        self.arrivals: list[tuple[float, int]] = []  # (t, level) per video segment, in order

    def add(self, t: float, level: int) -> None:
        self.arrivals.append((t, level))

    def state_at(self, t: float) -> _State:
        """Replay the arrivals up to `t` (cheap: one step per segment)."""
        s = _State()
        for t_arr, _ in self.arrivals:
            if t_arr > t:
                break
            self._advance(s, t_arr)
            s.buffer += self.segment_s
            if s.started is None:
                s.started, s.playing = t_arr, True
            elif not s.playing and s.ended is None:
                s.stalls[-1].end_s = t_arr
                s.playing = True
        self._advance(s, t)
        return s

    def _advance(self, s: _State, t: float) -> None:
        if s.playing and t > s.t:
            dt = t - s.t
            if dt >= s.buffer:
                at = s.t + s.buffer
                s.position += s.buffer
                s.buffer = 0.0
                s.playing = False
                if len(self.arrivals_until(at)) >= self.segments:
                    s.ended = at
                else:
                    s.stalls.append(Stall(at, float("inf")))
            else:
                s.buffer -= dt
                s.position += dt
        s.t = max(s.t, t)

    def arrivals_until(self, t: float) -> list[tuple[float, int]]:
        return [a for a in self.arrivals if a[0] <= t]

    def buffer_at(self, t: float) -> float:
        return self.state_at(t).buffer

    def end_time(self) -> float | None:
        """When playback ends if nothing more arrives (all segments in: the clip's end)."""
        if len(self.arrivals) < self.segments:
            return None
        last = self.state_at(self.arrivals[-1][0])
        return last.ended if last.ended is not None else last.t + last.buffer

    def playback(self, end_s: float, step_s: float = 1.0) -> Playback:
        """The run as the QoE maths wants it, sampled every `step_s` up to `end_s` (a stall
        still open at `end_s` ends there)."""
        final = self.state_at(end_s)
        stalls = [Stall(x.start_s, min(x.end_s, end_s)) for x in final.stalls]
        levels = [lvl for _, lvl in self.arrivals]
        samples = []
        k = 0
        while k * step_s <= end_s + 1e-9:
            t = k * step_s
            st = self.state_at(t)
            index = min(int(st.position // self.segment_s), len(levels) - 1) if levels else None
            samples.append(
                Sample(
                    t_s=t,
                    position_s=st.position,
                    buffer_s=st.buffer,
                    level=levels[index] if st.started is not None and index is not None else None,
                    stalled=st.started is not None and not st.playing and st.ended is None,
                )
            )
            k += 1
        # segments whose playback began (all of them once the clip ended)
        begun = math.ceil(final.position / self.segment_s - 1e-9)
        played = len(levels) if final.ended is not None else min(len(levels), begun)
        return Playback(
            levels_kbit=self.levels_kbit,
            segment_levels=levels[:played],
            stalls=stalls,
            startup_s=final.started,
            ended=final.ended is not None,
            end_s=end_s,
            samples=samples,
        )
