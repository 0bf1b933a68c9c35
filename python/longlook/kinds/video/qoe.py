"""A playback's quality of experience, from what either player recorded (pure functions).

Per run (Pensieve's linear QoE as Chaudhary et al. use it, §3; R in Mbit/s, stalls in s):

    QoE = mean R_n  -  sum |R_n+1 - R_n| / N  -  4.3 * (total stall s) / N

over the N video segments played, R_n the bitrate of segment n (the representation's declared
bandwidth). The start-up delay is reported apart (`startup_s`), not counted as a stall.

Series (Chaudhary §6.1), sampled every second of real time t from the request of the manifest:
- B(t) = (e(q_prev) - e(q_t)) * t_dur(q_t): e = quality level (1 = lowest), q_t the level
  being played, q_prev the level before the last switch, t_dur the time played since that
  switch. Positive after a drop, negative after a rise, 0 before any switch.
- S(t) = t - t_start - position(t): the stall accumulated since playback started.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any


from ...core.kind import Metric

STALL_PENALTY = 4.3  # Pensieve's mu for QoE_lin (Mbit/s per second of rebuffering)

QOE_METRICS = (
    Metric("qoe", "", "higher", "Pensieve QoE"),
    Metric("avg_bitrate_mbit", "Mbit/s", "higher", "average bitrate"),
    Metric("bitrate_variation_mbit", "Mbit/s", "lower", "average bitrate variation"),
    Metric("stall_s", "s", "lower", "total stall time"),
    # Langley et al. §6.5: rebuffer time / (rebuffer time + play time)
    Metric("rebuffer_rate", "", "lower", "rebuffer rate"),
    # 1 / (1 - rebuffer rate): the rate on a scale a ratio can be taken on (1 with no stall;
    # its log is the rebuffer rate while that is small)
    Metric("watch_per_play", "", "lower", "watch time per second played"),
    Metric("stall_count", "", "lower", "stalls"),
    Metric("startup_s", "s", "lower", "time to start"),
    Metric("switches", "", "lower", "quality switches"),
)


@dataclass
class Stall:
    start_s: float
    end_s: float  # the end of the run when playback never resumed

    @property
    def duration_s(self) -> float:
        return max(0.0, self.end_s - self.start_s)


@dataclass
class Sample:
    """The player once a second: t from the start of the run."""

    t_s: float
    position_s: float
    buffer_s: float
    level: int | None  # quality level being played, 0 = lowest
    stalled: bool


@dataclass
class Playback:
    """What a player hands over, whichever player it was."""

    levels_kbit: list[float]  # declared bitrate per quality level, ascending
    segment_levels: list[int]  # level of each video segment played, in order
    stalls: list[Stall] = field(default_factory=list)
    startup_s: float | None = None  # None: playback never started
    ended: bool = False  # played to the end
    end_s: float = 0.0  # when the run ended
    samples: list[Sample] = field(default_factory=list)


def qoe_metrics(p: Playback) -> dict[str, float | None]:
    rates = [p.levels_kbit[level] / 1000 for level in p.segment_levels]
    n = len(rates)
    stall_s = sum(s.duration_s for s in p.stalls)
    switches = sum(1 for a, b in zip(p.segment_levels, p.segment_levels[1:]) if a != b)
    played_s = max((x.position_s for x in p.samples), default=0.0)
    watched_s = played_s + stall_s
    out: dict[str, float | None] = {
        "stall_s": stall_s,
        "rebuffer_rate": stall_s / watched_s if watched_s > 0 else None,
        "watch_per_play": watched_s / played_s if played_s > 0 else None,
        "stall_count": float(len(p.stalls)),
        "startup_s": p.startup_s,
        "switches": float(switches),
        "avg_bitrate_mbit": None,
        "bitrate_variation_mbit": None,
        "qoe": None,
    }
    if n:
        avg = sum(rates) / n
        variation = sum(abs(b - a) for a, b in zip(rates, rates[1:])) / n
        out.update(
            avg_bitrate_mbit=avg, bitrate_variation_mbit=variation, qoe=avg - variation - STALL_PENALTY * stall_s / n
        )
    return out


def quality_drop_series(samples: list[Sample]) -> list[tuple[float, float]]:
    """B(t) for each sample (levels are 0-based here; only differences matter)."""
    out, current, prev, since = [], None, None, None
    for s in samples:
        if s.level is not None and s.level != current:
            if current is not None:
                prev, since = current, s.t_s
            current = s.level
        if prev is None or current is None:
            out.append((s.t_s, 0.0))
        else:
            out.append((s.t_s, float(prev - current) * (s.t_s - since)))
    return out


def stall_series(samples: list[Sample], startup_s: float | None) -> list[tuple[float, float]]:
    """S(t): real time since playback started minus the playback position (>= 0)."""
    if startup_s is None:
        return [(s.t_s, 0.0) for s in samples]
    return [(s.t_s, max(0.0, s.t_s - startup_s - s.position_s) if s.t_s >= startup_s else 0.0) for s in samples]


def temporal_qoe(p: Playback) -> list[tuple[float, float]]:
    """The QoE second by second (Chaudhary §4: "multiple temporal QoE values for one video",
    compared per session pair by Welch): at each sample once playback has a quality level,
    R_t - |R_t - R_prev| - 4.3 * stalled_t, with R_t the bitrate being played (Mbit/s) and
    stalled_t 1 during a stall (one second of it). Its mean is the run's QoE per second
    instead of per segment."""
    out, prev = [], None
    for s in p.samples:
        if s.level is None:
            continue
        rate = p.levels_kbit[s.level] / 1000
        out.append((s.t_s, rate - abs(rate - (rate if prev is None else prev)) - STALL_PENALTY * float(s.stalled)))
        prev = rate
    return out


def series_rows(p: Playback) -> list[dict[str, Any]]:
    """The run's time series for the store: buffer, level, bitrate, position, B(t), S(t), and
    the temporal QoE (`qoe_t`) session pairs are compared on."""
    rows = []
    for s in p.samples:
        rows.append({"name": "buffer_s", "key": "", "t_s": s.t_s, "value": s.buffer_s})
        rows.append({"name": "position_s", "key": "", "t_s": s.t_s, "value": s.position_s})
        rows.append({"name": "stalled", "key": "", "t_s": s.t_s, "value": float(s.stalled)})
        if s.level is not None:
            rows.append({"name": "level", "key": "", "t_s": s.t_s, "value": float(s.level)})
            rows.append({"name": "bitrate_mbit", "key": "", "t_s": s.t_s, "value": p.levels_kbit[s.level] / 1000})
    rows += [{"name": "B", "key": "", "t_s": t, "value": v} for t, v in quality_drop_series(p.samples)]
    rows += [{"name": "S", "key": "", "t_s": t, "value": v} for t, v in stall_series(p.samples, p.startup_s)]
    rows += [{"name": "qoe_t", "key": "", "t_s": t, "value": v} for t, v in temporal_qoe(p)]
    return [r for r in rows if math.isfinite(r["value"])]
