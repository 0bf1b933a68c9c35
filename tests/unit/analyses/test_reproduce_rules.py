"""The claim rules' mechanics: Value, Shrinks with its interaction interval, the claim's own p
(against the factor, TOST for "same", the cell a claim needs), intervals at the family's
level, the rounds an inconclusive claim would need (needed.py), the pair test of temporal QoE
and the session claims, StateShift on states diff's verdicts, the standard budget and its
estimate. Their null calibration: tests/calibration/test_reproduce_rules.py."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from longlook.analyses.reproduce import (
    CLAIMS,
    FAILS,
    HOLDS,
    SCENARIOS,
    UNCLEAR,
    Cells,
    Measured,
    PairShare,
    Shrinks,
    Value,
)
from longlook.analyses.reproduce.measured import grid
from longlook.analyses.reproduce.registry import MERGED
from longlook.analyses.reproduce.estimate import estimate
from longlook.analyses.reproduce.needed import cell_rounds, difference_sessions, ratio_rounds, share_sessions
from longlook.analyses.reproduce.rules import interaction
from longlook.core.spec import Statistics, load_scenario


def _runs(values: dict[tuple[str, str], np.ndarray], dims: dict[str, dict], metric="plt_ms") -> Measured:
    rows = [
        {
            "run_id": f"{c}-{a}-{i}",
            "cell_id": c,
            "round": i,
            "arm": a,
            "status": "ok",
            "protocol_requested": None,
            "protocol_negotiated": None,
            "audit_flagged": False,
            metric: v,
        }
        for (c, a), xs in values.items()
        for i, v in enumerate(xs)
    ]
    return Measured(
        cells=pd.DataFrame({"cell_id": list(dims), "dims": list(dims.values())}),
        runs=pd.DataFrame(rows),
        statistics=Statistics(alpha=0.01),
    )


def test_value_holds_inside_the_range_fails_outside_and_is_unclear_across_it():
    rng = np.random.default_rng(1)
    dims = {"blocked": {"link": "x,middlebox-block_udp=True"}}
    for centre, sd, want in ((380, 5, HOLDS), (900, 5, FAILS), (428, 40, UNCLEAR)):
        m = _runs({("blocked", "race"): rng.normal(centre, sd, 10)}, dims, metric="time_to_fallback_ms")
        out = Value("race", "time_to_fallback_ms", 300, 428).evaluate(m)
        assert out.verdict == want, (centre, out.number)


def test_a_value_on_how_a_browser_uses_both_protocols_counts_its_mixed_sessions():
    """Ten QUIC-enabled sessions that began over TCP and moved to QUIC: each a protocol
    mismatch ("mixed"). The claim is about such sessions: counted, they show QUIC 10-11 s
    behind TCP; not counted, there is nothing to judge."""
    rng = np.random.default_rng(5)
    dims = {"DL": {"trace": "dl.mahi"}}
    m = _runs({("DL", "h3"): rng.normal(10.5, 0.3, 10)}, dims, metric="router_quic_delay_s")
    m.runs = m.runs.assign(status="protocol_mismatch", protocol_requested="h3", protocol_negotiated="mixed")
    rule = Value("h3", "router_quic_delay_s", 9.09, 13.2, unit="s", mixed_counts=True)
    out = rule.evaluate(m)
    assert out.verdict == HOLDS and out.n == "10", out.number
    assert Value("h3", "router_quic_delay_s", 9.09, 13.2, unit="s").evaluate(m).verdict == UNCLEAR
    # QUIC at once (no TCP-first phase) is outside the band
    m.runs["router_quic_delay_s"] = rng.normal(0.2, 0.05, 10)
    assert rule.evaluate(m).verdict == FAILS


def test_a_budget_that_keeps_none_of_a_scenario_s_claim_cells_does_not_run_it(tmp_path):
    """The Chaudhary TCP-first claims read the patterns at the paper's own speed, the Granger
    claim 15-minute sessions: only the paper budget runs their scenarios."""
    from longlook.analyses.reproduce import CLAIMS, SCENARIOS
    from longlook.analyses.reproduce.scenarios import cells_read, run_scenario

    paper_only = ("chaudhary-tcp-first", "chaudhary-granger-long")
    for name in paper_only:
        rules = [c.rule for c in CLAIMS if c.scenario == name]
        assert rules and cells_read(SCENARIOS[name], "paper", rules), name
        assert not cells_read(SCENARIOS[name], "short", rules), name
        assert not cells_read(SCENARIOS[name], "standard", rules), name
    # every other scenario a claim reads has cells at the short budget for one of its claims
    for name, shipped in SCENARIOS.items():
        used = [c.rule for c in CLAIMS if c.scenario == name]
        if used and name not in paper_only:
            assert cells_read(shipped, "short", used), name
    why = "the short budget keeps none of its claims' cells"
    run = run_scenario(SCENARIOS["chaudhary-tcp-first"], tmp_path, "short", execute=False, skipped=why)
    assert (run.status, run.detail, run.has_data) == ("not run", why, False)


def test_the_interaction_interval_covers_the_true_change_in_95_percent():
    """Four lognormal arms (sigma .3, 6 runs each); a's cost rises by exp(0.2) on the slow
    cells. The 95% interval must cover 0.2 in >= 93% of 2,000 draws (Monte-Carlo sd 0.5%),
    and a 50% one in well under that."""
    rng = np.random.default_rng(7)
    hits = {0.95: 0, 0.5: 0}
    for _ in range(2000):
        af, bf = rng.lognormal(0.0, 0.3, 6), rng.lognormal(0.3, 0.3, 6)
        as_, bs = rng.lognormal(0.5, 0.3, 6), rng.lognormal(0.6, 0.3, 6)  # log a/b: -0.3 -> -0.1
        for conf in hits:
            _, lo, hi, _ = interaction(af, bf, as_, bs, conf)
            hits[conf] += lo <= 0.2 <= hi
    assert hits[0.95] / 2000 >= 0.93 and hits[0.5] / 2000 < 0.7


def test_a_paired_slow_cell_keeps_the_interval_honest_and_narrow():
    """The slow cell's arms share each round's network (a lognormal factor of sigma 0.5),
    a's cost rises by exp(0.1) there. From the per-round ratios the 95% interval covers 0.1
    in >= 93% of 2,000 draws; from the arms as independent samples it is several times
    wider (the network's variation counted twice)."""
    rng = np.random.default_rng(11)
    hits, widths = 0, {"paired": [], "unpaired": []}
    for _ in range(2000):
        af, bf = rng.lognormal(0.0, 0.05, 10), rng.lognormal(0.2, 0.05, 10)  # log a/b: -0.2
        net = rng.lognormal(0.0, 0.5, 10)
        as_, bs = net * rng.lognormal(0.0, 0.05, 10), net * rng.lognormal(0.1, 0.05, 10)  # -0.1
        d, lo, hi, _ = interaction(af, bf, as_, bs, 0.95, paired_slow=np.log(as_) - np.log(bs))
        hits += lo <= 0.1 <= hi
        widths["paired"].append(hi - lo)
        _, ulo, uhi, _ = interaction(af, bf, as_, bs, 0.95)
        widths["unpaired"].append(uhi - ulo)
    assert hits / 2000 >= 0.93
    assert np.median(widths["unpaired"]) > 4 * np.median(widths["paired"])


def test_shrinks_holds_when_quic_s_advantage_fades_on_the_slow_cpu_and_fails_when_it_grows():
    rng = np.random.default_rng(3)
    dims = {f"{cpu}": {"client_cpu": cpu, "link": "10"} for cpu in ("unlimited", "phone-2014")}

    def make(slow_h3):
        return _runs(
            {
                ("unlimited", "h3"): rng.normal(700, 20, 10),
                ("unlimited", "h2"): rng.normal(1000, 20, 10),
                ("phone-2014", "h3"): rng.normal(slow_h3, 20, 10),
                ("phone-2014", "h2"): rng.normal(1000, 20, 10),
            },
            dims,
        )

    rule = Shrinks("h3", "h2", "client_cpu", fast="unlimited", slow="phone-2014")
    assert rule.evaluate(make(1000)).verdict == HOLDS
    assert rule.evaluate(make(500)).verdict == FAILS
    assert rule.evaluate(make(700)).verdict == UNCLEAR


def test_would_need_is_planned_at_the_claims_resolution_not_at_the_observed_difference():
    """Two pilots with the same spreads, QUIC 1% and 4% faster: the same N (80% power at the
    claim's 5%), where planning on the observed difference gave the first 16 times as many
    rounds; the N is the first with 80% power on the pilot's upper-bound spreads."""
    from scipy import stats as sps

    from longlook.analyses.reproduce.needed import POWER, _upper_sd

    dims = {"c": {"rate_mbit": 10}}
    noise = np.array([-60.0, -20, 20, 60])
    needs = []
    for faster in (0.99, 0.96):
        m = _runs({("c", "h3"): 1000 * faster + noise, ("c", "h2"): 1000 + noise}, dims)
        out = Cells("h3", "h2", "a", at_least=1.0, tolerance_pct=5.0).evaluate(m)
        assert out.verdict == UNCLEAR and "80% power if QUIC is 5% better" in out.needs, out.needs
        needs.append(out.needs.split()[0])
    assert needs[0] == needs[1]
    sd = noise.std(ddof=1)
    n = cell_rounds(4, 990, sd, 4, 1000, sd, alpha=0.01, effect_pct=5.0)
    assert needs[0] == f"~{n:,}"
    up = _upper_sd(sd, 4)
    power = lambda k: sps.nct.sf(sps.t.ppf(0.995, 2 * k - 2), 2 * k - 2, 50 / (up * np.sqrt(2 / k)))  # noqa: E731
    assert power(n) >= POWER > power(n - 1)


def test_a_direction_claim_whose_gain_is_shown_short_of_its_resolution_does_not_hold():
    """Precise runs, no difference: the interval (about +-1%) straddles 0 and excludes a 5%
    gain: the claim does not hold (it used to stay inconclusive, 'no n decides it', so a claim
    whose other way cannot happen could never fail). Noisier runs whose 95% interval ends
    short of 5% but whose one-sided test at alpha does not yet exclude it stay inconclusive,
    and say no n would find a 5% difference."""
    rng = np.random.default_rng(8)
    m = _runs(
        {("c", "h3"): 1000 * rng.normal(1, 0.01, 12), ("c", "h2"): 1000 * rng.normal(1, 0.01, 12)},
        {"c": {"rate_mbit": 10}},
    )
    out = Cells("h3", "h2", "a", at_least=1.0, tolerance_pct=5.0).evaluate(m)
    assert out.verdict == FAILS and "gain shown below 5% in 1" in out.number, out.number
    assert out.cells[0]["p_short"] < 0.01 and out.p == 1.0
    for seed in range(200):
        r = np.random.default_rng(seed)
        m = _runs({("c", "h3"): 1000 * r.normal(1, 0.04, 6), ("c", "h2"): 1000 * r.normal(1, 0.04, 6)}, {"c": {}})
        out = Cells("h3", "h2", "a", at_least=1.0, tolerance_pct=5.0).evaluate(m)
        if out.verdict == UNCLEAR and out.cells[0]["ci"][1] < 5.0:
            assert out.needs.startswith("no n decides it at a 5% difference"), out.needs
            break
    else:
        raise AssertionError("no pilot between the two")


def test_ratio_share_and_difference_needs():
    assert ratio_rounds(8, 2.0, 0.4, 8, 1.0, 0.2, 1.5, 1.65, level=0.025) < ratio_rounds(
        8, 2.0, 0.4, 8, 1.0, 0.2, 1.5, 1.55, level=0.025
    )
    from scipy import stats as sps

    n = share_sessions(0.6, 0.5, level=0.025)
    # at n sessions the exact one-sided test at 0.025 rejects 0.5 with >= 80% power at 0.6
    crit = int(sps.binom.isf(0.025, n, 0.5))
    crit += sps.binom.sf(crit, n, 0.5) > 0.025
    assert sps.binom.sf(crit, n, 0.6) >= 0.8
    assert share_sessions(0.5, 0.5, level=0.025) is None
    assert difference_sessions(8, 1.0, 8, 1.0, 2.0, level=0.025) < difference_sessions(8, 1.0, 8, 1.0, 0.5, level=0.025)


def test_an_inconclusive_cells_claim_states_the_rounds_it_would_need():
    dims = {"c": {"rate_mbit": 10}}
    h3, h2 = np.array([950.0, 1010, 900, 980]), np.array([1000.0, 1060, 950, 1030])  # QUIC ~5% faster
    out = Cells("h3", "h2", "a", at_least=1.0).evaluate(_runs({("c", "h3"): h3, ("c", "h2"): h2}, dims))
    assert out.verdict == UNCLEAR and out.needs.startswith("~") and "rounds per arm" in out.needs
    # the interval ends short of a 5% difference TCP's way: no n finds one
    out = Cells("h3", "h2", "b", at_least=1.0).evaluate(_runs({("c", "h3"): h3, ("c", "h2"): h2}, dims))
    assert out.verdict == UNCLEAR and out.needs.startswith("no n decides it"), out.needs


def test_a_ratio_claims_p_is_its_test_against_the_factor():
    """A ratio of 1.55 against a factor of 1.5, the interval straddling it: p is the
    one-sided test of 'above 1.5' (large), not the test of 'different from 1' (< 0.001);
    and on any data p < 0.025 exactly when the whole interval clears the factor."""
    from longlook.analyses.reproduce import Ratio

    rng = np.random.default_rng(7)
    dims = {"c": {"rate_mbit": 10}}
    m = _runs({("c", "h3"): 1550 * rng.normal(1, 0.08, 8), ("c", "h2"): 1000 * rng.normal(1, 0.08, 8)}, dims)
    out = Ratio("h3", "h2", at_least=1.5).evaluate(m)
    assert out.verdict == UNCLEAR and 0.025 < out.p < 0.9, (out.p, out.number)
    for seed in range(40):
        r = np.random.default_rng(seed)
        m = _runs({("c", "h3"): r.lognormal(np.log(1.6), 0.2, 6), ("c", "h2"): r.lognormal(0, 0.2, 6)}, dims)
        for rule in (Ratio("h3", "h2", at_least=1.5), Ratio("h3", "h2", at_least=1.2, at_most=2.0)):
            out = rule.evaluate(m)
            assert (out.p < 0.025) == (out.verdict == HOLDS), (seed, rule, out.p, out.number)


def test_a_same_claims_p_is_the_holm_adjusted_tost_and_its_intervals_are_at_the_familys_level():
    """Four precise cells within 1% of each other, 'the same within 5%': p is the Holm
    TOST p (small: the claim is shown), not a test of a difference (large); the rows'
    intervals are at 1 - 0.05 / 4, as Holm over 4 cells needs."""
    rng = np.random.default_rng(11)
    dims = {f"c{i}": {"rate_mbit": 10 * (i + 1)} for i in range(4)}
    m = _runs({(c, arm): 1000 * rng.normal(1, 0.01, 10) for c in dims for arm in ("h3", "h2")}, dims)
    out = Cells("h3", "h2", "same", tolerance_pct=5.0, at_least=0.75).evaluate(m)
    assert out.verdict == HOLDS and out.p < 0.025 and "TOST" in out.p_text, (out.p, out.p_text)
    assert all(c["confidence"] == pytest.approx(1 - 0.05 / 4) for c in out.cells)
    assert all(c["p_equivalence_holm"] < 0.025 for c in out.cells)
    assert "Holm over 4 cells" in out.detail and "Bonferroni over 4 cells" in out.detail
    # the p of a single cell is its TOST p: the larger one-sided p against +-5%
    one = Cells("h3", "h2", "same", tolerance_pct=5.0, at_least=1.0, where={"rate_mbit": 10}).evaluate(m)
    assert one.p == pytest.approx(one.cells[0]["p_equivalence"]) and one.cells[0]["confidence"] == 0.95


def test_a_same_claim_on_adaptive_rounds_shows_no_cell_the_same_but_can_fail():
    """Rounds planned from a cell's own pilot favour 'the same' (core/adaptive.py): the data
    that holds above holds nowhere on an adaptive experiment; a difference still fails it."""
    rng = np.random.default_rng(11)
    dims = {f"c{i}": {"rate_mbit": 10 * (i + 1)} for i in range(4)}
    m = _runs({(c, arm): 1000 * rng.normal(1, 0.01, 10) for c in dims for arm in ("h3", "h2")}, dims)
    m.adaptive = True
    out = Cells("h3", "h2", "same", tolerance_pct=5.0, at_least=0.75).evaluate(m)
    assert out.verdict == UNCLEAR and out.p >= 0.025 and "adaptive" in out.detail, (out.verdict, out.detail)
    apart = _runs(
        {(c, arm): 1000 * rng.normal(1 + 0.3 * (arm == "h2"), 0.01, 10) for c in dims for arm in ("h3", "h2")}, dims
    )
    apart.adaptive = True
    assert Cells("h3", "h2", "same", tolerance_pct=5.0, at_least=0.75).evaluate(apart).verdict == FAILS


def test_a_direction_claims_p_is_the_holm_p_of_the_cell_it_needs():
    """'QUIC better in 3 of 4 cells', QUIC clearly faster in 3, not in the fourth: p is the
    3rd smallest Holm-adjusted p among cells pointing QUIC's way, below alpha as it holds."""
    rng = np.random.default_rng(12)
    dims = {f"c{i}": {"rate_mbit": 10 * (i + 1)} for i in range(4)}
    vals = {(c, "h3"): 1000 * (0.8 if i < 3 else 1.0) * rng.normal(1, 0.03, 8) for i, c in enumerate(dims)}
    vals.update({(c, "h2"): 1000 * rng.normal(1, 0.03, 8) for c in dims})
    out = Cells("h3", "h2", "a", at_least=0.75).evaluate(_runs(vals, dims))
    adjusted = sorted(c["p_adjusted"] for c in out.cells[:3])
    assert out.verdict == HOLDS and out.p == pytest.approx(adjusted[2]) and out.p < 0.01


def test_a_value_with_a_failed_run_decides_nothing():
    rng = np.random.default_rng(1)
    dims = {"blocked": {"link": "x,middlebox-block_udp=True"}}
    x = rng.normal(380, 5, 10)
    x[3] = np.nan
    m = _runs({("blocked", "race"): x}, dims, metric="time_to_fallback_ms")
    m.runs.loc[m.runs["time_to_fallback_ms"].isna(), "status"] = "failed"
    out = Value("race", "time_to_fallback_ms", 300, 428).evaluate(m)
    assert out.verdict == UNCLEAR and "1 run(s) failed" in out.detail
    m.failure_values = {"time_to_fallback_ms": 30000.0}  # a failure counted as the timeout pulls the mean out
    assert Value("race", "time_to_fallback_ms", 300, 428).evaluate(m).verdict != HOLDS


def test_shrinks_adjusts_its_pairs_with_the_one_holm():
    from longlook.core.multiple import holm

    rng = np.random.default_rng(3)
    dims = {f"{cpu}-{s}": {"client_cpu": cpu, "size": s} for cpu in ("unlimited", "phone") for s in (1, 2, 3)}
    vals = {
        (c, arm): rng.lognormal(0, 0.2, 6) * (1.3 if arm == "h3" and d["client_cpu"] == "phone" else 1)
        for c, d in dims.items()
        for arm in ("h3", "h2")
    }
    out = Shrinks("h3", "h2", "client_cpu", fast="unlimited", slow="phone").evaluate(_runs(vals, dims))
    assert [c["p_adjusted"] for c in out.cells] == pytest.approx(list(holm([c["p"] for c in out.cells])))


def test_the_standard_budget_keeps_the_short_cells_with_more_rounds_and_re_measures_flagged_runs(tmp_path):
    for name, shipped in SCENARIOS.items():
        short = load_scenario(shipped.path, shipped.overrides("short"))
        std = load_scenario(shipped.path, shipped.overrides("standard"))
        if shipped.standard is None:
            continue
        assert std.rounds >= short.rounds and std.total_runs() > short.total_runs(), name
        assert std.fidelity.retry_flagged, name
        assert (short.fidelity.link_check, std.fidelity.link_check) == ("quick", "full"), name
        assert load_scenario(shipped.path, shipped.overrides("paper")).fidelity.link_check == "full", name
        if name != "chaudhary-fallback":  # the standard one has all five patterns
            assert [c.id for c in std.cells()] == [c.id for c in short.cells()], name
    used = {c.scenario for c in CLAIMS}
    assert all(SCENARIOS[n].standard is not None for n in used)
    rows = estimate([SCENARIOS[n] for n in sorted(used)], "standard", tmp_path / "std")
    assert sum(r.runs for r in rows) == sum(
        load_scenario(SCENARIOS[n].path, SCENARIOS[n].overrides("standard")).total_runs() for n in sorted(used)
    )
    assert all(r.measured_from.startswith("assumed") for r in rows)  # nothing measured in tmp_path
    # large downloads are assumed at their rate: 50 MB at 100, 500 and 1000 Mbit/s, 3 s each besides
    zhang = next(r for r in rows if r.name == "zhang-fast-internet")
    assert zhang.s_per_run == pytest.approx(3 + (4.0 + 0.8 + 0.4) / 3) and "rate" in zhang.measured_from


def test_the_chaudhary_claims_read_the_scenario_where_fallback_happens():
    """The Granger row reads 15-minute sessions, every QUIC-enabled one broken at a random
    time, where a 250 s lag window fits on both sides of the fallback; the QoE and byte-share
    rows read the sessions no middlebox touches, and the paper budget runs only those."""
    from longlook.analyses.fallback.granger import null_index

    chaudhary = {c.id: c for c in CLAIMS if c.id.startswith("chaudhary")}
    assert chaudhary["chaudhary-granger"].scenario == "chaudhary-granger-long"
    assert chaudhary["chaudhary-tcp-as-good"].scenario == "chaudhary-fallback"
    long = load_scenario(SCENARIOS["chaudhary-granger-long"].path)
    rule = chaudhary["chaudhary-granger"].rule
    assert (rule.cause, rule.step_s, rule.max_lag_s) == ("share", 5.0, 250.0)
    assert long.intervention.treated_share == 1.0
    race = next(a for a in long.arm_list() if a.protocol == "race")
    assert all(long.assignment(c, race, r).treated for c in long.cells() for r in range(long.rounds))
    # the latest fallback (onset + idle timeout) and the earliest still leave the lag window room
    steps = long.video.duration_s / rule.step_s
    lags = rule.max_lag_s / rule.step_s
    for onset in long.intervention.onset_s:
        tcp = np.zeros(int(steps))
        tcp[int((onset + long.race.quic_idle_timeout_ms / 1000) / rule.step_s) :] = 1e5
        _, _, why = null_index(tcp, order=2, max_lag=int(lags))
        assert why is None, onset
    paper = load_scenario(SCENARIOS["chaudhary-fallback"].path, SCENARIOS["chaudhary-fallback"].overrides("paper"))
    assert paper.rounds == 8 and all(c.link.middlebox is None for c in paper.cells())
    assert {c.link.name for c in paper.cells()} == {f"{p}/none" for p in ("Incr", "Decr", "DH", "DL", "DVL")}


@pytest.mark.parametrize(
    "claim",
    [
        "langley-racing-wait",
        "langley-udp-blocked",
        "langley-blackhole",
        "langley-0rtt-handshake",
        "langley-server-cpu",
        "langley-high-bandwidth",
        "kakhki-mobile",
        "kakhki-proxy-tcp",
        "kakhki-proxy-quic-large",
        "kakhki-proxy-quic-small",
        "kakhki-table4-tcpx4",
        "kakhki-table4-quic-quic",
        "mininet-unfair-tcp",
        "mininet-fair-tcpx2",
        "chaudhary-causal",
    ],
)
def test_the_issue_s_claims_are_registered_and_their_cells_are_in_the_short_budget(claim):
    """A merged row's old id names the row it is in; a claim whose cells its scenario lacks
    says which (and is 'not run' until they exist); one whose cells only the paper budget
    runs is named by the short budget as left out."""
    c = next(x for x in CLAIMS if x.id == MERGED.get(claim, claim))
    if c.missing:
        return
    where = getattr(c.rule, "where", {})
    sc = load_scenario(SCENARIOS[c.scenario].path, SCENARIOS[c.scenario].overrides("short"))
    cells = grid(sc)
    m = Measured(cells=cells, runs=pd.DataFrame())
    if not m.select(where):
        from longlook.analyses.reproduce.coverage import coverage

        paper = Measured(cells=grid(load_scenario(SCENARIOS[c.scenario].path)), runs=pd.DataFrame())
        assert paper.select(where), claim
        assert "the short budget leaves out" in coverage(c, SCENARIOS[c.scenario], "short")[1], claim
        return
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


def _video(q_sessions, t_sessions) -> Measured:
    """A video Measured: pair i = QUIC-enabled session q_sessions[i] vs TCP-only t_sessions[i]
    (temporal QoE, one value a second) in cell DL, round i."""
    runs, series = [], []
    for r, pair in enumerate(zip(q_sessions, t_sessions)):
        for arm, qoe in zip(("h3", "h2"), pair):
            runs.append(
                {
                    "run_id": f"{r}{arm}",
                    "cell_id": "DL",
                    "round": r,
                    "arm": arm,
                    "status": "ok",
                    "protocol_requested": None,
                    "protocol_negotiated": None,
                    "audit_flagged": False,
                    "qoe": float(np.mean(qoe)),
                }
            )
            series += [
                {"run_id": f"{r}{arm}", "name": "qoe_t", "t_s": float(t), "value": float(v)} for t, v in enumerate(qoe)
            ]
    return Measured(
        cells=pd.DataFrame({"cell_id": ["DL"], "dims": [{}]}),
        runs=pd.DataFrame(runs),
        statistics=Statistics(alpha=0.05),
        series=pd.DataFrame(series),
    )


def test_pair_share_does_not_hold_on_identical_autocorrelated_sessions():
    """60 pairs of sessions from one process (quality walking the ladder, stalls): Welch on
    the seconds called about two pairs in three different and read the rest as 'the same',
    so 'TCP better or the same in > 50%' held. The block test calls few pairs different and
    shows few as the same: the claim is not 'holds'."""
    from calibration.test_reproduce_rules import qoe_sessions
    from longlook.analyses.fallback.qoe import QUIC_BETTER, TCP_BETTER

    rng = np.random.default_rng(21)
    q, t = qoe_sessions(rng, 60, 60), qoe_sessions(rng, 60, 60)
    out = PairShare().evaluate(_video(q, t))
    assert out.verdict != HOLDS, out.number
    told = sum(c["verdict"] in (TCP_BETTER, QUIC_BETTER) for c in out.cells)
    assert told <= 8, told  # ~3 expected at alpha 0.05 a side


def test_pair_share_without_power_stays_inconclusive():
    """QUIC truly better by 0.6 QoE units (beyond the 0.25 margin) but the seconds noisy: the
    paper's reading found 'not significant' in most pairs and counted them 'the same', so the
    claim held the more easily the less the pairs could tell. Undecided pairs make it
    inconclusive, and it says no number of pairs would decide it."""
    rng = np.random.default_rng(22)
    q = 1.6 + 3.0 * rng.normal(size=(30, 40))
    t = 1.0 + 3.0 * rng.normal(size=(30, 40))
    out = PairShare().evaluate(_video(q, t))
    assert out.verdict == UNCLEAR and "undecided" in out.number, out.number
    assert out.needs.startswith("no number of pairs decides it"), out.needs


def test_a_pair_of_sessions_is_the_same_only_within_the_margin():
    from longlook.analyses.fallback.qoe import QUIC_BETTER, SAME, TCP_BETTER, UNDECIDED, pair_verdict

    rng = np.random.default_rng(23)
    base = 1.0 + 0.05 * rng.normal(size=(4, 60))
    assert pair_verdict(base[0], base[1])[0] == SAME  # precise and equal: shown within 0.25
    assert pair_verdict(base[0], base[1] + 1.0)[0] == TCP_BETTER
    assert pair_verdict(base[0] + 1.0, base[1])[0] == QUIC_BETTER
    noisy = 1.0 + 3.0 * rng.normal(size=(2, 60))
    assert pair_verdict(noisy[0], noisy[1])[0] == UNDECIDED  # cannot tell: never "the same"


def test_granger_share_reads_the_sessions_shown_as_good_and_their_family_wise_verdict():
    from longlook.analyses.reproduce import GrangerShare

    rule = GrangerShare(at_least=0.5)
    s = pd.DataFrame(
        {
            "pair_verdict": ["tcp_better"] * 20 + ["same"] * 20 + ["undecided"] * 20,
            "suitable": True,
            "p_B": [0.001] * 36 + [0.5] * 4 + [0.0] * 20,
            "p_S": 0.5,
        }
    )
    out = rule.judge(s, alpha=0.05, confidence=0.95)
    assert out.verdict == HOLDS and out.n == "40" and out.number.startswith("90% of 40")
    # the analysis's own family-wise p is what counts when it has one
    out = rule.judge(s.assign(p_either=0.2), alpha=0.05, confidence=0.95)
    assert out.verdict == FAILS and out.number.startswith("0% of 40")


def test_an_ate_claims_p_is_welchs_one_sided_p_on_the_claimed_side():
    from longlook.analyses.fallback.intervention import ate_rows
    from longlook.analyses.reproduce import Ate

    rng = np.random.default_rng(24)
    sessions = pd.DataFrame(
        {"treated": np.arange(16) < 8, "qoe": np.r_[rng.normal(0.0, 0.3, 8), rng.normal(1.0, 0.3, 8)]}
    )
    effects = pd.DataFrame(ate_rows(sessions, outcomes=(("qoe", False),)))
    out = Ate("qoe", "lower").judge(effects, sessions, {})
    assert out.verdict == HOLDS and out.p == pytest.approx(effects.iloc[0]["p"] / 2)
    out = Ate("qoe", "higher").judge(effects, sessions, {})
    assert out.verdict == FAILS and out.p == pytest.approx(1 - effects.iloc[0]["p"] / 2)


def test_state_shift_reads_the_diffs_status_and_adjusted_p_only():
    from longlook.analyses.reproduce import StateShift
    from longlook.analyses.states.diff import StateDiff

    item = "SlowStart->ApplicationLimited"
    rule = StateShift("h3", item, "client_cpu", "unlimited", "phone-2014")

    def diff(status, p, towards):
        rows = pd.DataFrame(
            [
                {
                    "item": item,
                    "mean_a": 0.0,
                    "mean_b": 0.1,
                    "n_a": 10,
                    "n_b": 10,
                    "runs_a": 0,
                    "runs_b": 1,
                    "p": p,
                    "p_adjusted": p,
                    "status": status,
                    "towards": towards,
                    "test": "fisher",
                }
            ]
        )
        return StateDiff("QUIC", "unlimited", "phone-2014", 10, 10, 0.01, rows)

    # 0 of 10 runs against 1 of 10: Fisher p = 1, "same": not a shift (it used to hold)
    assert rule.judge(diff("same", 1.0, 1)).verdict == UNCLEAR
    out = rule.judge(diff("appears", 0.003, 1))
    assert out.verdict == HOLDS and out.p == 0.003
    out = rule.judge(diff("vanishes", 0.003, -1))
    assert out.verdict == FAILS and out.p == 1.0


def test_a_pair_with_a_failed_session_is_undecided_not_dropped():
    """Ten pairs TCP clearly better, and ten where the TCP-only session failed: dropping those
    would leave ten of ten for TCP; counted undecided, the share is 10 of 20 and the claim
    does not hold."""
    rng = np.random.default_rng(25)
    q = 1.0 + 0.05 * rng.normal(size=(20, 60))
    t = 2.0 + 0.05 * rng.normal(size=(20, 60))
    m = _video(q, t)
    failed = m.runs["arm"].eq("h2") & m.runs["round"].ge(10)
    m.runs.loc[failed, "status"] = "failed"
    out = PairShare().evaluate(m)
    assert out.n == "20" and out.number.startswith("50% of 20") and out.verdict != HOLDS, out.number
    assert "10 pair(s) with a failed session counted undecided" in out.detail


def _byte_sessions(tcp_udp: list[tuple[float, float] | str], flagged: tuple[int, ...] = ()) -> Measured:
    """QUIC-enabled sessions in a DL cell with no middlebox and one with UDP blocked: session i
    carried tcp_udp[i] = (bytes over TCP, over UDP) over two seconds, or failed ("failed")."""
    runs, series = [], []
    for cell in ("DL/none", "DL/blocked"):
        for r, got in enumerate(tcp_udp):
            run_id = f"{cell}-{r}"
            status = got if isinstance(got, str) else "ok"
            runs.append(
                {
                    "run_id": run_id,
                    "cell_id": cell,
                    "round": r,
                    "arm": "quic-enabled",
                    "status": status,
                    "audit_flagged": r in flagged,
                }
            )
            if status == "ok":
                tcp, udp = got if cell == "DL/none" else (1.0, 0.0)  # the blocked cell: all TCP, never read
                for t in (0, 1):
                    series += [
                        {"run_id": run_id, "name": "F", "t_s": float(t), "value": tcp / 2},
                        {"run_id": run_id, "name": "F_udp", "t_s": float(t), "value": udp / 2},
                    ]
    return Measured(
        cells=pd.DataFrame({"cell_id": ["DL/none", "DL/blocked"], "dims": [{"middlebox": "none"}, {"middlebox": "x"}]}),
        runs=pd.DataFrame(runs),
        statistics=Statistics(alpha=0.05),
        series=pd.DataFrame(series),
    )


def test_byte_share_counts_each_session_s_bytes_over_tcp_at_the_router():
    """40 sessions in the no-middlebox cell, 20 of them with 60% of their bytes over TCP: the
    share (50%) is in the band 40-60% only if enough sessions show it; 40 show it within a
    band of 30-70%, and a share of 0 of 40 fails. The cell where UDP is blocked is never read."""
    from longlook.analyses.reproduce import ByteShare

    half = [(60.0, 40.0)] * 20 + [(10.0, 90.0)] * 20
    wide = ByteShare(tcp_bytes=0.4, at_least=0.3, at_most=0.7, where={"middlebox": "none"})
    out = wide.evaluate(_byte_sessions(half))
    assert out.verdict == HOLDS and out.number.startswith("20 of 40"), out.number
    assert {c["cell_id"] for c in out.cells} == {"DL/none"} and out.cells[0]["tcp_share"] == 0.6
    none = wide.evaluate(_byte_sessions([(1.0, 99.0)] * 40))
    assert none.verdict == FAILS and none.number.startswith("0 of 40"), none.number
    # all of them mostly over TCP: above the band's top
    assert wide.evaluate(_byte_sessions([(90.0, 10.0)] * 40)).verdict == FAILS


def test_byte_share_puts_a_failed_session_where_it_helps_least():
    """14 sessions below the band's bottom and 6 that failed: had the 6 met the threshold
    the share could be in the band, so the claim cannot fail; flagged sessions are left out."""
    from longlook.analyses.reproduce import ByteShare

    rule = ByteShare(tcp_bytes=0.4, at_least=0.3, at_most=0.7, where={"middlebox": "none"})
    out = rule.evaluate(_byte_sessions([(0.0, 1.0)] * 14 + ["failed"] * 6))
    assert out.verdict == UNCLEAR and "6 failed" in out.number and out.n == "20", out.number
    # without the failures 0 of 14 is shown below 30%
    assert rule.evaluate(_byte_sessions([(0.0, 1.0)] * 14)).verdict == FAILS
    flagged = rule.evaluate(_byte_sessions([(0.0, 1.0)] * 14 + [(1.0, 0.0)] * 3, flagged=(14, 15, 16)))
    assert flagged.n == "14" and flagged.verdict == FAILS, flagged.number
