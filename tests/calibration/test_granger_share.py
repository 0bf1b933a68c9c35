"""Null calibration of the per-session Granger verdicts with the paper's cause: F(t) =
T(t) / (T(t) + Q(t)), the share of the session's bytes over TCP so far (Chaudhary §6.1), on
5 s steps with lags up to 250 s (50 steps), as reproduce's chaudhary-granger reads
chaudhary-granger-long's 15-minute sessions.

A cumulative share is smooth where bytes per second are a step: after the fallback it
climbs towards 1 for the rest of the session, so its differences are a long ramp, not a
spike. The shift null moves TCP's and QUIC's bytes together (granger.null_index with
`cycle`: QUIC's traffic before the fallback continues up to a later onset) and recomputes
the share of every version, so each version has the observed share's shape.

Sessions: the player's samples once a second for 900 s (test_granger.playback, with switches
and stalls at rates for a long session), B and S by the video kind's own series, averaged
over 5 s; QUIC carries the segments until the fallback, TCP from it (a losing race's
handshake at t = 0 sometimes), the fallback where the scenario puts it, or from the start. Under the null
the fallback's time is drawn apart from B and S.

The paper's KPSS rule marks about half of these sessions unsuitable: the second differences
of B and S (sparse spikes at each switch and stall) fail KPSS at 0.042 where Schwert's lag
rule applies. The rule is the paper's, so it is kept, and a share over sessions counts only
the tested ones; it is why chaudhary-granger needs many sessions. 300 sessions: "F Granger-
causes B" in 1.2% of 85 tested, S 0% of 60, either 1.2% of 85 (alpha 0.05). Power (printed):
a drop of two levels 10 s after the fallback is found in 12% of 17 tested sessions, a stall
10 s after it in 0-22% of about 10 (it moves with the libraries' numerics): one session's
test has little power for either, which is why chaudhary-granger needs many sessions.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from longlook.analyses.fallback.session import analyze_session, summarize
from longlook.kinds.video.qoe import quality_drop_series, stall_series

from .harness import calibrates, check_rate
from .test_granger import SEGMENT_BYTES, playback

PRODUCER = "fallback.granger_session"
SECONDS = 900
STEP_S = 5
MAX_LAG = 50  # 250 s
N_NULL = 300


def transport(rng, onset: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Bytes over TCP and over QUIC per second: segment bursts over QUIC until `onset`, over
    TCP from it (None: never; 0: TCP from the start)."""
    bursts = SEGMENT_BYTES * (rng.random(SECONDS) < 0.3) * rng.uniform(0.5, 1.5, SECONDS)
    tcp, quic = np.zeros(SECONDS), bursts.copy()
    if onset is None:
        tcp[0] = 6000.0 if rng.random() < 0.5 else 0.0
        return tcp, quic
    tcp[onset:], quic[onset:] = bursts[onset:], 0.0
    tcp[onset] = SEGMENT_BYTES  # the request that failed over QUIC, again over TCP
    return tcp, quic


def frame(tcp: np.ndarray, quic: np.ndarray, samples, startup: float) -> pd.DataFrame:
    per_second = pd.DataFrame(
        {
            "F": tcp,
            "F_udp": quic,
            "B": [v for _, v in quality_drop_series(samples)],
            "S": [v for _, v in stall_series(samples, startup)],
        }
    )
    step = np.arange(SECONDS) // STEP_S
    return per_second.groupby(step).agg({"F": "sum", "F_udp": "sum", "B": "mean", "S": "mean"}).reset_index(drop=True)


def session(rng, onset: int | None, **playing) -> pd.DataFrame:
    samples, startup = playback(rng, SECONDS, **playing)
    return frame(*transport(rng, onset), samples, startup)


def null_session(rng) -> pd.DataFrame:
    """As chaudhary-granger-long makes them: UDP blocked from an onset uniform in [240, 600] s,
    the fallback at Chromium's 30 s idle timeout after it (90%), or TCP from the start where
    QUIC lost the race (10%); B and S apart from it."""
    onset = 0 if rng.random() < 0.1 else int(rng.integers(240, 601)) + 30
    return session(rng, onset, switch_rate=rng.uniform(0.005, 0.03), stall_rate=rng.uniform(0.001, 0.006))


def shares(frames: list[pd.DataFrame], alpha: float) -> dict:
    rows = [analyze_session(f, step_s=STEP_S, max_var_lag=MAX_LAG, cause="share").row() for f in frames]
    return summarize(pd.DataFrame(rows), alpha)


@calibrates(PRODUCER)
def test_independent_fallback_share_is_called_a_cause_at_most_alpha_of_the_time():
    alpha = 0.05
    rng = np.random.default_rng(43)
    s = shares([null_session(rng) for _ in range(N_NULL)], alpha)
    for what in ("B", "S", "either"):
        n = s[f"tested_{what}"]
        assert n >= 50, s
        false = int(round(s[f"granger_{what}_share"] * n))
        check_rate(PRODUCER, f'"F = T/(T+Q) Granger-causes {what}", 250 s lags, F independent', false, n, alpha)


def test_power_of_one_long_session_is_printed(capsys):
    """A fallback in the middle of the session followed, 10 s later, by a drop of two levels
    or a stall: how often one 15-minute session shows it. Printed, not asserted: it is about
    the null's alpha. With 40 sessions the stall was found in 2 of 9 tested on one machine's
    libraries and 0 of 10 on the next; with 120, in 4% of 23. What is asserted is what the
    row needs to say anything: the paper's KPSS rule leaves sessions to test for each effect
    (it marks about half unsuitable)."""
    alpha = 0.05
    rng = np.random.default_rng(7)
    power = {}
    for effect in ("B", "S"):
        frames = []
        for _ in range(40):
            onset = int(rng.integers(300, 600))
            frames.append(
                session(
                    rng,
                    onset,
                    switch_rate=0.01,
                    stall_rate=0.001 if effect == "B" else 0.002,
                    drop_at=onset + 10 if effect == "B" else None,
                    stall_at=onset + 10 if effect == "S" else None,
                )
            )
        s = shares(frames, alpha)
        power[effect] = (s[f"granger_{effect}_share"], s[f"tested_{effect}"])
    with capsys.disabled():
        for effect, (p, n) in power.items():
            print(
                f"\n{PRODUCER} power, 900 s sessions, F = T/(T+Q), 250 s lags, {effect} 10 s after the "
                f"fallback: {p:.0%} of {n}",
                end="",
            )
    assert all(n >= 5 for _, n in power.values()), power
