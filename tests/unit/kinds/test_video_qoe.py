"""Video QoE maths, the playback model and the ABR rules (pure; no network)."""

from __future__ import annotations

import math

import pytest

from longlook.kinds.video.native.abr import AbrState, BolaRule, ThroughputRule, level_for
from longlook.kinds.video.native.playback import PlaybackModel
from longlook.kinds.video.qoe import (
    Playback,
    Sample,
    Stall,
    qoe_metrics,
    quality_drop_series,
    series_rows,
    stall_series,
    temporal_qoe,
)

LEVELS = [100.0, 250.0, 500.0, 900.0, 2000.0]


def test_pensieve_qoe_by_hand():
    # 4 segments at 2, 2, 0.5, 0.9 Mbit/s, one stall of 3 s
    p = Playback(levels_kbit=LEVELS, segment_levels=[4, 4, 2, 3], stalls=[Stall(10.0, 13.0)], startup_s=0.4)
    m = qoe_metrics(p)
    avg = (2 + 2 + 0.5 + 0.9) / 4
    variation = (0 + 1.5 + 0.4) / 4
    assert m["avg_bitrate_mbit"] == pytest.approx(avg)
    assert m["bitrate_variation_mbit"] == pytest.approx(variation)
    assert m["qoe"] == pytest.approx(avg - variation - 4.3 * 3.0 / 4)
    assert (m["stall_count"], m["stall_s"], m["switches"], m["startup_s"]) == (1.0, 3.0, 2.0, 0.4)


def test_nothing_played_has_no_bitrate():
    m = qoe_metrics(Playback(levels_kbit=LEVELS, segment_levels=[]))
    assert m["qoe"] is None and m["avg_bitrate_mbit"] is None and m["startup_s"] is None


def test_b_and_s_series():
    samples = [Sample(t, 0, 0, lvl, False) for t, lvl in [(0, None), (1, 4), (2, 4), (3, 1), (4, 1), (5, 3)]]
    b = dict(quality_drop_series(samples))
    assert b[2] == 0.0  # no switch yet
    assert b[3] == 0.0 and b[4] == pytest.approx(3 * 1.0)  # dropped 4 -> 1, one second ago
    assert b[5] == pytest.approx((1 - 3) * 0.0)  # just rose 1 -> 3
    s = stall_series([Sample(0, 0, 0, None, False), Sample(2, 1.5, 0, 0, False), Sample(6, 2.0, 0, 0, True)], 0.5)
    assert dict(s) == {0: 0.0, 2: 0.0, 6: pytest.approx(3.5)}


def test_playback_plays_stalls_and_ends():
    m = PlaybackModel(segment_s=2.0, segments=3, levels_kbit=LEVELS)
    m.add(1.0, 4)  # plays from 1.0, buffer 2
    m.add(2.0, 4)  # buffer 1 + 2 = 3 at t=2, runs dry at 5
    m.add(7.0, 0)  # stall 5..7, then the last segment: ends at 9
    assert m.buffer_at(2.5) == pytest.approx(2.5)
    st = m.state_at(6.0)
    assert not st.playing and len(st.stalls) == 1 and st.stalls[0].start_s == pytest.approx(5.0)
    assert m.end_time() == pytest.approx(9.0)
    p = m.playback(9.0)
    assert p.startup_s == 1.0 and p.ended and p.segment_levels == [4, 4, 0]
    assert [(s.start_s, s.end_s) for s in p.stalls] == [(5.0, 7.0)]
    by_t = {s.t_s: s for s in p.samples}
    assert by_t[6.0].stalled and not by_t[8.0].stalled and by_t[8.0].level == 0
    assert by_t[3.0].level == 4 and by_t[3.0].position_s == pytest.approx(2.0)
    names = {r["name"] for r in series_rows(p)}
    assert {"buffer_s", "level", "bitrate_mbit", "B", "S", "stalled", "position_s", "qoe_t"} <= names
    # Langley's rebuffer rate: 2 s of rebuffering in 6 s played
    q = qoe_metrics(p)
    assert q["rebuffer_rate"] == pytest.approx(2 / 8) and q["watch_per_play"] == pytest.approx(8 / 6)


def test_no_stall_is_a_rebuffer_rate_of_0_and_nothing_played_has_none():
    m = PlaybackModel(segment_s=2.0, segments=2, levels_kbit=LEVELS)
    m.add(1.0, 4)
    m.add(2.0, 4)
    q = qoe_metrics(m.playback(5.0))
    assert (q["rebuffer_rate"], q["watch_per_play"]) == (0.0, 1.0)
    q = qoe_metrics(Playback(levels_kbit=LEVELS, segment_levels=[]))
    assert q["rebuffer_rate"] is None and q["watch_per_play"] is None


def test_temporal_qoe_by_hand():
    # no level yet, 2 Mbit/s, a stall at 2 Mbit/s, a drop to 0.5 Mbit/s
    samples = [
        Sample(0, 0, 0, None, False),
        Sample(1, 0, 1, 4, False),
        Sample(2, 1, 0, 4, True),
        Sample(3, 1, 1, 2, False),
    ]
    q = dict(temporal_qoe(Playback(levels_kbit=LEVELS, segment_levels=[4, 4, 2], samples=samples)))
    assert q == {1: pytest.approx(2.0), 2: pytest.approx(2.0 - 4.3), 3: pytest.approx(0.5 - 1.5)}


def test_an_open_stall_ends_with_the_run():
    m = PlaybackModel(segment_s=2.0, segments=5, levels_kbit=LEVELS)
    m.add(0.5, 2)
    p = m.playback(10.0)
    assert not p.ended and [(s.start_s, s.end_s) for s in p.stalls] == [(2.5, 10.0)]
    assert p.segment_levels == [2]


def test_throughput_rule():
    r = ThroughputRule()
    assert r.choose(AbrState(LEVELS)) == 3  # initial estimate 1000 kbit/s x 0.9 -> 900
    assert r.choose(AbrState(LEVELS, throughput_kbit=[5000, 100, 100, 100, 100])) == 0  # last 4 only
    assert r.choose(AbrState(LEVELS, throughput_kbit=[600, 600])) == 2  # 540 -> 500
    assert r.choose(AbrState(LEVELS, throughput_kbit=[2300])) == 4
    assert level_for(LEVELS, 50) == 0
    assert r.target_buffer_s(AbrState(LEVELS), 4) == 30 and r.target_buffer_s(AbrState(LEVELS), 2) == 12


def test_bola_parameters_and_thresholds():
    b = BolaRule()
    utilities, gp, v, target = b.parameters(LEVELS)
    assert utilities[0] == 1 and utilities[-1] == pytest.approx(1 + math.log(20))
    assert target == 20  # max(12, 10 + 2 x 5 levels)
    assert gp == pytest.approx((utilities[-1] - 1) / (20 / 10 - 1)) and v == pytest.approx(10 / gp)
    thresholds = [b.min_buffer_for(LEVELS, q) for q in range(5)]
    assert thresholds == sorted(thresholds) and thresholds[0] == 0
    for q, least in enumerate(thresholds):  # just above its threshold, BOLA picks the level
        s = AbrState(LEVELS, buffer_s=least + 0.01, last_level=q, throughput_kbit=[1e6], placeholder_s=0.0)
        assert b.choose(s) == q


def test_bola_starts_from_throughput_and_goes_down_when_the_buffer_drains():
    b = BolaRule()
    s = AbrState(LEVELS, throughput_kbit=[])
    assert b.choose(s) == 3  # start-up: the throughput rule's pick
    s.last_level, s.throughput_kbit, s.buffer_s = 3, [5000.0], 2.0
    assert b.choose(s) == 4  # placeholder buffer: continues at the throughput level or above
    s.last_level, s.buffer_s, s.throughput_kbit = 4, 1.0, [5000.0, 150.0, 150.0, 150.0]
    s.stalls = 1  # a stall drops the placeholder: the buffer alone decides
    assert b.choose(s) == 0


def test_bola_o_caps_upswitches_at_the_throughput():
    b = BolaRule()
    s = AbrState(LEVELS, buffer_s=19.0, last_level=1, throughput_kbit=[300.0] * 4, placeholder_s=0.0)
    assert b.choose(s) == 1  # BOLA alone would go to the top; 270 kbit/s safe -> stay at 1


def test_bytes_are_spread_over_each_request():
    from longlook.kinds.video.traffic import bytes_per_second

    per = bytes_per_second(
        [
            {"start_s": 0.5, "end_s": 2.5, "bytes": 2000, "protocol": "h3"},
            {"start_s": 1.0, "end_s": 1.5, "bytes": 100, "protocol": "h2"},
            {"start_s": None, "end_s": 1.0, "bytes": 5, "protocol": "h2"},
        ]
    )
    assert per["h3"] == pytest.approx([500, 1000, 500])
    assert per["h2"] == pytest.approx([0, 100, 0])


def test_bytes_per_second_skips_what_a_table_left_blank():
    """Records from a DataFrame carry NaN for a request with no protocol or no end; the
    figure that sorts the protocols must not meet a float among them."""
    import pandas as pd

    from longlook.kinds.video.traffic import bytes_per_second

    table = pd.DataFrame(
        [
            {"start_s": 0.0, "end_s": 1.0, "bytes": 1000, "protocol": "h2"},
            {"start_s": 0.2, "end_s": 0.8, "bytes": 50, "protocol": float("nan")},
            {"start_s": 0.5, "end_s": None, "bytes": 70, "protocol": "h3"},
        ]
    )
    per = bytes_per_second(table.to_dict("records"))
    assert list(per) == ["h2"]
    assert per["h2"] == pytest.approx([1000, 0])
