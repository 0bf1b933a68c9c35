"""The fallback causality pipeline on synthetic series whose truth we know."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from longlook.analyses.fallback import (
    analyze_session,
    analyze_sessions,
    bytes_per_second,
    compare_patterns,
    cross_correlation,
    granger_test,
    linkem_start_mono_ms,
    make_stationary,
    on_grid,
    pair_verdicts,
    series_rows,
    summarize,
)
from longlook.analyses.fallback.figures import fig12_svg
from longlook.analyses.fallback.granger import null_versions
from longlook.analyses.fallback.session import granger_verdicts
from longlook.analyses.fallback.stationarity import kpss_p
from longlook.errors import LonglookError


def ar1(rng, n: int, phi: float = 0.5) -> np.ndarray:
    e = rng.normal(size=n + 50)
    x = np.zeros_like(e)
    for t in range(1, len(e)):
        x[t] = phi * x[t - 1] + e[t]
    return x[50:]


def driven(seed: int, n: int = 200, lag: int = 3) -> pd.DataFrame:
    """F drives B with `lag`; S is independent of both."""
    rng = np.random.default_rng(seed)
    f = ar1(rng, n + lag)
    b = 0.8 * f[:-lag] + 0.6 * rng.normal(size=n)
    return pd.DataFrame({"F": f[lag:], "B": b, "S": ar1(rng, n)})


def test_lag_3_driver_is_granger_causal_and_lag_recovered():
    """A lag-3 driver is found, as far as one session can show it: F moved one or two steps
    later "explains" B just as well with lag 2 or 1, so no shift null puts it below
    3 / (versions + 1) (here 3/200); the textbook F-test's p is astronomically small."""
    for seed in range(5):
        r = analyze_session(driven(seed))
        assert r.suitable and r.diff_order == 0
        assert r.p_B <= 3 / (r.shifts + 1) and r.shifts == 199, (seed, r)
        assert r.p_B_ftest < 1e-20 and r.lag_order_B >= 3, (seed, r)
        assert r.lag_B_s == 3.0 and r.corr_B > 0.5, (seed, r)


def test_independent_series_mostly_not_rejected():
    rejected = 0
    seeds = range(40)
    for seed in seeds:
        rng = np.random.default_rng(1000 + seed)
        g = granger_test(ar1(rng, 200), ar1(rng, 200))
        rejected += g.p_value < 0.05
    assert rejected <= 0.1 * len(seeds), rejected


def test_independent_sessions_shaped_like_the_video_kinds_are_rarely_called_causal():
    """F a step (or bursts) at a random time, B and S from the video kind's own series of an
    independent player: the old reading (the F-test's p, an uncorrected "or") called a
    quarter of these sessions causal; the shift null with Holm over B and S stays near alpha."""
    from calibration.test_granger import null_sessions, shares

    s = shares(null_sessions(7, 150), 0.05)
    assert s["tested_either"] >= 60, s
    assert s["granger_either_share"] <= 0.12 and s["granger_B_share"] <= 0.12, s


def test_verdicts_are_holm_over_the_tests_that_ran():
    v = granger_verdicts([0.03, 0.03, 0.01, np.nan, 0.2], [0.03, np.nan, 0.04, np.nan, 0.01], alpha=0.05)
    assert list(v["causes_B"]) == [False, True, True, False, False]
    assert list(v["causes_S"]) == [False, False, True, False, True]
    assert list(v["causes_either"]) == [False, True, True, False, True]
    assert list(v["tested_either"]) == [True, True, True, False, True]
    assert v["p_B_holm"].iloc[0] == pytest.approx(0.06) and v["p_S_holm"].iloc[2] == pytest.approx(0.04)


def test_the_null_moves_the_fallback_and_keeps_its_shape():
    f = np.r_[np.zeros(30), [5.0, 1.0, 3.0] * 10]
    versions, kind, why = null_versions(f, order=1, max_lag=7)
    assert why is None and kind == "fallback onset moved" and (versions[0] == f).all()
    onsets = [int(np.argmax(v > 0)) for v in versions[1:]]
    assert onsets == [u for u in range(8, 53) if u != 30]
    early = versions[1 + onsets.index(8)]  # what followed the onset, repeated from its start
    assert (early[:8] == 0).all() and list(early[8:14]) == [5.0, 1.0, 3.0, 5.0, 1.0, 3.0]
    late = versions[1 + onsets.index(52)]
    assert list(late[52:]) == [5.0, 1.0, 3.0, 5.0, 1.0, 3.0, 5.0, 1.0]
    # a losing race's handshake at t = 0 stays where it was; the fallback is what moves
    handshake = f.copy()
    handshake[0] = 0.01
    versions, _, _ = null_versions(handshake, order=1, max_lag=7)
    assert (versions[:, 0] == 0.01).all() and len(versions) == 45
    # too near the end for the lag window: no null, said why
    _, _, why = null_versions(np.r_[np.zeros(57), 1.0, 1.0, 1.0], order=1, max_lag=7)
    assert "no room for its lag window" in why
    # there from the start: rotated
    segments = 10.0 + np.arange(60) % 7
    versions, kind, _ = null_versions(segments, order=0, max_lag=7)
    assert kind == "circular shift" and len(versions) == 60 and (versions[1] == np.roll(segments, 1)).all()


def test_the_paper_s_share_moves_tcp_and_quic_together():
    """F = T/(T+Q) so far: a version moves the fallback of both byte series at once, and
    QUIC's traffic before the fallback goes on up to a later onset."""
    from longlook.analyses.fallback.granger import cumulative_share, null_index, take

    assert list(cumulative_share(np.array([0.0, 1, 1, 0]), np.array([0.0, 1, 0, 2]))) == [0.0, 0.5, 2 / 3, 0.4]
    tcp = np.r_[np.zeros(30), np.full(30, 4.0)]
    quic = np.r_[[9.0], np.full(29, 2.0), np.zeros(30)]
    index, kind, why = null_index(tcp, order=1, max_lag=7, cycle=True)
    assert why is None and kind == "fallback onset moved" and (take(tcp, index[:1]) == tcp).all()
    u = [int(np.argmax(v > 0)) for v in take(tcp, index[1:])]
    late = index[1 + u.index(52)]
    q = take(quic, late[None, :])[0]
    # QUIC continues at its pre-fallback rate up to step 52 (the session's first step is not
    # repeated), and carries nothing after; TCP takes over at 52
    assert q[0] == 9.0 and (q[1:52] == 2.0).all() and (q[52:] == 0).all()
    assert (take(tcp, late[None, :])[0][:52] == 0).all()
    share = cumulative_share(take(tcp, index), take(quic, index))
    assert (share[:, 0] == 0).all() and np.all(np.diff(share[0, 30:]) > 0)
    # without cycling (bytes over TCP alone) the old null is unchanged
    old, _, _ = null_versions(tcp, order=1, max_lag=7)
    assert (take(tcp, null_index(tcp, order=1, max_lag=7)[0]) == old).all()


def test_a_session_read_with_the_paper_s_share_needs_quic_s_bytes():
    rng = np.random.default_rng(3)
    n = 120
    tcp = np.r_[np.zeros(60), rng.uniform(1e5, 2e5, 60)]
    quic = np.r_[rng.uniform(1e5, 2e5, 60), np.zeros(60)]
    b = np.cumsum(rng.random(n) < 0.05).astype(float)
    s = np.r_[np.zeros(70), np.arange(50, dtype=float)]
    frame = pd.DataFrame({"F": tcp, "F_udp": quic, "B": b, "S": s})
    r = analyze_session(frame, step_s=5, max_var_lag=10, cause="share")
    assert (r.cause, r.max_lag) == ("share", 10) and r.suitable and r.shifts > 0 and 0 < r.p_S <= 1
    rows = pd.DataFrame(
        [
            {"run_id": 1, "name": k, "t_s": float(t), "value": float(v)}
            for k in ("F", "B", "S")
            for t, v in enumerate(frame[k])
        ]
    )
    out = analyze_sessions(rows, how={"F": "sum"}, cause="share")
    assert "F_udp" in out["error"].iloc[0]
    with pytest.raises(ValueError, match="cause 'tcp'"):
        analyze_session(frame, cause="tcp")


def test_cross_correlation_lag_and_constant():
    rng = np.random.default_rng(7)
    x = rng.normal(size=300)
    y = np.r_[np.zeros(5), x[:-5]] + 0.2 * rng.normal(size=300)
    cc = cross_correlation(x, y, max_lag=20)
    assert cc.lag == 5 and cc.max_corr > 0.9
    flat = cross_correlation(x, np.zeros(300))
    assert np.isnan(flat.max_corr) and flat.lag is None


def test_kpss_differencing_path():
    rng = np.random.default_rng(3)
    n = 300
    noise = rng.normal(size=(n, 3))
    frame = pd.DataFrame(noise, columns=["F", "B", "S"])
    assert make_stationary(frame).order == 0
    walk = frame.assign(F=np.cumsum(noise[:, 0]))
    assert make_stationary(walk).order == 1
    twice = frame.assign(B=np.cumsum(np.cumsum(noise[:, 1])))
    st = make_stationary(twice)
    assert st.order == 2 and len(st.data) == n - 2
    growing = frame.assign(S=np.exp(np.arange(n) / 20.0))
    st = make_stationary(growing)
    assert st.order is None and st.data is None and set(st.kpss_p) == {0, 1, 2}
    r = analyze_session(growing)
    assert not r.suitable and np.isnan(r.p_B) and "second differences" in r.reason_B


def test_constant_effect_is_not_tested():
    frame = driven(1, lag=1).assign(S=0.0)
    r = analyze_session(frame)
    assert r.p_B < 0.01 and np.isnan(r.p_S) and r.reason_S == "a series is constant"
    assert r.p_B_holm == r.p_either == r.p_B  # a family of one test


def test_sessions_from_long_rows_and_summary():
    rows = []
    for i in range(3):
        frame = driven(i, n=120, lag=1)  # a lag-L driver's p is at best L / 120 (see above)
        for name in ("F", "B", "S"):
            # 4 samples per second: on_grid averages each second back to the series
            for t, v in enumerate(frame[name]):
                rows += [{"run_id": f"r{i}", "name": name, "t_s": t + k / 4, "value": v} for k in range(4)]
    rows.append({"run_id": "r9", "name": "F", "t_s": 0.0, "value": 1.0})  # no B or S
    results = analyze_sessions(pd.DataFrame(rows))
    assert list(results["run_id"]) == ["r0", "r1", "r2", "r9"]
    assert "B" in results.set_index("run_id").loc["r9", "error"]
    s = summarize(results)
    assert s["sessions"] == 4 and s["analysed"] == 3 and s["granger_B_share"] == 1.0
    assert s["granger_either_share"] == 1.0 and s["median_corr_B"] > 0.5
    svg = fig12_svg(results)
    assert svg.startswith("<svg") and "CCDF" in svg


def test_kpss_of_a_mostly_zero_series_does_not_fail():
    """Hobijn's automatic lag is undefined for a series that is zero but for a few values
    (found in a real session: the second difference of a stall series); the p-value still
    comes, from Schwert's lag rule."""
    stalled_s = np.array([0.0] * 82 + [0.727949] + [1.568964] * 24)  # one stall, then flat
    p = kpss_p(np.diff(stalled_s, 2))
    assert 0.0 < p <= 1.0


def test_sessions_without_fallback_are_counted_but_not_tested():
    """A QUIC-enabled session that never fell back has F = 0 throughout: it counts in the
    fallback share, but its Granger test cannot run and must not count as a non-rejection."""
    rows = []
    for i, fell_back in enumerate([True, True, False, False]):
        frame = driven(i, n=120, lag=1)
        if not fell_back:
            frame["F"] = 0.0
        for name in ("F", "B", "S"):
            rows += [
                {"run_id": f"r{i}", "name": name, "t_s": float(t), "value": abs(v)} for t, v in enumerate(frame[name])
            ]
        rows += [{"run_id": f"r{i}", "name": "F_udp", "t_s": float(t), "value": 100.0} for t in range(120)]
    results = analyze_sessions(pd.DataFrame(rows), how={"F": "sum"})
    s = summarize(results)
    assert s["sessions"] == 4 and s["fell_back"] == s["tcp_flow"] == 2
    assert 0 < s["tcp_bytes_share"] < 1
    # with the protocol that served each session: a race's losing TCP flow is no fallback
    served = summarize(results.assign(served=["mixed", "h3", "h3", "h3"]))
    assert served["fell_back"] == 1 and served["tcp_flow"] == 2
    assert s["tested_B"] == 2 and s["tested_either"] == 2  # F constant: nothing to test
    assert s["granger_B_share"] == 1.0 and s["granger_either_share"] == 1.0


def test_on_grid_forward_fills_and_sums():
    rows = pd.DataFrame(
        {"name": ["F", "F", "B", "B", "S"], "t_s": [0.2, 3.5, 0.0, 2.1, 0.0], "value": [10.0, 5.0, 1.0, 2.0, 0.0]}
    )
    g = on_grid(rows, how={"F": "sum"})
    assert list(g.index) == [0.0, 1.0, 2.0, 3.0]
    assert list(g["F"]) == [10.0, 0.0, 0.0, 5.0]
    assert list(g["B"]) == [1.0, 1.0, 2.0, 2.0]
    with pytest.raises(LonglookError, match="S"):
        on_grid(rows[rows["name"] != "S"])


def test_bytes_per_second_from_flow_log(tmp_path: Path):
    server = "198.18.2.2"
    lines = [
        {
            "t": 0.1,
            "direction": "down",
            "proto": "udp",
            "src": f"{server}:4433",
            "dst": "198.18.1.2:5000",
            "bytes": 1000,
        },
        {
            "t": 0.5,
            "direction": "down",
            "proto": "udp",
            "src": f"{server}:4433",
            "dst": "198.18.1.2:5000",
            "bytes": 3000,
        },
        {"t": 1.0, "direction": "up", "proto": "udp", "src": "198.18.1.2:5000", "dst": f"{server}:4433", "bytes": 500},
        {
            "t": 1.2,
            "direction": "down",
            "proto": "tcp",
            "src": f"{server}:4433",
            "dst": "198.18.1.2:6000",
            "bytes": 4000,
        },
        {
            "t": 2.7,
            "direction": "down",
            "proto": "tcp",
            "src": f"{server}:4433",
            "dst": "198.18.1.2:6000",
            "bytes": 10000,
        },
        {
            "t": 2.7,
            "direction": "down",
            "proto": "tcp",
            "src": f"{server}:7000",
            "dst": "198.18.1.2:6001",
            "bytes": 99999,
        },
        {
            "t": 2.8,
            "direction": "down",
            "proto": "tcp",
            "src": "10.0.0.1:4433",
            "dst": "198.18.1.2:6002",
            "bytes": 99999,
        },
    ]
    log = tmp_path / "flows.jsonl"
    log.write_text("".join(json.dumps(x) + "\n" for x in lines))
    f = bytes_per_second(log, server, {4433})
    assert list(f.index) == [0.0, 1.0, 2.0]
    # the up line at t = 1.0 closes the first second
    assert list(f["udp"]) == [3500.0, 0.0, 0.0]
    assert list(f["tcp"]) == [0.0, 4000.0, 6000.0]
    down = bytes_per_second(log, server, {4433}, directions=("down",), start_s=1.0, end_s=4.0)
    assert list(down["tcp"]) == [4000.0, 6000.0, 0.0] and down["udp"].sum() == 0
    rows = series_rows(down)
    assert rows[1] == {"name": "F", "key": "", "t_s": 1.0, "value": 6000.0} and len(rows) == 6
    assert linkem_start_mono_ms({"mono_ms": 5000.0, "elapsed_s": 2.0}) == 3000.0
    log.write_text("{torn last li")
    assert bytes_per_second(log, server).empty
    with pytest.raises(LonglookError, match="no such flow log"):
        bytes_per_second(tmp_path / "none.jsonl", server)


def test_patterns_welch_and_tcp_better_or_same_share():
    rng = np.random.default_rng(0)
    rows = []
    for r in range(10):
        for pattern, arm, level in (("DL", "h3", 1.0), ("DL", "h2", 2.0), ("DH", "h3", 3.0), ("DH", "h2", 1.0)):
            temporal = level + 0.1 * rng.normal(size=30)
            rows.append(
                {
                    "pattern": pattern,
                    "cell_id": pattern,
                    "arm": arm,
                    "round": r,
                    "qoe": float(temporal.mean()),
                    "samples": temporal,
                }
            )
    out = compare_patterns(pd.DataFrame(rows), samples="samples").set_index("pattern")
    assert out.loc["DL", "verdict"] == "TCP better" and out.loc["DL", "tcp_better_or_same_share"] == 1.0
    assert out.loc["DH", "verdict"] == "QUIC better" and out.loc["DH", "tcp_better_or_same_share"] == 0.0
    assert out.loc["DL", "p_welch"] < 1e-6 and out.loc["DL", "pairs"] == 10
    # the pair test (qoe.py) on block means: a pair that cannot tell is "undecided", never
    # "the same" by a test that failed
    same = rng.normal(size=50)
    assert pair_verdicts([same, same + 5], [same + 0.01, same]) == ["undecided", "quic_better"]
    # one number per session is no sample: not testable, on neither side
    assert pair_verdicts([1.0], [2.0]) == ["not testable"]


def fbs_series(r: int) -> list[dict]:
    """Series F, B and S of one session (F drives B, one step later)."""
    frame = driven(r, n=120, lag=1)
    return [
        {"name": n, "key": "", "t_s": float(t), "value": float(v)}
        for n in ("F", "B", "S")
        for t, v in enumerate(frame[n])
    ]


def fallback_store(directory: Path, rounds: int, records) -> None:
    """A page-load store of one cell holding `records(cell_id)` (RunRecords)."""
    from longlook.core.store import Store
    from longlook.kinds.pageload import Scenario

    scenario = Scenario.from_toml(
        f'name = "fb"\nrounds = {rounds}\nworkloads = ["1x10k"]\n[[links]]\nrate_mbit = 10\nrtt_ms = 36\n'
    )
    with Store.open(directory) as s:
        s.start_experiment(scenario, {})
        for rec in records(scenario.cells()[0].id):
            s.record_run(rec)


def test_store_analysis_and_cli(tmp_path: Path):
    """Any kind's store with series F, B, S and a QoE metric: sessions, patterns, outputs."""
    from typer.testing import CliRunner

    from longlook.analyses.fallback.from_store import analyze_store
    from longlook.cli import app
    from longlook.core.record import RunRecord

    # the temporal QoE the pairs are compared on (series qoe_t): TCP plays 2 Mbit/s, QUIC 1
    # with a 10 s stall
    def temporal(level, stall=range(0)):
        return [{"name": "qoe_t", "key": "", "t_s": float(t), "value": level - 4.3 * (t in stall)} for t in range(120)]

    fallback_store(
        tmp_path,
        3,
        lambda cell: [
            rec
            for r in range(3)
            for rec in (
                RunRecord(
                    run_id=f"q{r}",
                    cell_id=cell,
                    round=r,
                    position=0,
                    arm="h3",
                    status="ok",
                    metrics={"qoe": 1.0 + r / 10},
                    series=fbs_series(r) + temporal(1.0, range(40, 50)),
                ),
                RunRecord(
                    run_id=f"t{r}",
                    cell_id=cell,
                    round=r,
                    position=1,
                    arm="h2",
                    status="ok",
                    metrics={"qoe": 2.0 + r / 10},
                    series=temporal(2.0),
                ),
            )
        ],
    )
    result = analyze_store(tmp_path)
    assert list(result.sessions["run_id"]) == ["q0", "q1", "q2"]
    assert (result.sessions["pair_verdict"] == "tcp_better").all()
    assert result.summary["tcp_better_or_same"]["granger_B_share"] == 1.0
    assert result.patterns.iloc[0]["verdict"] == "TCP better"
    out = CliRunner().invoke(app, ["analyze", "fallback", str(tmp_path), "--out", str(tmp_path / "fb")])
    assert out.exit_code == 0, out.output
    assert (tmp_path / "fb" / "fallback-fig12.svg").exists() and "Granger" in out.output
    out = CliRunner().invoke(app, ["analyze", "fallback", str(tmp_path), "--out", str(tmp_path / "fb"), "--json"])
    doc = json.loads(out.output)
    assert str(tmp_path / "fb" / "fallback-fig12.svg") in doc["files"]
    assert doc["patterns"][0]["verdict"] == "TCP better" and "pairs" in doc["summary"]


def test_flagged_retries_are_one_session_per_round(tmp_path: Path):
    """With flagged runs kept, a round's retried arm has two attempts: the last one counts,
    so sessions and pairs are not doubled."""
    from longlook.analyses.fallback.from_store import analyze_store
    from longlook.core.record import RunRecord

    # the first attempt of each arm was flagged and retried
    fallback_store(
        tmp_path,
        2,
        lambda cell: [
            rec
            for r in range(2)
            for attempt in (1, 2)
            for rec in (
                RunRecord(
                    run_id=f"q{r}a{attempt}",
                    cell_id=cell,
                    round=r,
                    position=0,
                    arm="h3",
                    attempt=attempt,
                    status="ok",
                    series=fbs_series(r),
                    audit={"flagged": attempt == 1},
                    metrics={"qoe": 1.0},
                ),
                RunRecord(
                    run_id=f"t{r}a{attempt}",
                    cell_id=cell,
                    round=r,
                    position=1,
                    arm="h2",
                    attempt=attempt,
                    status="ok",
                    audit={"flagged": attempt == 1},
                    metrics={"qoe": 2.0},
                ),
            )
        ],
    )
    result = analyze_store(tmp_path, include_flagged=True)
    assert list(result.sessions["run_id"]) == ["q0a2", "q1a2"]
    assert result.patterns.iloc[0]["pairs"] == 2
