"""Null calibration of the per-session Granger verdicts (analyses/fallback/session.py:
`granger_verdicts` over `analyze_session`): "F Granger-causes B", "... S" and "either".

Sessions are built the way the video kind builds them, once a second for 60 s: the player's
samples (start-up of 1-3 s, a bitrate ladder of 5 levels that climbs from the bottom and
switches one level at a time, at a per-session rate, rare stalls of 1-4 s), turned into B
and S by the kind's own `quality_drop_series` and `stall_series`; F, the bytes over TCP per
second, is a step at the fallback (plain, or the bursts of segment downloads), from the
start, or nothing (sometimes a losing race's handshake at t = 0). Under the null F is drawn
apart from B and S, the fallback at a time uniform over the session; every rate is over the
sessions whose test ran, as `summarize` reports it. 600 sessions: "F Granger-causes B" in
4.0% of 348, S 2.1% of 189, either 4.9% of 364 (alpha 0.05); through the code before this
change the same sessions gave 23%, 14% and 25%.

Power (printed): B dropping two levels, or a stall starting, L s after a plain step. A
60 s session holds 44 other times the fallback could have come, and F moved to any time
between the fallback and the effect explains the effect with a shorter lag, so even a
perfect effect has p >= about L / 45 (granger.py). 200 sessions each: a drop 1 s after the
fallback is found in 18.5%, 2 s after in 14%, 3 s after in 3%; a stall 1 s after in 21%,
2 s after in 3.6%. One session says little; a share over sessions is where power can come
from.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from longlook.analyses.fallback.session import analyze_session, summarize
from longlook.kinds.video.qoe import Sample, quality_drop_series, stall_series

from .harness import calibrates, check_rate

PRODUCER = "fallback.granger_session"
SECONDS = 60
LEVELS = 5
SEGMENT_BYTES = 1.2e6


def playback(
    rng,
    n: int = SECONDS,
    *,
    switch_rate: float,
    stall_rate: float,
    drop_at: int | None = None,
    stall_at: int | None = None,
) -> tuple[list[Sample], float]:
    """The player's samples, once a second. `drop_at`: the level falls two steps then (the
    fallback's doing); `stall_at`: a 2-4 s stall starts then."""
    startup = int(rng.integers(1, 4))
    level, position, stall_left = int(rng.integers(0, 2)), 0.0, 0
    samples = []
    for t in range(n):
        if t < startup:
            samples.append(Sample(float(t), 0.0, 0.0, None, False))
            continue
        if t == drop_at:
            level = max(0, level - 2)
        elif rng.random() < switch_rate:
            up = rng.random() < (0.8 if level < 2 else 0.5)
            level = int(np.clip(level + (1 if up else -1), 0, LEVELS - 1))
        if t == stall_at:
            stall_left = int(rng.integers(2, 5))
        elif stall_left == 0 and rng.random() < stall_rate:
            stall_left = int(rng.integers(1, 5))
        stalled = stall_left > 0
        stall_left -= stalled
        position += not stalled
        samples.append(Sample(float(t), position, 5.0, level, stalled))
    return samples, float(startup)


def fallback_bytes(rng, onset: int | None, n: int = SECONDS, *, plain: bool | None = None) -> np.ndarray:
    """F: nothing (sometimes a losing race's handshake at t = 0) when `onset` is None, else 0
    before the onset and from it a plain step or the bursts of segment downloads."""
    f = np.zeros(n)
    if onset is None:
        f[0] = 6000.0 if rng.random() < 0.5 else 0.0
        return f
    m = n - onset
    plain = rng.random() < 0.5 if plain is None else plain
    f[onset:] = SEGMENT_BYTES if plain else SEGMENT_BYTES * (rng.random(m) < 0.6) * rng.uniform(0.5, 1.5, m)
    f[onset] = SEGMENT_BYTES  # the new connection's first request
    return f


def frame(f: np.ndarray, samples: list[Sample], startup: float) -> pd.DataFrame:
    return pd.DataFrame(
        {"F": f, "B": [v for _, v in quality_drop_series(samples)], "S": [v for _, v in stall_series(samples, startup)]}
    )


def null_session(rng) -> pd.DataFrame:
    """F apart from B and S: no fallback (15%), from the start (25%), at a time uniform over
    the session (60%)."""
    samples, startup = playback(rng, switch_rate=rng.uniform(0.02, 0.12), stall_rate=rng.uniform(0.005, 0.03))
    u = rng.random()
    onset = None if u < 0.15 else 0 if u < 0.4 else int(rng.integers(1, SECONDS - 1))
    return frame(fallback_bytes(rng, onset), samples, startup)


def null_sessions(seed: int, k: int) -> list[pd.DataFrame]:
    rng = np.random.default_rng(seed)
    return [null_session(rng) for _ in range(k)]


def shares(frames: list[pd.DataFrame], alpha: float) -> dict:
    """The project's path: one analyze_session per session, summarize over them (which draws
    the verdicts through granger_verdicts)."""
    return summarize(pd.DataFrame([analyze_session(fr).row() for fr in frames]), alpha)


@calibrates(PRODUCER)
def test_independent_fallback_is_called_a_cause_at_most_alpha_of_the_time():
    alpha = 0.05
    s = shares(null_sessions(40, 600), alpha)
    for what in ("B", "S", "either"):
        n = s[f"tested_{what}"]
        assert n >= 150, s
        false = int(round(s[f"granger_{what}_share"] * n))
        check_rate(PRODUCER, f'"F Granger-causes {what}", F independent of B and S', false, n, alpha)


def effect_sessions(seed: int, k: int, effect: str, lag: int) -> list[pd.DataFrame]:
    """A plain step at a time where its lag window fits; B drops two levels (or a stall
    starts) `lag` s later. Switches and stalls go on as in the null, stalls rarer where B is
    the effect (so that S, mostly flat, is mostly untested and Holm's family is B alone)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(k):
        onset = int(rng.integers(10, SECONDS - 12))
        samples, startup = playback(
            rng,
            switch_rate=0.04,
            stall_rate=0.005 if effect == "B" else 0.01,
            drop_at=onset + lag if effect == "B" else None,
            stall_at=onset + lag if effect == "S" else None,
        )
        out.append(frame(fallback_bytes(rng, onset, plain=True), samples, startup))
    return out


def test_power_of_one_session_is_printed(capsys):
    """The power of one 60 s session, printed; asserted only to be there where the floor
    L / 45 leaves room (an effect 1 s after the fallback)."""
    alpha = 0.05
    power = {}
    for effect, lag in (("B", 1), ("B", 2), ("B", 3), ("B", 4), ("S", 1), ("S", 3)):
        s = shares(effect_sessions(7 + lag, 60, effect, lag), alpha)
        power[effect, lag] = (s[f"granger_{effect}_share"], s[f"tested_{effect}"], s["granger_either_share"])
    with capsys.disabled():
        for (effect, lag), (p, n, either) in power.items():
            print(
                f"\n{PRODUCER} power, 60 s sessions, {effect} {lag} s after the fallback: "
                f"'F Granger-causes {effect}' {p:.0%} of {n}, either {either:.0%}",
                end="",
            )
    assert power["B", 1][0] >= 0.1 and power["S", 1][0] >= 0.1, power
