"""The sender's own clock: how fast it sends while it is sending, and how evenly, against
what its congestion window would allow. What the "pacing-limited" reason of the slow-stack
diagnosis reads (aggregate.diagnose):

- `send_mbit`: the bytes of its data packets after the first round trip over the time it
  was sending (gaps of 2+ RTTs, idle periods, left out): its own rate, from its log;
- `gap_regularity`: the 10th percentile over the median of the gaps between its releases (a
  release: packets sent within BURST_GAP_MS of each other, one pacer tick or one batch). A
  sender whose releases leave on a timer spaces nearly all of them alike (near 1); one that
  sends what the application or an ACK hands it in lumps does not (near 0);
- `window_mbit`: the median of cwnd x 8 / srtt at each send: the rate its window allows.

TCP: our server's log has no packets: no figures.
"""

from __future__ import annotations

import math

import numpy as np

from .trace import ConnTrace

MIN_GAPS = 50
BURST_GAP_MS = 0.05  # closer than this: one release (a packet at 200 Mbit/s takes 0.06 ms)


def send_clock(tr: ConnTrace) -> dict[str, float]:
    nan = {"send_mbit": math.nan, "gap_regularity": math.nan, "window_mbit": math.nan}
    if tr.is_tcp:
        return nan
    s = tr.sent
    s = s[s["packet_type"].isin(["1rtt", "onertt"]) & s["ack_eliciting"]]
    if len(s) <= MIN_GAPS:
        return nan
    t, size = s["t_ms"].to_numpy(float), s["size"].fillna(0).to_numpy(float)
    rtt = tr.min_rtt_ms() or tr.first_rtt_ms()
    after = t > t[0] + tr.first_rtt_ms()  # the initial window leaves at once
    t, size = t[after], size[after]
    if t.size <= MIN_GAPS:
        return nan
    gaps = np.diff(t)
    active = float(gaps[gaps < 2 * rtt].sum())
    out = dict(nan)
    if active > 0:
        out["send_mbit"] = float(size[1:].sum()) * 8 / (active * 1000)
    releases = gaps[(gaps >= BURST_GAP_MS) & (gaps < 2 * rtt)]
    if releases.size >= MIN_GAPS:
        out["gap_regularity"] = float(np.percentile(releases, 10) / np.median(releases))
    m = tr.metrics.dropna(subset=["cwnd", "srtt_ms"])
    m = m[m["srtt_ms"] > 0]
    if len(m):
        idx = np.clip(np.searchsorted(m["t_ms"].to_numpy(), t, side="right") - 1, 0, len(m) - 1)
        rate = m["cwnd"].to_numpy(float)[idx] * 8 / (m["srtt_ms"].to_numpy(float)[idx] * 1000)
        out["window_mbit"] = float(np.median(rate))
    return out


REGULAR = 0.5  # 10th-percentile gap between releases at least half the median: a timer
WINDOW_ROOM = 1.0  # the window allows at least the link's rate
FILL_FULL = 0.9  # in flight below this share of cwnd: the window is not what holds the next packet


def pacing_limited(
    send_mbit: float, gap_regularity: float, window_mbit: float, inflight_share: float, rate_mbit: float, slow: float
) -> bool:
    """The sender sends steadily (releases evenly spaced) at a rate below `slow` x the link's,
    while its window would allow the link's rate and is not full: its send clock, not the
    window, holds it back. A send loop that slow for another reason (a process short of CPU
    below the CPU rule) looks the same from the log, so the CPU rule is checked first."""
    figures = (send_mbit, gap_regularity, window_mbit, inflight_share)
    if not all(x == x for x in figures) or not rate_mbit:
        return False
    return (
        send_mbit < slow * rate_mbit
        and gap_regularity >= REGULAR
        and window_mbit >= WINDOW_ROOM * rate_mbit
        and inflight_share < FILL_FULL
    )
