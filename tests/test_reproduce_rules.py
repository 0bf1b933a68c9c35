"""The claim tests added for issue 31 (Value, Shrinks with its interaction interval), the
rounds an inconclusive claim would need (needed.py), the standard budget and its estimate."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from longlook.analyses.reproduce import CLAIMS, FAILS, HOLDS, SCENARIOS, UNCLEAR, Cells, Measured, Shrinks, Value
from longlook.analyses.reproduce.estimate import estimate
from longlook.analyses.reproduce.needed import cell_rounds, difference_sessions, ratio_rounds, share_sessions
from longlook.analyses.reproduce.rules import interaction
from longlook.core.adaptive import blinded_halfwidth_from_moments, planning_moments
from longlook.core.spec import Statistics, load_scenario


def _runs(values: dict[tuple[str, str], np.ndarray], dims: dict[str, dict], metric="plt_ms") -> Measured:
    rows = [{"run_id": f"{c}-{a}-{i}", "cell_id": c, "round": i, "arm": a, "status": "ok", "protocol_requested": None,
             "protocol_negotiated": None, "audit_flagged": False, metric: v}
            for (c, a), xs in values.items() for i, v in enumerate(xs)]
    return Measured(cells=pd.DataFrame({"cell_id": list(dims), "dims": list(dims.values())}), runs=pd.DataFrame(rows),
                    statistics=Statistics(alpha=0.01))


def test_value_holds_inside_the_range_fails_outside_and_is_unclear_across_it():
    rng = np.random.default_rng(1)
    dims = {"blocked": {"link": "x,middlebox-block_udp=True"}}
    for centre, sd, want in ((380, 5, HOLDS), (900, 5, FAILS), (428, 40, UNCLEAR)):
        m = _runs({("blocked", "race"): rng.normal(centre, sd, 10)}, dims, metric="time_to_fallback_ms")
        out = Value("race", "time_to_fallback_ms", 300, 428).evaluate(m)
        assert out.verdict == want, (centre, out.number)


def test_the_interaction_interval_covers_the_true_change_in_95_percent():
    """Four lognormal arms (sigma .3, 6 runs each); a's cost rises by exp(0.2) on the slow
    cells. The 95% interval must cover 0.2 in >= 93% of 2,000 draws (Monte-Carlo sd 0.5%),
    and a 50% one in well under that."""
    rng = np.random.default_rng(7)
    hits = {0.95: 0, 0.5: 0}
    for _ in range(2000):
        af, bf = rng.lognormal(0.0, .3, 6), rng.lognormal(0.3, .3, 6)
        as_, bs = rng.lognormal(0.5, .3, 6), rng.lognormal(0.6, .3, 6)  # log a/b: -0.3 -> -0.1
        for conf in hits:
            _, lo, hi, _ = interaction(af, bf, as_, bs, conf)
            hits[conf] += lo <= 0.2 <= hi
    assert hits[0.95] / 2000 >= 0.93 and hits[0.5] / 2000 < 0.7


def test_shrinks_holds_when_quic_s_advantage_fades_on_the_slow_cpu_and_fails_when_it_grows():
    rng = np.random.default_rng(3)
    dims = {f"{cpu}": {"client_cpu": cpu, "link": "10"} for cpu in ("unlimited", "phone-2014")}

    def make(slow_h3):
        return _runs({("unlimited", "h3"): rng.normal(700, 20, 10), ("unlimited", "h2"): rng.normal(1000, 20, 10),
                      ("phone-2014", "h3"): rng.normal(slow_h3, 20, 10), ("phone-2014", "h2"): rng.normal(1000, 20, 10)},
                     dims)
    rule = Shrinks("h3", "h2", "client_cpu", fast="unlimited", slow="phone-2014")
    assert rule.evaluate(make(1000)).verdict == HOLDS
    assert rule.evaluate(make(500)).verdict == FAILS
    assert rule.evaluate(make(700)).verdict == UNCLEAR


def test_rounds_needed_are_where_the_planned_half_width_first_meets_the_target():
    n = cell_rounds(5, 1000, 100, 5, 950, 100, alpha=0.01, target_pct=5.0)
    mean, var = planning_moments(5, 5, 5000, 4750, 4 * 100 ** 2, 4 * 100 ** 2)
    hw = lambda k: float(blinded_halfwidth_from_moments(k, k, mean, var, confidence=0.99))  # noqa: E731
    assert hw(n) < 5.0 <= hw(n - 1)
    assert cell_rounds(5, 1000, 100, 5, 1000, 100, alpha=0.01, target_pct=0.0) is None
    # a simulated cell of that size really tends to be significant at alpha 0.01 with the real gap
    from scipy import stats as sps
    rng = np.random.default_rng(2)
    sig = np.mean([sps.ttest_ind(rng.normal(1000, 100, n), rng.normal(950, 100, n), equal_var=False).pvalue < 0.01
                   for _ in range(400)])
    assert sig > 0.4  # the interval's half-width met the gap: about even odds or better


def test_ratio_share_and_difference_needs():
    assert ratio_rounds(2.0, 0.4, 1.0, 0.2, 1.5) < ratio_rounds(1.7, 0.4, 1.0, 0.2, 1.5)
    n = share_sessions(0.7, 0.5)
    from scipy import stats as sps
    ci = lambda k: sps.binomtest(round(0.7 * k), k).proportion_ci(method="exact")  # noqa: E731
    assert ci(n).low > 0.5 and ci(n - 1).low <= 0.5
    assert share_sessions(0.5, 0.5) is None
    assert difference_sessions(1.0, 1.0, 2.0) < difference_sessions(1.0, 1.0, 0.5)


def test_a_share_on_its_threshold_says_no_number_of_sessions_is_expected_to_decide():
    from longlook.analyses.reproduce.rules import _share_outcome
    out = _share_outcome(6, 12, 0.5, "tested sessions")
    assert out.verdict == "inconclusive" and "the observed share (50%) is the threshold (50%) itself" in out.needs
    assert "~" in _share_outcome(7, 12, 0.5, "tested sessions").needs  # 58%: a number of sessions


def test_an_inconclusive_cells_claim_states_the_rounds_it_would_need():
    dims = {"c": {"rate_mbit": 10}}
    h3, h2 = np.array([950.0, 1010, 900, 980]), np.array([1000.0, 1060, 950, 1030])  # QUIC ~5% faster
    out = Cells("h3", "h2", "a", at_least=1.0).evaluate(_runs({("c", "h3"): h3, ("c", "h2"): h2}, dims))
    assert out.verdict == UNCLEAR and out.needs.startswith("~") and "rounds per arm" in out.needs
    # the observed difference points against the claim: more rounds would not make it hold
    out = Cells("h3", "h2", "b", at_least=1.0).evaluate(_runs({("c", "h3"): h3, ("c", "h2"): h2}, dims))
    assert out.verdict == UNCLEAR and out.needs.startswith("not reachable")


def test_the_standard_budget_keeps_the_short_cells_with_more_rounds_and_re_measures_flagged_runs(tmp_path):
    for name, shipped in SCENARIOS.items():
        short = load_scenario(shipped.path, shipped.overrides("short"))
        std = load_scenario(shipped.path, shipped.overrides("standard"))
        if shipped.standard is None:
            continue
        assert std.rounds >= short.rounds and std.total_runs() > short.total_runs(), name
        assert std.fidelity.retry_flagged, name
        if name != "chaudhary-fallback":  # the standard one has all five patterns
            assert [c.id for c in std.cells()] == [c.id for c in short.cells()], name
    used = {c.scenario for c in CLAIMS}
    assert all(SCENARIOS[n].standard is not None for n in used)
    rows = estimate([SCENARIOS[n] for n in sorted(used)], "standard", tmp_path / "std")
    assert sum(r.runs for r in rows) == sum(load_scenario(SCENARIOS[n].path, SCENARIOS[n].overrides("standard"))
                                            .total_runs() for n in sorted(used))
    assert all(r.measured_from.startswith("assumed") for r in rows)  # nothing measured in tmp_path
    # large downloads are assumed at their rate: 50 MB at 100 and 1000 Mbit/s, 3 s each besides
    zhang = next(r for r in rows if r.name == "zhang-fast-internet")
    assert zhang.s_per_run == pytest.approx(3 + (4.0 + 0.4) / 2) and "rate" in zhang.measured_from


def test_the_chaudhary_claims_read_the_scenario_where_fallback_happens():
    chaudhary = {c.id: c for c in CLAIMS if c.id.startswith("chaudhary")}
    assert chaudhary["chaudhary-tcp-as-good"].scenario == chaudhary["chaudhary-granger"].scenario == "chaudhary-fallback"
    sc = load_scenario(SCENARIOS["chaudhary-fallback"].path, SCENARIOS["chaudhary-fallback"].overrides("short"))
    assert all(c.link.middlebox and c.link.middlebox.block_udp for c in sc.cells())


@pytest.mark.parametrize("claim", ["langley-racing-wait", "langley-udp-blocked", "langley-blackhole",
                                   "langley-0rtt-handshake", "langley-server-cpu", "langley-high-bandwidth",
                                   "kakhki-mobile", "kakhki-proxy-tcp", "kakhki-proxy-quic-large",
                                   "kakhki-proxy-quic-small", "kakhki-table4-tcpx4", "kakhki-table4-quic-quic",
                                   "mininet-unfair-tcp", "mininet-fair-tcpx2", "chaudhary-causal"])
def test_the_issue_s_claims_are_registered_and_their_cells_are_in_the_short_budget(claim):
    c = next(x for x in CLAIMS if x.id == claim)
    sc = load_scenario(SCENARIOS[c.scenario].path, SCENARIOS[c.scenario].overrides("short"))
    cells = pd.DataFrame({"cell_id": [x.id for x in sc.cells()], "dims": [x.dims() for x in sc.cells()]})
    m = Measured(cells=cells, runs=pd.DataFrame())
    assert m.select(getattr(c.rule, "where", {})), claim
    if isinstance(c.rule, Shrinks):
        assert m.select({c.rule.dim: c.rule.fast}) and m.select({c.rule.dim: c.rule.slow})


def test_twins_compare_one_arm_across_cells_that_differ_in_one_dimension():
    from longlook.analyses.reproduce import Twins
    rng = np.random.default_rng(5)
    dims = {f"{p}-{s}": {"proxy": p, "object_size": s} for p in ("none", "tcp") for s in (10, 2000)}

    def make(proxied_ms):
        vals = {}
        for c, d in dims.items():
            vals[(c, "h2")] = rng.normal(proxied_ms if d["proxy"] == "tcp" else 1000, 20, 8)
            vals[(c, "h3")] = rng.normal(5000, 20, 8)  # the other arm must not be read
        return _runs(vals, dims)
    rule = Twins("h2", "proxy", "tcp", "none", "a")
    assert rule.evaluate(make(800)).verdict == HOLDS
    assert rule.evaluate(make(1200)).verdict == FAILS
    out = Twins("h2", "proxy", "tcp", "none", "a", where={"object_size": [10]}).evaluate(make(800))
    assert out.verdict == HOLDS and [c["cell_id"] for c in out.cells] == ["tcp-10"]
