"""The two ABR rules of dash.js, written from their published descriptions (dash.js code is
not copied): its throughput rule, and BOLA as dash.js runs it (Spiteri, Sitaraman and
Sparacio, "From Theory to Practice: Improving Bitrate Adaptation in the DASH Reference
Player", MMSys 2018). Pure: each rule maps the player's state to a quality level.

- Throughput: the estimate is the mean of the last 4 segment throughputs (dash.js's sliding
  window for on-demand video), times a safety factor of 0.9; the highest level whose bitrate
  fits is chosen. Before any sample, an initial estimate (dash.js: 1000 kbit/s) stands in.
- BOLA: utilities v_m = ln(S_m / S_1) + 1; with a minimum buffer of 10 s and 2 s more per
  level, the buffer target is max(12 s, 10 + 2 M); gp = (v_M - 1) / (target / 10 - 1),
  V = 10 / gp, and the level maximising (V (v_m + gp) - Q) / S_m is chosen, Q the buffer in
  seconds. Start-up (no segment buffered yet) uses the throughput rule, and BOLA-O caps an
  upswitch above the safe throughput at max(throughput level, last level).
  BOLA-E's placeholder buffer, simplified: when BOLA takes over from start-up, a virtual
  buffer is added so that BOLA starts at the throughput rule's level (the least buffer at
  which BOLA picks it); it is capped so buffer + placeholder stays within the buffer target,
  and dropped after a stall.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

WINDOW = 4
SAFETY = 0.9
INITIAL_KBIT = 1000.0
STABLE_BUFFER_S = 12.0  # dash.js stableBufferTime
TOP_QUALITY_BUFFER_S = 30.0  # dash.js bufferTimeAtTopQuality
BOLA_MIN_BUFFER_S = 10.0
BOLA_BUFFER_PER_LEVEL_S = 2.0


@dataclass
class AbrState:
    levels_kbit: list[float]  # ascending
    buffer_s: float = 0.0
    last_level: int | None = None
    throughput_kbit: list[float] = field(default_factory=list)  # one sample per video segment
    stalls: int = 0  # stalls so far (the player counts them)
    placeholder_s: float | None = None  # BOLA's virtual buffer; None until BOLA takes over
    _stalls_seen: int = 0

    def safe_throughput(self) -> float:
        recent = self.throughput_kbit[-WINDOW:]
        estimate = sum(recent) / len(recent) if recent else INITIAL_KBIT
        return estimate * SAFETY


def level_for(levels_kbit: list[float], kbit: float) -> int:
    """The highest level whose bitrate is at most `kbit` (the lowest if none is)."""
    fits = [i for i, b in enumerate(levels_kbit) if b <= kbit]
    return fits[-1] if fits else 0


class ThroughputRule:
    name = "throughput"

    def choose(self, s: AbrState) -> int:
        return level_for(s.levels_kbit, s.safe_throughput())

    def target_buffer_s(self, s: AbrState, level: int) -> float:
        return TOP_QUALITY_BUFFER_S if level == len(s.levels_kbit) - 1 else STABLE_BUFFER_S


class BolaRule:
    name = "bola"

    def parameters(self, levels_kbit: list[float]) -> tuple[list[float], float, float, float]:
        """(utilities, gp, V, buffer target s)."""
        utilities = [math.log(b / levels_kbit[0]) + 1 for b in levels_kbit]
        target = max(STABLE_BUFFER_S, BOLA_MIN_BUFFER_S + BOLA_BUFFER_PER_LEVEL_S * len(levels_kbit))
        if len(levels_kbit) == 1:
            return utilities, 1.0, BOLA_MIN_BUFFER_S, target
        gp = (utilities[-1] - 1) / (target / BOLA_MIN_BUFFER_S - 1)
        return utilities, gp, BOLA_MIN_BUFFER_S / gp, target

    def choose(self, s: AbrState) -> int:
        safe_level = level_for(s.levels_kbit, s.safe_throughput())
        if s.last_level is None or not s.throughput_kbit:
            return safe_level  # start-up
        utilities, gp, v, target = self.parameters(s.levels_kbit)
        if s.placeholder_s is None:
            s.placeholder_s = max(0.0, self.min_buffer_for(s.levels_kbit, safe_level) - s.buffer_s)
        if s.stalls != s._stalls_seen:
            s.placeholder_s, s._stalls_seen = 0.0, s.stalls
        s.placeholder_s = max(0.0, min(s.placeholder_s, target - s.buffer_s))
        q = s.buffer_s + s.placeholder_s
        scores = [(v * (u + gp) - q) / b for u, b in zip(utilities, s.levels_kbit)]
        level = max(range(len(scores)), key=lambda i: (round(scores[i], 12), i))  # ties: higher
        if level > s.last_level and s.levels_kbit[level] > s.safe_throughput():
            level = max(safe_level, s.last_level)  # BOLA-O: no upswitch beyond the throughput
        return level

    def min_buffer_for(self, levels_kbit: list[float], level: int) -> float:
        """The least buffer (s) at which BOLA prefers `level` to every lower level."""
        utilities, gp, v, _ = self.parameters(levels_kbit)
        b_q, u_q = levels_kbit[level], utilities[level]
        least = 0.0
        for b_i, u_i in zip(levels_kbit[:level], utilities[:level]):
            if b_i < b_q:  # scores equal where Q = V (gp + (b_q u_i - b_i u_q) / (b_q - b_i))
                least = max(least, v * (gp + (b_q * u_i - b_i * u_q) / (b_q - b_i)))
        return least

    def target_buffer_s(self, s: AbrState, level: int) -> float:
        return self.parameters(s.levels_kbit)[3]


RULES = {"throughput": ThroughputRule, "bola": BolaRule}
