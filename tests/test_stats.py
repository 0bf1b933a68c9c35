"""Statistics against hand computation and scipy."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

from longlook.core.stats import (Verdict, compare_cells, compare_samples, holm_adjust,
                            percent_difference)

QUIC = [1.0, 2.0, 3.0, 4.0, 5.0]
TCP = [2.0, 4.0, 6.0, 8.0, 10.0]


def test_welch_matches_a_hand_computation():
    # mean 3 vs 6; variances 2.5 and 10; n = 5 each
    se2 = 2.5 / 5 + 10 / 5  # 2.5
    t = (3 - 6) / math.sqrt(se2)
    df = se2**2 / ((2.5 / 5) ** 2 / 4 + (10 / 5) ** 2 / 4)  # Welch-Satterthwaite: 5.882
    p = 2 * sps.t.sf(abs(t), df)
    c = compare_samples(QUIC, TCP)
    assert df == pytest.approx(5.88235, rel=1e-5)
    assert c.p_value == pytest.approx(p, rel=1e-9)
    assert c.p_value == pytest.approx(sps.ttest_ind(QUIC, TCP, equal_var=False).pvalue, rel=1e-12)
    assert c.percent_difference == pytest.approx(50.0)  # (6 - 3) / 6
    assert (c.a.n, c.b.n, c.a.mean, c.b.median) == (5, 5, 3.0, 6.0)
    assert c.a.sd == pytest.approx(math.sqrt(2.5))
    # p = 0.105 > 0.01: a 50% difference on 5 noisy runs is not a finding
    assert c.verdict is Verdict.INCONCLUSIVE and c.verdict_text == "inconclusive"


def test_clear_differences_in_both_directions():
    rng = np.random.default_rng(7)
    fast, slow = rng.normal(100, 3, 10), rng.normal(130, 3, 10)
    c = compare_samples(fast, slow)
    assert c.verdict is Verdict.A_FASTER and c.verdict_text == "QUIC faster"
    assert c.p_value < 1e-6
    assert c.ci_low < percent_difference(fast, slow) < c.ci_high
    assert c.ci_low > 0  # the whole interval says QUIC is faster
    d = compare_samples(slow, fast)
    assert d.verdict is Verdict.B_FASTER and d.verdict_text == "TCP faster"
    assert d.percent_difference < 0 and d.ci_high < 0


def test_welch_interval_is_fiellers_by_hand():
    # the ratios r with (mean_a - r mean_b)^2 <= t^2 (va + r^2 vb): here for QUIC, TCP above
    va, vb, ma, mb = 2.5 / 5, 10 / 5, 3.0, 6.0
    c = compare_samples(QUIC, TCP)
    for pct in (c.ci_low, c.ci_high):  # lower is better: % difference = (1 - r) * 100
        r = 1 - pct / 100
        s2 = va + r * r * vb
        df = s2**2 / (va**2 / 4 + (r * r * vb) ** 2 / 4)
        t_df = sps.t.ppf(0.975, (va + 0.25 * vb) ** 2 / (va**2 / 4 + (0.25 * vb) ** 2 / 4))
        assert (ma - r * mb) ** 2 == pytest.approx(t_df**2 * s2, rel=1e-9)
        assert df > 0
    assert c.interval.startswith("Fieller") and c.ci_low < c.percent_difference < c.ci_high
    again = compare_samples(QUIC, TCP)
    assert (again.ci_low, again.ci_high) == (c.ci_low, c.ci_high)  # no resampling: deterministic


def test_insufficient_data():
    c = compare_samples([100.0], [120.0, 130.0])
    assert c.verdict is Verdict.INSUFFICIENT and c.verdict_text == "insufficient data"
    assert math.isnan(c.p_value)
    assert compare_samples([], []).verdict is Verdict.INSUFFICIENT


def test_mann_whitney_matches_scipy():
    a, b = [10, 11, 12, 13, 14, 15], [20, 21, 22, 23, 24, 25]
    c = compare_samples(a, b, test="mannwhitney", alpha=0.01)
    assert c.p_value == pytest.approx(sps.mannwhitneyu(a, b, alternative="two-sided").pvalue)
    assert c.verdict is Verdict.A_FASTER


def test_labels_generalise_beyond_quic_and_tcp():
    c = compare_samples([50.0, 51, 52, 50, 51], [80.0, 81, 79, 80, 82], a_label="h3-0rtt",
                        b_label="h3-1rtt")
    assert c.verdict_text == "h3-0rtt faster"


def _comparison_with_p(p: float, cell: str):
    base = compare_samples([1.0, 2.0, 3.0], [4.0, 5.0, 6.0], cell_id=cell)
    from dataclasses import replace
    return replace(base, p_value=p, p_adjusted=p, verdict=Verdict.A_FASTER if p < 0.01 else Verdict.INCONCLUSIVE)


def test_holm_turns_a_marginal_cell_inconclusive():
    comps = [_comparison_with_p(p, f"c{i}") for i, p in enumerate([0.004, 0.0045, 0.3])]
    assert [c.verdict for c in comps] == [Verdict.A_FASTER, Verdict.A_FASTER, Verdict.INCONCLUSIVE]
    adjusted = holm_adjust(comps)
    expected = multipletests([0.004, 0.0045, 0.3], method="holm")[1]
    assert [c.p_adjusted for c in adjusted] == pytest.approx(list(expected))
    # 0.004 * 3 = 0.012 >= 0.01: no longer significant; raw p kept for the record
    assert [c.verdict for c in adjusted] == [Verdict.INCONCLUSIVE] * 3
    assert adjusted[0].p_value == 0.004 and all(c.holm for c in adjusted)


def _runs(rows):
    return pd.DataFrame(rows, columns=["cell_id", "arm", "protocol_requested",
                                       "protocol_negotiated", "status", "plt_ms"])


def test_compare_cells_counts_only_ok_runs_over_the_requested_protocol():
    rows = []
    for v in (100, 101, 102, 99, 98):
        rows.append(("c1", "h3", "h3", "h3", "ok", v))
        rows.append(("c1", "h2", "h2", "h2", "ok", v + 30))
    rows.append(("c1", "h3", "h3", "h2", "ok", 5000.0))  # fell back to TCP: never QUIC
    rows.append(("c1", "h3", "h3", "h2", "protocol_mismatch", 5000.0))
    rows.append(("c1", "h2", "h2", None, "failed", None))
    rows.append(("c1", "h2", "h2", "h2", "timeout", 9000.0))
    [c] = compare_cells(_runs(rows), [("h3", "h2")])
    assert (c.a.n, c.b.n) == (5, 5)
    assert c.a.mean == 100 and c.b.mean == 130
    assert c.verdict is Verdict.A_FASTER


def test_compare_cells_with_holm_uses_statsmodels_across_cells():
    rng = np.random.default_rng(11)
    rows = []
    for cell, shift in (("a", 0.0), ("b", 5.0), ("c", 40.0)):
        for v in rng.normal(100, 5, 8):
            rows.append((cell, "h3", "h3", "h3", "ok", v))
        for v in rng.normal(100 + shift, 5, 8):
            rows.append((cell, "h2", "h2", "h2", "ok", v))
    runs = _runs(rows)
    plain = compare_cells(runs, [("h3", "h2")])
    holm = compare_cells(runs, [("h3", "h2")], holm=True)
    expected = multipletests([c.p_value for c in plain], method="holm")[1]
    assert [c.p_adjusted for c in holm] == pytest.approx(list(expected))
    assert holm[2].verdict is Verdict.A_FASTER  # a 40% effect survives correction
    assert holm[0].verdict is Verdict.INCONCLUSIVE


def test_percent_difference_with_a_zero_or_negative_baseline():
    from longlook.core.stats import compare_samples, percent_difference
    # QoE (higher is better) can be negative: A at -0.2 beats B at -0.5, so the sign is +
    assert percent_difference([-0.2, -0.2], [-0.5, -0.5], lower_is_better=False) == pytest.approx(60.0)
    # stall time 0 on the baseline: no percentage, yet the comparison runs
    assert math.isnan(percent_difference([1.0, 2.0], [0.0, 0.0]))
    c = compare_samples([1.0, 1.2, 0.9, 1.1], [0.0, 0.0, 0.0, 0.0], alpha=0.05)
    assert math.isnan(c.percent_difference) and c.verdict.value == "b_faster"
