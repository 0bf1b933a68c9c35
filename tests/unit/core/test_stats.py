"""Statistics against hand computation and scipy."""

import functools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

from longlook.core.stats import Verdict, compare_cells, holm_adjust, percent_difference
from longlook.core.stats import compare_samples as core_compare_samples

# the page-load arms these tests compare (core itself names no kind's arms)
compare_samples = functools.partial(core_compare_samples, a_label="h3", b_label="h2")

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
    c = compare_samples(fast, slow, a_label="h3", b_label="h2")
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
    c = compare_samples([50.0, 51, 52, 50, 51], [80.0, 81, 79, 80, 82], a_label="h3-0rtt", b_label="h3-1rtt")
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
    return pd.DataFrame(
        rows, columns=["cell_id", "arm", "protocol_requested", "protocol_negotiated", "status", "plt_ms"]
    )


def test_compare_cells_counts_only_ok_runs_over_the_requested_protocol():
    rows = []
    for v in (100, 101, 102, 99, 98):
        rows.append(("c1", "h3", "h3", "h3", "ok", v))
        rows.append(("c1", "h2", "h2", "h2", "ok", v + 30))
    rows.append(("c1", "h3", "h3", "h2", "ok", 5000.0))  # fell back to TCP: never QUIC
    rows.append(("c1", "h3", "h3", "h2", "protocol_mismatch", 5000.0))
    rows.append(("c1", "h2", "h2", None, "failed", None))
    rows.append(("c1", "h2", "h2", "h2", "timeout", 9000.0))
    [c] = compare_cells(_runs(rows), [("h3", "h2")], metric="plt_ms")
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
    plain = compare_cells(runs, [("h3", "h2")], metric="plt_ms")
    holm = compare_cells(runs, [("h3", "h2")], metric="plt_ms", holm=True)
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


# --- survivorship: a significant verdict must survive the runs that did not complete ---

SURVIVORS_H3 = [820.0, 850.0, 870.0, 900.0, 905.0, 930.0, 960.0]  # the 3 slowest of 10 timed out
ALL_H2 = [900.0, 940.0, 980.0, 1000.0, 1010.0, 1040.0, 1060.0, 1100.0, 1130.0, 1170.0]


def test_a_difference_that_needs_the_missing_runs_to_be_fast_is_survivorship():
    """h3 completed 7/10, h2 10/10 (Fisher p = 0.21: no alarm). Over the survivors Welch
    says h3 faster (p < 0.01); with the 3 missing h3 loads slower than every observed load,
    Mann-Whitney says nothing: the verdict is survivorship, with the reason in words."""
    from longlook.core.stats import Completion

    plain = compare_samples(SURVIVORS_H3, ALL_H2)
    assert plain.verdict is Verdict.A_FASTER and plain.p_value < 0.01
    c = compare_samples(
        SURVIVORS_H3,
        ALL_H2,
        a_label="h3",
        b_label="h2",
        completion_a=Completion(7, 10),
        completion_b=Completion(10, 10),
    )
    assert c.completion_p > 0.05 and c.p_value == plain.p_value  # the test and Fisher as before
    assert c.verdict is Verdict.SURVIVORSHIP and c.verdict_text == "inconclusive: survivorship"
    assert c.reason.startswith(
        "h3 completed 7/10, h2 10/10: the difference does not hold if the 3 missing h3 runs were the slowest"
    )
    assert c.worst_case_p >= 0.01 and c.as_row()["worst_case_p"] == c.worst_case_p
    # the other arm's missing runs count as the best: h2 missing its 2 fastest is no help to h3
    both = compare_samples(SURVIVORS_H3, ALL_H2[2:], completion_a=Completion(7, 10), completion_b=Completion(8, 10))
    assert both.verdict is Verdict.SURVIVORSHIP and "and the 2 missing h2 runs the fastest" in both.reason
    # a difference large enough survives one missing run of 20 whatever it was
    fast, slow = np.linspace(500, 600, 19), np.linspace(900, 1000, 20)
    kept = compare_samples(fast, slow, completion_a=Completion(19, 20), completion_b=Completion(20, 20))
    assert kept.verdict is Verdict.A_FASTER and kept.worst_case_p < 1e-5


def test_the_worst_case_of_a_paired_design_is_a_lost_pair_against_the_claim():
    from longlook.core.stats import Completion, missing_pairs, survivorship_p

    rng = np.random.default_rng(7)
    a, b = rng.lognormal(6.3, 0.1, 20), rng.lognormal(6.9, 0.1, 20)
    assert missing_pairs(12, Completion(12, 14), Completion(14, 14)) == 2
    assert missing_pairs(12, Completion(13, 14), Completion(13, 14)) == 2  # rounds lost on both sides
    assert missing_pairs(24, Completion(12, 14), Completion(14, 14)) == 4  # two pairs per round
    full = compare_samples(a, b, paired=True)
    one = compare_samples(a, b, paired=True, completion_a=Completion(20, 21), completion_b=Completion(21, 21))
    assert full.verdict is one.verdict is Verdict.A_FASTER
    # Wilcoxon: 20 pairs all for A, one more against it with the largest rank: its exact p
    lr = np.log(a) - np.log(b)
    assert one.worst_case_p == pytest.approx(
        2 * sps.wilcoxon(np.r_[lr, 1.0 + np.max(np.abs(lr))], alternative="less").pvalue
    )
    # 12 pairs, one lost: at most 1 + 12 of the 91 rank points against A can never reach 0.01
    twelve = compare_samples(
        a[:12], b[:12], a_label="h3", paired=True, completion_a=Completion(12, 13), completion_b=Completion(13, 13)
    )
    assert twelve.verdict is Verdict.SURVIVORSHIP and "the 1 missing h3 run was the slowest" in twelve.reason
    assert survivorship_p(a[:7], b[:7], Verdict.A_FASTER, lower_is_better=True, paired=True, lost_a=5) > 0.01


def test_the_worst_case_check_costs_nothing_when_nothing_is_missing_and_a_little_at_one_in_20():
    """Power of "h3 faster" (alpha 0.01, 20 rounds a side, lognormal sigma 0.5, h3's median
    lower by a factor e^-d) with complete data, with and without completions (the same
    verdicts: nothing missing, nothing checked), and with one random h3 run of 20 missing:
    the survivors' test alone against the same verdict that must survive the missing run at
    its worst. Printed: pytest -s."""
    from longlook.core.stats import Completion

    rng = np.random.default_rng(20)
    trials = 300
    print()
    for design, test, paired in (
        ("welch", "welch", False),
        ("mann-whitney", "mannwhitney", False),
        ("paired", "welch", True),
    ):
        for d in (0.45, 0.6):
            full = same = survivors = checked = 0
            for _ in range(trials):
                a, b = rng.lognormal(7 - d, 0.5, 20), rng.lognormal(7, 0.5, 20)
                c0 = compare_samples(a, b, test=test, paired=paired)
                c1 = compare_samples(
                    a, b, test=test, paired=paired, completion_a=Completion(20, 20), completion_b=Completion(20, 20)
                )
                assert c1.verdict is c0.verdict and math.isnan(c1.worst_case_p)
                keep = np.arange(20) != rng.integers(20)
                xa, xb = a[keep], (b[keep] if paired else b)
                s0 = compare_samples(xa, xb, test=test, paired=paired)
                s1 = compare_samples(
                    xa, xb, test=test, paired=paired, completion_a=Completion(19, 20), completion_b=Completion(20, 20)
                )
                full += c0.verdict is Verdict.A_FASTER
                same += c1.verdict is Verdict.A_FASTER
                survivors += s0.verdict is Verdict.A_FASTER
                checked += s1.verdict is Verdict.A_FASTER
            print(
                f"power {design:<12} d={d}: complete {full / trials:.2f} "
                f"(with completions {same / trials:.2f}); "
                f"1 of 20 missing: survivors alone {survivors / trials:.2f}, worst-case checked {checked / trials:.2f}"
            )
            assert same == full and checked <= survivors


def test_holm_adjusts_a_survivorship_checked_verdict_by_its_worst_case_p():
    """A verdict that had to survive missing runs enters a family by the larger of its test's
    and its worst case's p, and more p-values (the gate's completion tests) can join it."""
    from dataclasses import replace

    from longlook.core.stats import holm_family

    clean = _comparison_with_p(0.001, "clean")
    checked = replace(_comparison_with_p(0.0001, "checked"), worst_case_p=0.006)
    assert checked.family_p == 0.006 and math.isnan(clean.worst_case_p) and clean.family_p == 0.001
    out, others = holm_family([clean, checked], [0.3, math.nan])
    expected = multipletests([0.001, 0.006, 0.3], method="holm")[1]
    assert [c.p_adjusted for c in out] + [others[0]] == pytest.approx(list(expected))
    assert math.isnan(others[1])  # no test: outside the family
    # 2 x 0.006 = 0.012 >= 0.01, though its own test's p (0.0001) would have passed
    assert [c.verdict for c in out] == [Verdict.A_FASTER, Verdict.INCONCLUSIVE]


def test_the_t_tests_by_hand_agree_with_scipy():
    """core.effects computes Welch's and the paired t's p from scipy.special (sps.ttest_*
    cost a millisecond a call, too slow for the calibration suite): the same numbers."""
    rng = np.random.default_rng(3)
    for n, m in ((2, 2), (3, 7), (12, 30)):
        a, b = rng.lognormal(0, 1, n), rng.lognormal(0.3, 0.5, m)
        assert compare_samples(a, b).p_value == pytest.approx(sps.ttest_ind(a, b, equal_var=False).pvalue, rel=1e-12)
        x, y = rng.lognormal(0, 1, m), rng.lognormal(0.2, 1, m)
        assert compare_samples(x, y, paired=True).p_value == pytest.approx(
            sps.ttest_rel(np.log(x), np.log(y)).pvalue, rel=1e-12
        )


def test_a_cell_with_missing_runs_shows_no_equivalence():
    """h2's 3 slowest of 10 loads failed and its survivors sit within 1% of h3's: Fisher's test
    on 7/10 against 10/10 (p = 0.21) lets the cell through, but the missing runs could lie
    anywhere, so 'the same within 5%' is not shown (it was, before)."""
    from longlook.core.stats import Completion, equivalence_blocked, equivalent

    rng = np.random.default_rng(3)
    h3 = 1000 * rng.normal(1, 0.005, 10)
    h2 = 1000 * rng.normal(1.005, 0.005, 7)
    full = compare_samples(h3, h2, completion_a=Completion(10, 10), completion_b=Completion(10, 10))
    assert equivalent(full, 5.0) is True  # the same values with no run missing: shown
    lost = compare_samples(h3, h2, completion_a=Completion(10, 10), completion_b=Completion(7, 10))
    assert lost.completion_p > 0.05 and lost.verdict is not Verdict.SURVIVORSHIP
    assert equivalent(lost, 5.0) is None
    assert "h2 completed 7/10" in equivalence_blocked(lost)
