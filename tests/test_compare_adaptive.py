"""Adaptive rounds: the stopping rule keeps the false-positive rate (A/A simulation), stops
early once precise, and reads a cell's runs as the store has them."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from longlook.core.adaptive import (decide, halfwidth_pct, needs_more_rounds,
                                                stopping_decision, stopping_rounds)
from longlook.core.spec import AdaptiveRounds
from longlook.core.stats import compare_samples
from longlook.errors import LonglookError
from longlook.kinds.pageload import Scenario

REPS = 20_000


def _lognormal(rng, shape):  # page-load times at 1% loss: sd about 45% of the mean
    return 1000 * rng.lognormal(0, 0.45, shape)


def _normal(rng, shape):
    return rng.normal(1000, 400, shape)


def _final_p(a, b, n):
    """Welch's p on the first n[i] values of row i (the test the report runs)."""
    mask = np.arange(a.shape[1])[None, :] < n[:, None]

    def moments(x):
        m = np.where(mask, x, 0).sum(1) / n
        return m, np.sqrt(np.where(mask, (x - m[:, None]) ** 2, 0).sum(1) / (n - 1))

    (ma, sa), (mb, sb) = moments(a), moments(b)
    return sps.ttest_ind_from_stats(ma, sa, n, mb, sb, n, equal_var=False).pvalue


def _stop_when_significant(a, b, rule, alpha):
    """The forbidden rule, for contrast: stop as soon as p < alpha."""
    n = np.full(len(a), rule.max)
    for k in range(rule.min, rule.max + 1):
        sig = _final_p(a, b, np.full(len(a), k)) < alpha
        n = np.where(sig & (n == rule.max), np.minimum(n, k), n)
    return n


@pytest.mark.parametrize("draw", [_lognormal, _normal])
@pytest.mark.parametrize("alpha", [0.05, 0.01])
def test_aa_false_positive_rate_stays_within_alpha(draw, alpha):
    rule = AdaptiveRounds(min=6, max=40, target_halfwidth_pct=22)
    rng = np.random.default_rng(7)
    a, b = draw(rng, (REPS, rule.max)), draw(rng, (REPS, rule.max))
    n = stopping_rounds(a, b, rule)
    # the rule really adapts: cells stop anywhere between min and max
    assert n.min() < 15 and 15 < np.median(n) < rule.max and (n == rule.max).mean() < 0.6
    rate = (_final_p(a, b, n) < alpha).mean()
    se = np.sqrt(alpha * (1 - alpha) / REPS)
    assert rate <= alpha + 2 * se, f"false-positive rate {rate:.4f} > alpha {alpha}"
    # the simulation can see an inflated rate: stopping on p < alpha is caught
    naive = (_final_p(a, b, _stop_when_significant(a, b, rule, alpha)) < alpha).mean()
    assert naive > 2 * alpha


def test_vectorised_rule_is_the_per_round_rule():
    rule = AdaptiveRounds(min=6, max=40, target_halfwidth_pct=22)
    rng = np.random.default_rng(3)
    a, b = _lognormal(rng, (60, rule.max)), _lognormal(rng, (60, rule.max))
    n = stopping_rounds(a, b, rule)
    for i in range(len(a)):
        r = rule.min
        while decide([(a[i, :r], b[i, :r])], r, rule).more:
            r += 1
        assert r == n[i]


def test_blinded_halfwidth_matches_the_reports_interval_when_arms_agree():
    rng = np.random.default_rng(5)
    a, b = _lognormal(rng, 30), _lognormal(rng, 30)
    c = compare_samples(a, b, resamples=4000)
    boot = (c.ci_high - c.ci_low) / 2
    assert halfwidth_pct(a, b) == pytest.approx(boot, rel=0.25)


def _cell_runs(values_a, values_b, failed_round=None):
    rows = []
    for r, (x, y) in enumerate(zip(values_a, values_b)):
        for arm, v in (("h3", x), ("h2", y)):
            status = "failed" if r == failed_round and arm == "h3" else "ok"
            rows.append({"cell_id": "c", "round": r, "arm": arm, "status": status,
                         "protocol_requested": arm, "protocol_negotiated": arm,
                         "audit_flagged": False, "plt_ms": v if status == "ok" else np.nan})
    return pd.DataFrame(rows)


def test_precision_reached_before_max_stops_the_cell():
    rule = AdaptiveRounds(min=4, max=30, target_halfwidth_pct=5)
    rng = np.random.default_rng(1)
    a, b = rng.normal(500, 20, 30), rng.normal(500, 20, 30)  # sd 4%: precise after a few rounds
    rounds = rule.min
    while needs_more_rounds(_cell_runs(a[:rounds], b[:rounds]), rule, [("h3", "h2")], "plt_ms"):
        rounds += 1
    d = stopping_decision(_cell_runs(a[:rounds], b[:rounds]), rule, [("h3", "h2")], "plt_ms")
    assert d.reason == "target reached" and rule.min <= rounds < rule.max
    assert d.halfwidth_pct <= 5


def test_noisy_cell_runs_to_max_and_failed_runs_do_not_extend_it():
    rule = AdaptiveRounds(min=4, max=8, target_halfwidth_pct=1)
    rng = np.random.default_rng(2)
    a, b = _lognormal(rng, 8), _lognormal(rng, 8)
    runs = _cell_runs(a, b, failed_round=7)
    d = stopping_decision(runs, rule, [("h3", "h2")], "plt_ms")
    assert not d.more and d.reason == "maximum reached" and d.rounds == 8
    assert stopping_decision(runs[runs["round"] < 2], rule, [("h3", "h2")], "plt_ms").reason == "below minimum"


SCENARIO = """
name = "adaptive"
{rounds}
workloads = ["1x100k"]
[[links]]
rate_mbit = 10
rtt_ms = 36
"""


def test_scenario_rounds_may_be_adaptive_and_plans_for_max():
    fixed = Scenario.from_toml(SCENARIO.format(rounds="rounds = 5"))
    assert fixed.rounds == 5 and fixed.adaptive_rounds is None and fixed.total_runs() == 10
    plain = Scenario.from_toml(SCENARIO.format(rounds='rounds = "adaptive"'))
    assert plain.adaptive_rounds == AdaptiveRounds() and plain.rounds == 40
    table = Scenario.from_toml(SCENARIO.format(
        rounds="rounds = { min = 4, max = 12, target_halfwidth_pct = 3, metric = \"plt_ms\" }"))
    assert table.rounds == 12 and table.total_runs() == 24
    assert table.adaptive_rounds.target_halfwidth_pct == 3 and table.adaptive_rounds.metric == "plt_ms"
    with pytest.raises(LonglookError, match=r"rounds: adaptive: min \(9\) must not exceed max \(4\)"):
        Scenario.from_toml(SCENARIO.format(rounds="rounds = { min = 9, max = 4 }"))
    with pytest.raises(LonglookError, match="rounds: Input should be greater than or equal to 1"):
        Scenario.from_toml(SCENARIO.format(rounds="rounds = 0"))


def test_report_states_the_rule_and_each_cells_rounds(tmp_path):
    from test_compare import SCENARIO as GRID, make_experiment

    from longlook.report import build_report

    toml = GRID.replace("rounds = 12", "rounds = {{ min = 4, max = 6, target_halfwidth_pct = 5 }}")
    make_experiment(tmp_path / "exp", seed=1, toml=toml)
    html = build_report(tmp_path / "exp").read_text()
    assert 'id="adaptive-rounds"' in html and "blinded" in html
    assert html.count("stopped: maximum reached") == 4  # 4 cells, 6 rounds each
