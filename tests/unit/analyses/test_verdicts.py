"""Verdicts that are never silently wrong: one test per item of the review, each
failing on the code before it and passing now. Items 10 (adaptive rounds) and 11
(E-Divisive) are in tests/unit/core/test_compare_adaptive.py and
tests/unit/analyses/test_compare_history.py.

The simulations print their figures (pytest -s shows them)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from typer.testing import CliRunner

from longlook.analyses.compare.change import Verdict as Gate
from longlook.analyses.compare.change import compare_experiments
from longlook.analyses.compare.experiments import load_side
from longlook.analyses.fallback.granger import granger_test
from longlook.analyses.fallback.qoe import compare_patterns, pair_verdicts
from longlook.analyses.reproduce import FAILS, HOLDS, UNCLEAR, Cells, Measured, PairShare, Ratio
from longlook.cli import app
from longlook.core.record import RunRecord
from longlook.core.spec import Statistics, parse_scenario
from longlook.core.stats import Verdict, compare_cells, compare_samples
from longlook.core.store import Store

VIDEO = 'kind = "video"\nname = "gate"\nrounds = 6\n[link]\nrate_mbit = 10\nrtt_ms = 36\n'


def _video_store(directory: Path, stall_s: list[float]) -> None:
    """A video experiment whose h3 and h2 runs have the given stall times, round by round."""
    sc = parse_scenario(VIDEO)
    cell = sc.cells()[0]
    with Store.open(directory) as st:
        st.start_experiment(sc, {})
        for r, stall in enumerate(stall_s):
            for pos, arm in enumerate(("h3", "h2")):
                st.record_run(
                    RunRecord(
                        run_id=f"{directory.name}-{r}-{arm}",
                        cell_id=cell.id,
                        round=r,
                        position=pos,
                        arm=arm,
                        status="ok",
                        protocol_requested=arm,
                        protocol_negotiated=arm,
                        metrics={"stall_s": stall},
                    )
                )
        st.finish_experiment()


def test_item01_gate_calls_a_stall_that_appears_a_regression(tmp_path):
    _video_store(tmp_path / "base", [0.0] * 6)
    _video_store(tmp_path / "cand", [1.0, 1.2, 0.9, 1.15, 1.05, 1.3])
    res = compare_experiments(
        load_side(tmp_path / "base", "BASE"), load_side(tmp_path / "cand", "CAND"), metrics=["stall_s"]
    )
    [h3, h2] = res.changes
    assert h3.verdict is Gate.REGRESSION and h2.verdict is Gate.REGRESSION
    assert math.isnan(h3.change_pct) and h3.change == pytest.approx(1.1) and "BASE mean 0" in h3.note
    assert h3.p_adjusted < 0.01 and res.exit_status() == 1
    # the command says so and exits 1
    out = CliRunner().invoke(app, ["compare", str(tmp_path / "base"), str(tmp_path / "cand"), "--metric", "stall_s"])
    assert out.exit_code == 1, out.output
    assert "regression" in out.output and "+1.1 s" in out.output
    # and the other way round a stall that disappears is an improvement
    back = compare_experiments(
        load_side(tmp_path / "cand", "BASE"), load_side(tmp_path / "base", "CAND"), metrics=["stall_s"]
    )
    assert {c.verdict for c in back.changes} == {Gate.IMPROVEMENT} and back.exit_status() == 0


def _fairness_null(rng, reps: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """QUIC and TCP throughput of n runs sharing one bottleneck: capacity C varies by run,
    QUIC's share s around 1/2 (H0: neither takes more), TCP gets the rest."""
    c = 2.5 * rng.lognormal(0, 0.05, (reps, n))
    s = np.clip(0.5 + rng.normal(0, 0.08, (reps, n)), 0.05, 0.95)
    return c * s, c * (1 - s)


def test_item02_flows_of_one_run_are_compared_paired(capsys):
    """Flows that share a bottleneck are negatively correlated: an unpaired test of them
    rejects a true null far too often; the paired t on the per-run log ratio keeps alpha,
    and its interval covers."""
    rng = np.random.default_rng(2)
    reps = 1500
    for n in (3, 5, 10):
        quic, tcp = _fairness_null(rng, reps, n)
        paired = [compare_samples(q, t, alpha=0.05, paired=True, lower_is_better=False) for q, t in zip(quic, tcp)]
        rate = np.mean([c.verdict.significant for c in paired])
        cover = np.mean([c.ci_low <= 0 <= c.ci_high for c in paired])
        unpaired = np.mean(sps.ttest_ind(quic, tcp, axis=1, equal_var=False).pvalue < 0.05)
        print(
            f"item 2, n = {n}: rejects a true null {rate:.3f} paired vs {unpaired:.3f} unpaired "
            f"(alpha 0.05); paired 95% interval covers {cover:.3f}"
        )
        se = math.sqrt(0.05 * 0.95 / reps)
        assert rate <= 0.05 + 3 * se and unpaired > 0.10
        assert cover >= 0.95 - 3 * se
        assert paired[0].test == "paired_t" and paired[0].interval == "paired t on the log ratio"
    # the fairness claims read the flows paired by run
    runs, flows = [], []
    q, t = _fairness_null(np.random.default_rng(5), 1, 6)
    for r in range(6):
        runs.append(
            {
                "run_id": f"run{r}",
                "cell_id": "x",
                "round": r,
                "arm": "flows",
                "status": "ok",
                "protocol_requested": None,
                "protocol_negotiated": None,
                "audit_flagged": False,
            }
        )
        flows += [
            {"run_id": f"run{r}", "flow": "QUIC", "router_mbit": q[0, r] * 1.7},
            {"run_id": f"run{r}", "flow": "TCP", "router_mbit": t[0, r]},
        ]
    m = Measured(
        cells=pd.DataFrame({"cell_id": ["x"], "dims": [{"matchup": "QUIC vs TCP"}]}),
        runs=pd.DataFrame(runs),
        flows=pd.DataFrame(flows),
    )
    out = Ratio("QUIC", "TCP", at_least=1.5, metric="router_mbit", flows=True).evaluate(m)
    assert out.cells[0]["interval"] == "paired t on the log ratio"
    assert "geometric mean of the per-run ratios" in out.detail


def test_item03_a_nan_qoe_pair_is_not_testable_never_quic_better(tmp_path):
    assert pair_verdicts([np.nan], [0.5]) == ["not testable"]
    assert pair_verdicts([[1.0, np.nan, 2.0, 1.5]], [[1.0, 1.1, 0.9, 1.2]]) == ["not testable"]
    # in the store analysis, a session without the metric is counted apart
    from unit.analyses.test_fallback_analysis import fallback_store, fbs_series

    from longlook.analyses.fallback.from_store import analyze_store

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
                    metrics={"qoe": None if r == 0 else 1.0},
                    series=fbs_series(r),
                ),
                RunRecord(
                    run_id=f"t{r}", cell_id=cell, round=r, position=1, arm="h2", status="ok", metrics={"qoe": 2.0}
                ),
            )
        ],
    )
    result = analyze_store(tmp_path)
    assert result.summary["missing_metric"] == 1
    assert result.patterns.iloc[0]["n_missing"] == 1 and result.patterns.iloc[0]["n_quic"] == 2
    assert set(result.sessions["pair_verdict"]) == {"not testable"}  # no temporal QoE recorded here
    assert result.summary["tcp_better_or_same"]["sessions"] == 0


def test_item04_pairs_are_joined_on_cell_and_round():
    """Two cells (players) under one link name: each round pairs within its cell only."""
    rng = np.random.default_rng(4)
    rows = [
        {
            "pattern": "DL",
            "cell_id": cell,
            "arm": arm,
            "round": r,
            "qoe": 1.0,
            "samples": 1.0 + 0.1 * rng.normal(size=20),
        }
        for cell in ("player=native", "player=dashjs")
        for r in range(3)
        for arm in ("h3", "h2")
    ]
    out = compare_patterns(pd.DataFrame(rows), samples="samples")
    assert out.iloc[0]["pairs"] == 6  # 2 cells x 3 rounds, not 12 (many-to-many within a round)


def _temporal(m_runs: list[dict], rng, level) -> list[dict]:
    return [
        {"run_id": r["run_id"], "name": "qoe_t", "t_s": float(t), "value": level(r) + 0.3 * rng.normal()}
        for r in m_runs
        for t in range(40)
    ]


def test_item05_pair_share_is_a_per_pair_test_not_a_sign_test(capsys):
    """When nothing differs, TCP is shown 'better or the same' (not worse by more than the
    margin) in most pairs by the calibrated pair test (block means, analyses/fallback/qoe.py),
    and the claim holds; a sign test of two numbers would sit at 0.5."""
    rng = np.random.default_rng(6)
    runs = [
        {
            "run_id": f"{r}{arm}",
            "cell_id": "DL",
            "round": r,
            "arm": arm,
            "status": "ok",
            "protocol_requested": None,
            "protocol_negotiated": None,
            "audit_flagged": False,
            "qoe": 1.0 + 0.3 * rng.normal(),
        }
        for r in range(60)
        for arm in ("h3", "h2")
    ]
    m = Measured(
        cells=pd.DataFrame({"cell_id": ["DL"], "dims": [{}]}),
        runs=pd.DataFrame(runs),
        statistics=Statistics(alpha=0.05),
        series=pd.DataFrame(_temporal(runs, rng, lambda r: 1.0)),
    )
    out = PairShare().evaluate(m)
    share = float(out.number.split("%")[0]) / 100
    print(f"item 5: no difference -> TCP better or same in {share:.0%} of 60 pairs")
    assert share >= 0.8 and out.n == "60" and out.verdict == HOLDS


def _cells_measured(values: dict[str, tuple[list[float], list[float]]], stats: Statistics | None = None) -> Measured:
    rows = []
    for cell, (a, b) in values.items():
        for arm, xs in (("h3", a), ("h2", b)):
            rows += [
                {
                    "run_id": f"{cell}{arm}{i}",
                    "cell_id": cell,
                    "round": i,
                    "arm": arm,
                    "status": "ok",
                    "protocol_requested": arm,
                    "protocol_negotiated": arm,
                    "audit_flagged": False,
                    "plt_ms": x,
                }
                for i, x in enumerate(xs)
            ]
    cells = list(values)
    return Measured(
        cells=pd.DataFrame({"cell_id": cells, "dims": [{"c": c} for c in cells]}),
        runs=pd.DataFrame(rows),
        statistics=stats or Statistics(),
    )


def test_item06_same_needs_an_interval_inside_the_tolerance():
    """Three noisy runs a side, a 2% difference, p = 0.8: not a finding of 'the same'."""
    m = _cells_measured({"c": ([900.0, 1100.0, 1030.0], [1000.0, 1200.0, 900.0])})
    out = Cells("h3", "h2", "same", tolerance_pct=5.0, at_least=1.0).evaluate(m)
    assert out.verdict == UNCLEAR, out.detail
    # many precise runs inside the tolerance do make it
    rng = np.random.default_rng(1)
    tight = _cells_measured({"c": (list(1000 * rng.normal(1, 0.01, 20)), list(1010 * rng.normal(1, 0.01, 20)))})
    assert Cells("h3", "h2", "same", tolerance_pct=5.0, at_least=1.0).evaluate(tight).verdict == HOLDS


def test_item07_a_ratio_claim_is_judged_on_its_interval():
    """A ratio of 1.55 against a factor of 1.5, the interval straddling it: inconclusive, and
    its p is the claim's own test (against 1.5), not the test against 1."""
    rng = np.random.default_rng(7)
    m = _cells_measured({"c": (list(1550 * rng.normal(1, 0.08, 8)), list(1000 * rng.normal(1, 0.08, 8)))})
    out = Ratio("h3", "h2", at_least=1.5).evaluate(m)
    lo, hi = (float(x) for x in out.number.split("[")[1].split("]")[0].split(","))
    assert lo < 1.5 < hi and out.p > 0.025
    assert out.verdict == UNCLEAR
    # wholly above the factor holds, wholly below does not
    assert Ratio("h3", "h2", at_least=1.2).evaluate(m).verdict == HOLDS
    assert Ratio("h3", "h2", at_least=2.0).evaluate(m).verdict == FAILS


def test_item08_cells_without_data_stay_in_the_denominator():
    """One cell of eight measured: its agreement is not the claim's."""
    values = {"c0": ([800.0, 810.0, 790.0, 805.0], [1000.0, 1010.0, 990.0, 1005.0])}
    values.update({f"c{i}": ([800.0], [1000.0]) for i in range(1, 8)})
    out = Cells("h3", "h2", "a", at_least=0.75).evaluate(_cells_measured(values))
    assert out.verdict == UNCLEAR and "7 without data" in out.detail and "needs 6 of all 8" in out.detail


def test_item09_interval_covers_at_small_n(capsys):
    """A nominal 95% interval of the % difference covers the truth about 95% of the time from
    n = 2 per side (lognormal, sigma 0.45, and normal samples); an unbounded interval counts
    as covering (it claims nothing) and is reported."""
    rng = np.random.default_rng(9)
    reps = 1500
    se = math.sqrt(0.05 * 0.95 / reps)
    for draw, name in (
        (lambda s: rng.lognormal(0, 0.45, s), "lognormal 0.45"),
        (lambda s: rng.normal(1, 0.2, s), "normal cv 0.2"),
    ):
        for n in (2, 3, 5, 10):
            a, b = draw((reps, n)), 1.3 * draw((reps, n))
            truth = (1 - 1 / 1.3) * 100  # (mean_B - mean_A) / mean_B
            cs = [compare_samples(x, y) for x, y in zip(a, b)]
            unbounded = np.mean([math.isnan(c.ci_low) for c in cs])
            cover = np.mean([math.isnan(c.ci_low) or c.ci_low <= truth <= c.ci_high for c in cs])
            print(f"item 9, {name}, n = {n}: coverage {cover:.3f} (unbounded {unbounded:.3f})")
            assert cover >= 0.95 - 3 * se
            if n >= 5:
                assert unbounded < 0.02


def test_item12_constant_different_samples_are_not_testable():
    c = compare_samples([0.0, 0.0], [1.0, 1.0])
    assert c.verdict is Verdict.NOT_TESTABLE and "both arms constant" in c.reason
    assert math.isnan(c.p_value) and c.verdict_text.startswith("not testable")
    assert compare_samples([0.0, 0.0], [0.0, 0.0]).verdict is Verdict.NOT_TESTABLE
    assert compare_samples([1.0, math.nan, 2.0], [1.0, 2.0]).verdict is Verdict.NOT_TESTABLE


def _pageload_runs(ok_h3: int, rounds: int = 12) -> pd.DataFrame:
    """h2 finishes every round in ~1000 ms; h3 only its first `ok_h3` rounds, fast, and times
    out in the others (the slow ones: the survivors look good)."""
    rows = []
    for r in range(rounds):
        rows.append(
            {
                "cell_id": "c",
                "arm": "h2",
                "round": r,
                "attempt": 1,
                "status": "ok",
                "protocol_requested": "h2",
                "protocol_negotiated": "h2",
                "plt_ms": 1000.0 + 10 * (r % 3),
            }
        )
        ok = r < ok_h3
        rows.append(
            {
                "cell_id": "c",
                "arm": "h3",
                "round": r,
                "attempt": 1,
                "status": "ok" if ok else "timeout",
                "protocol_requested": "h3",
                "protocol_negotiated": "h3" if ok else None,
                "plt_ms": 800.0 + 10 * (r % 3) if ok else None,
            }
        )
    return pd.DataFrame(rows)


def test_item13_arms_that_completed_at_different_rates_are_survivorship():
    [c] = compare_cells(_pageload_runs(ok_h3=4), [("h3", "h2")], metric="plt_ms")
    assert c.verdict is Verdict.SURVIVORSHIP and c.verdict_text == "inconclusive: survivorship"
    assert (str(c.completion_a), str(c.completion_b)) == ("4/12", "12/12") and c.completion_p < 0.05
    # equal completion: the comparison stands
    [ok] = compare_cells(_pageload_runs(ok_h3=12), [("h3", "h2")], metric="plt_ms")
    assert ok.verdict is Verdict.A_FASTER
    # failures as outcomes (the timeout, censored): h3 is now the slower arm
    [cens] = compare_cells(
        _pageload_runs(ok_h3=2), [("h3", "h2")], metric="plt_ms", failure_value=60_000.0, test="mannwhitney"
    )
    assert cens.verdict is Verdict.B_FASTER and cens.a.n == 12


def test_item14_granger_p_is_the_one_equation_ssr_f_test():
    from statsmodels.tsa.stattools import grangercausalitytests

    rng = np.random.default_rng(14)
    cause = rng.normal(size=80)
    effect = 0.25 * np.r_[0.0, cause[:-1]] + rng.normal(size=80)
    g = granger_test(cause, effect)
    f, p, df_denom, df_num = grangercausalitytests(pd.DataFrame({"e": effect, "c": cause}), [g.lag])[g.lag][0][
        "ssr_ftest"
    ]
    assert g.p_value == pytest.approx(p, rel=1e-12) and g.f_stat == pytest.approx(f, rel=1e-12)
    assert df_num == g.lag and df_denom == 80 - 3 * g.lag - 1


def test_item15_mann_whitney_direction_and_interval_are_the_tests():
    """Medians say A is above B, U says A is below (A is 0 in 45% of the runs and 10 in the
    rest; B is 5 in 55% and 20 in the rest): U decides. The interval is the Moses interval of
    the Hodges-Lehmann shift, not a bootstrap of the means."""
    a = np.array([0.0] * 18 + [10.0] * 22)
    b = np.array([5.0] * 22 + [20.0] * 18)
    assert np.median(a) > np.median(b)
    c = compare_samples(a, b, test="mannwhitney", alpha=0.05)
    assert c.p_value < 0.05 and c.verdict is Verdict.A_FASTER  # lower is better: A lower by U
    rng = np.random.default_rng(15)
    x, y = rng.normal(10, 1, 12), rng.normal(12, 1, 12)
    c = compare_samples(x, y, test="mannwhitney")
    diffs = np.sort((x[:, None] - y[None, :]).ravel())
    hl = np.median(diffs)
    assert c.interval.startswith("Moses") and c.diff == pytest.approx(hl)
    assert c.percent_difference == pytest.approx(-hl / np.median(y) * 100)
    # the Moses ranks for n = m = 12 at 95%: C = 38 (tables), the 38th smallest to 38th largest
    assert c.diff_low == pytest.approx(diffs[37]) and c.diff_high == pytest.approx(diffs[-38])
    assert c.ci_low <= c.percent_difference <= c.ci_high
