"""The registry against what its claims must be: each claim can fail and can hold, reads no cell
where its outcome is decided by construction, and quotes its paper as our copy has it.

Can fail: for every registered claim, measured data is synthesised in the claim's own cells
(its scenario's grid at the paper budget) over the outcomes that scenario can produce: arm a
at a factor of arm b from 1/16 to 16 in every cell, half the cells one way and half the other,
a share of session pairs or sessions from 0 to 1, an ATE of either sign, a state transition
appearing or vanishing. The claim must come out "holds" on one of them and "does not hold" on
another; a claim that cannot fail on any of them is an error of the registry (a criterion no
outcome could contradict), and so is one that cannot hold. Where a scenario bounds what its
arms can differ by, the outcomes are bounded too: two QUIC arms that differ only in 0-RTT
differ by one RTT at most, so "the same within 5%" at 10 MB (1.7 s at 50 Mbit/s) could not
fail (test_the_search_catches_a_claim_that_cannot_fail shows it, with the rule the registry
used to have). The p a claim shows is its own test's: below its level whenever it holds.

By construction: a claim comparing QUIC with TCP performance must not read cells whose
middlebox breaks QUIC (QUIC silent for 35 s in 60 cannot be the better one), unless it is
about that middlebox (`Claim.breaks_quic`).

Quotes: each claim's sentence is found in our copy of its paper (when the copies are here).
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from pathlib import Path
from typing import Iterator

import numpy as np
import pandas as pd
import pytest

from longlook.analyses.fallback.intervention import ate_rows
from longlook.analyses.fallback.qoe import QUIC_BETTER, TCP_BETTER
from longlook.analyses.reproduce import (
    CLAIMS,
    FAILS,
    FIELD_ONLY,
    HOLDS,
    MERGED,
    OURS,
    PAPER,
    SCENARIOS,
    Ate,
    Cells,
    Claim,
    ByteShare,
    GrangerShare,
    Measured,
    PairShare,
    Ratio,
    Shrinks,
    StateShift,
    Survives,
    Twins,
    Value,
)
from longlook.analyses.reproduce.claims import ShippedScenario
from longlook.analyses.reproduce.measured import TCP_MEAN, grid
from longlook.analyses.reproduce.registry import COPIES, PAPERS_DIR
from longlook.analyses.states.diff import StateDiff
from longlook.core.spec import load_scenario

ROUNDS = 12
NOISE = 0.01  # lognormal sigma of a run: precise, so the outcome's factor decides
FACTORS = [4.0, 0.25, 1.0, 0.97, 1.03] + [float(f) for f in np.geomspace(1 / 16, 16, 49)]
FACTORS += [0.99, 1.01, 0.98, 1.02, 0.95, 1.05]
LEVEL = 0.025


# ---- the claim's own cells --------------------------------------------------------------


def _grid(claim: Claim) -> tuple[Measured, object]:
    """The claim's scenario at the paper budget as cells without runs, and its statistics.
    A claim whose scenario lacks its cells (`missing`) gets them: the scenario's first cell
    with the claim's `where` laid over it."""
    sc = load_scenario(SCENARIOS[claim.scenario].path)
    cells = grid(sc)
    m = Measured(cells=cells, runs=pd.DataFrame(), statistics=sc.statistics)
    if claim.missing:
        where = getattr(claim.rule, "where", {})
        fixed = {k: (v[0] if isinstance(v, (list, tuple)) else v) for k, v in where.items() if not callable(v)}
        cells = pd.DataFrame({"cell_id": ["missing"], "dims": [{**cells["dims"].iloc[0], **fixed}]})
        m = Measured(cells=cells, runs=pd.DataFrame(), statistics=sc.statistics)
    return m, sc.statistics


def _values(rng, mean: float) -> np.ndarray:
    return mean * rng.lognormal(-(NOISE**2) / 2, NOISE, ROUNDS)


def _page_runs(grid: Measured, values: dict[tuple[str, str], float], metric: str) -> Measured:
    rng = np.random.default_rng(1)
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
            metric: float(v),
        }
        for (c, a), mean in values.items()
        for i, v in enumerate(_values(rng, mean))
    ]
    return replace(grid, runs=pd.DataFrame(rows))


def _flow_runs(grid: Measured, values: dict[tuple[str, str], float], metric: str) -> Measured:
    """Fairness runs: one run per (cell, round), a flow per arm (TCP_MEAN: two TCP flows)."""
    rng = np.random.default_rng(2)
    runs, flows = [], []
    for c in dict.fromkeys(c for c, _ in values):
        for i in range(ROUNDS):
            rid = f"{c}-{i}"
            runs.append(
                {
                    "run_id": rid,
                    "cell_id": c,
                    "round": i,
                    "arm": "flows",
                    "status": "ok",
                    "protocol_requested": None,
                    "protocol_negotiated": None,
                    "audit_flagged": False,
                }
            )
            for (cc, arm), mean in values.items():
                if cc != c:
                    continue
                labels = ["TCP 1", "TCP 2"] if arm == TCP_MEAN else [arm]
                for label in labels:
                    v = float(_values(rng, mean)[0])
                    flows.append({"run_id": rid, "flow": label, metric: v, "status": "ok"})
    return replace(grid, runs=pd.DataFrame(runs), flows=pd.DataFrame(flows))


def _splits(cells: list[str]) -> Iterator[list[float]]:
    """Per-cell factors: every cell alike, then a share q of the cells one way and the rest
    the other."""
    for f in FACTORS:
        yield [f] * len(cells)
    for f in (4.0, 0.25, 1.5, 1 / 1.5):
        for q in (0.25, 0.5, 0.75):
            k = round(q * len(cells))
            yield [f] * k + [1 / f] * (len(cells) - k)
        yield [f] * (len(cells) - 1) + [1 / f]


def _producible(claim: Claim, grid: Measured, factors: list[float], cells: list[str]) -> list[float]:
    """The factors (arm a / arm b per cell) brought into what the scenario can produce: two
    QUIC arms that differ only in 0-RTT differ by the one RTT it saves at most."""
    if not {"h3-0rtt", "h3-1rtt"} >= {getattr(claim.rule, "a", ""), getattr(claim.rule, "b", "")}:
        return factors
    out = []
    for c, f in zip(cells, factors):
        d = grid.dims(c)
        rtt, rate, size = d.get("rtt_ms") or 0, d.get("rate_mbit") or math.inf, d.get("object_size") or 0
        plt = size * 8 / (rate * 1e3) + 2 * rtt  # ms: the transfer and the request's round trips
        out.append(min(1.0, max(1 - rtt / (plt + rtt), f)))
    return out


def _outcomes(claim: Claim) -> Iterator[tuple[str, object]]:
    """(what, measured or judged outcome) pairs the claim's scenario can produce."""
    rule = claim.rule
    grid, stats = _grid(claim)
    if isinstance(rule, (Cells, Ratio)):
        cells = rule.claim_cells(grid)
        build = _flow_runs if rule.flows else _page_runs
        for factors in _splits(cells):
            factors = _producible(claim, grid, factors, cells)
            values = {}
            for c, f in zip(cells, factors):
                values[(c, rule.a)] = 1000.0 * f
                values[(c, rule.b)] = 1000.0
            yield (
                f"{rule.a}/{rule.b} x{factors[0]:.3g}..x{factors[-1]:.3g}",
                rule.evaluate(build(grid, values, rule.metric)),
            )
    elif isinstance(rule, Value):
        cells = rule.claim_cells(grid)
        for v in np.geomspace(1, 1e5, 81):
            yield (
                f"{rule.arm} = {v:.3g}",
                rule.evaluate(_page_runs(grid, {(c, rule.arm): float(v) for c in cells}, rule.metric)),
            )
    elif isinstance(rule, Twins):
        pairs = rule._pairs(grid)
        for f in FACTORS:
            values = {}
            for a, b in pairs:
                values[(a, rule.arm)] = 1000.0 * f
                values[(b, rule.arm)] = 1000.0
            yield f"{rule.dim}={rule.a} x{f:.3g}", rule.evaluate(_page_runs(grid, values, rule.metric))
    elif isinstance(rule, Shrinks):
        pairs = rule._pairs(grid)
        for f in FACTORS:
            values = {}
            for fast, slow in pairs:
                values.update({(fast, rule.a): 800.0, (fast, rule.b): 1000.0})
                values.update({(slow, rule.a): 800.0 * f, (slow, rule.b): 1000.0})
            yield f"slow x{f:.3g}", rule.evaluate(_page_runs(grid, values, rule.metric))
    elif isinstance(rule, PairShare):
        for k in range(0, 41, 4):
            pairs = [(TCP_BETTER, "")] * k + [(QUIC_BETTER, "")] * (40 - k)
            yield f"{k}/40 pairs TCP better", rule.judge(pairs, alpha=stats.alpha, confidence=stats.confidence)
    elif isinstance(rule, GrangerShare):
        for k in range(0, 401, 20):  # 400 tested sessions (the paper had 1,023 pairs)
            sessions = pd.DataFrame(
                {
                    "pair_verdict": [rule.among[0]] * 400,
                    "suitable": True,
                    "p_B": [0.001] * k + [0.9] * (400 - k),
                    "p_S": 0.9,
                }
            )
            yield f"{k}/400 sessions", rule.judge(sessions, alpha=stats.alpha, confidence=stats.confidence)
    elif isinstance(rule, ByteShare):
        for k in range(0, 401, 20):  # 400 QUIC-enabled sessions, k of them mostly over TCP
            shares = np.r_[np.full(k, 0.9), np.zeros(400 - k)]
            yield f"{k}/400 sessions >= {rule.tcp_bytes:.0%} over TCP", rule.judge(shares, confidence=stats.confidence)
    elif isinstance(rule, Ate):
        rng = np.random.default_rng(3)
        for d in (-2.0, -0.5, 0.0, 0.5, 2.0):
            s = pd.DataFrame(
                {"treated": np.arange(16) < 8, rule.metric: np.r_[rng.normal(d, 0.3, 8), rng.normal(0.0, 0.3, 8)]}
            )
            effects = pd.DataFrame(ate_rows(s, outcomes=((rule.metric, False),)))
            yield f"ATE {d:+g}", rule.judge(effects, s, {})
    elif isinstance(rule, StateShift):
        for status, p, towards in (("appears", 0.001, 1), ("vanishes", 0.001, -1), ("same", 0.5, 1)):
            row = {
                "item": rule.item,
                "mean_a": 0.1,
                "mean_b": 0.2,
                "n_a": 10,
                "n_b": 10,
                "runs_a": 1,
                "runs_b": 2,
                "p": p,
                "p_adjusted": p,
                "status": status,
                "towards": towards,
                "test": "fisher",
            }
            diff = StateDiff(rule.protocol, str(rule.fast), str(rule.slow), 10, 10, stats.alpha, pd.DataFrame([row]))
            yield status, rule.judge(diff)
    elif isinstance(rule, Survives):
        cells = rule.claim_cells(grid)
        for done_a, done_b in ((ROUNDS, 0), (ROUNDS, ROUNDS), (0, ROUNDS), (ROUNDS - 1, 0)):
            m = _page_runs(grid, {(c, arm): 1000.0 for c in cells for arm in (rule.a, rule.b)}, "plt_ms")
            arm_round = zip(m.runs["arm"], m.runs["round"])
            failed = [(a == rule.a and r >= done_a) or (a == rule.b and r >= done_b) for a, r in arm_round]
            m.runs.loc[failed, "status"] = "failed"
            m.runs.loc[failed, "plt_ms"] = None
            yield f"{rule.a} {done_a}/{ROUNDS}, {rule.b} {done_b}/{ROUNDS}", rule.evaluate(m)
    else:  # a new rule: this test must learn its outcomes
        raise AssertionError(f"{claim.id}: no outcomes for {type(rule).__name__}")


def search(claim: Claim) -> dict[str, str]:
    """The first outcome on which the claim holds and the first on which it does not, with
    the claim's own p checked against its verdict on each."""
    found: dict[str, str] = {}
    level = max(LEVEL, _grid(claim)[1].alpha)
    for what, out in _outcomes(claim):
        if out.verdict == HOLDS:
            assert out.p is not None and out.p < level, (claim.id, what, "holds with p", out.p, out.p_text)
        if out.verdict == FAILS and out.p is not None:
            assert out.p >= 0.01, (claim.id, what, "does not hold with p", out.p)
        if out.verdict in (HOLDS, FAILS):
            found.setdefault(out.verdict, what)
        if len(found) == 2:
            break
    return found


@pytest.mark.parametrize("claim", CLAIMS, ids=[c.id for c in CLAIMS])
def test_every_claim_can_fail_and_can_hold_on_outcomes_its_scenario_can_produce(claim):
    found = search(claim)
    assert FAILS in found, f"{claim.id}: no outcome its scenario can produce makes it fail ({claim.reads()})"
    assert HOLDS in found, f"{claim.id}: no outcome its scenario can produce makes it hold ({claim.reads()})"


def test_the_search_catches_a_claim_that_cannot_fail():
    """Planted: the registry's old 'the same within +-5%' for 0-RTT at 10 MB, a factor no larger
    than any outcome (at least 1/16x), and a range no outcome leaves. Each holds on some
    outcome and fails on none."""
    old = next(c for c in CLAIMS if c.id == "kakhki-fig7-large")
    planted = [
        replace(old, rule=Cells("h3-0rtt", "h3-1rtt", "same", where={"object_size": [10000000]}, at_least=0.75)),
        replace(next(c for c in CLAIMS if c.id == "kakhki-fig2"), rule=Ratio("macw107", "macw430", at_least=1 / 32)),
        replace(
            next(c for c in CLAIMS if c.id == "kakhki-fig6a"),
            rule=Cells("h3", "h2", "same", tolerance_pct=10_000.0, at_least=0.5),
        ),
    ]
    for claim in planted:
        found = search(claim)
        assert HOLDS in found and FAILS not in found, (claim.id, claim.reads(), found)
    # and the registry's own rule for it can fail: a significant 0-RTT gain colours the cell
    assert search(old).keys() == {HOLDS, FAILS}


# ---- by construction --------------------------------------------------------------------


@pytest.mark.parametrize("budget", ["paper", "standard", "short"])
def test_no_claim_reads_cells_where_a_middlebox_decides_it(budget):
    """A middlebox on the link (UDP blocked, throttled, black-holed, a small MTU) decides a
    QUIC-vs-TCP comparison by construction: only a claim about that middlebox reads such
    cells, at every budget (a budget whose links all block UDP labels them as if none did).
    Planted: the old chaudhary-tcp-as-good, which read UDP blocked 35 s in 60 (the cells of
    chaudhary-fallback's file as shipped)."""

    def offenders(claims: list[Claim], overrides=lambda shipped: shipped.overrides(budget)) -> list[str]:
        bad = []
        for c in claims:
            if c.breaks_quic:
                continue
            shipped = SCENARIOS[c.scenario]
            m = Measured(cells=grid(load_scenario(shipped.path, overrides(shipped))), runs=pd.DataFrame())
            if any(m.dims(cell)["middlebox"] != "none" for cell in c.rule.claim_cells(m)):
                bad.append(c.id)
        return bad

    assert offenders(CLAIMS) == []
    tcp_as_good = next(c for c in CLAIMS if c.id == "chaudhary-tcp-as-good")
    old = replace(tcp_as_good, rule=PairShare(quic_arm="quic-enabled", at_least=0.5))
    assert offenders([old], lambda shipped: None) == ["chaudhary-tcp-as-good"]


def test_a_claim_on_fluctuating_bandwidth_reads_loads_that_see_many_rate_changes():
    """One 1 MB page over the 2-20 Mbit/s trace (a change every 0.5 s) lasts about a second:
    two rate changes. The claim reads the 10 MB page (7-8 s at the traces' ~10 Mbit/s mean)."""
    claim = next(c for c in CLAIMS if c.id == "kakhki-fluctuating")
    grid, _ = _grid(claim)
    sizes = {grid.dims(c)["object_size"] for c in claim.rule.claim_cells(grid)}
    assert sizes and min(sizes) >= 10_000_000


# ---- the table's rows ---------------------------------------------------------------------


def test_each_finding_is_one_row_and_ours_are_apart():
    ids = [c.id for c in CLAIMS]
    assert len(ids) == len(set(ids))
    assert not set(MERGED) & set(ids) and set(MERGED.values()) <= set(ids)
    for old, new in MERGED.items():  # the merged row names the other paper
        assert next(c for c in CLAIMS if c.id == new).also, (old, new)
    ours = {c.id for c in CLAIMS if c.kind == OURS}
    assert {"chaudhary-causal", "langley-racing-wait", "langley-udp-blocked"} <= ours
    assert all(c.kind in (PAPER, OURS) for c in CLAIMS)
    assert not {f.id for f in FIELD_ONLY} & set(ids)
    # two rows on one scenario and one rule are one finding counted twice
    same = {}
    for c in CLAIMS:
        key = (c.scenario, repr(c.rule))
        assert key not in same, f"{c.id} repeats {same.get(key)}"
        same[key] = c.id


def _clean(text: str) -> str:
    """Letters and digits only, the copies' doubled LaTeX numbers ('606060%', '61%percent6161')
    undone, so a quote is found across line breaks, hyphenation and typography."""
    text = re.sub(r"(\d+(?:\.\d+)?)%percent\1\1\\?%", r"\1%", text)
    text = re.sub(r"(\d+(?:\.\d+)?)\1\1", r"\1", text)
    text = text.replace("-\n", "")
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _copies(paper: str) -> str | None:
    files = [Path(PAPERS_DIR) / f for f in COPIES.get(paper, ())]
    if not files or not all(f.exists() for f in files):
        return None
    return "".join(_clean(f.read_text(errors="replace")) for f in files)


@pytest.mark.parametrize("claim", CLAIMS, ids=[c.id for c in CLAIMS])
def test_the_quote_is_in_our_copy_of_the_paper(claim):
    """A paper row quotes its sentence, found in our copy (the paper quoted, `quote_in`, when
    our copy of its own paper lacks it); a paper of which we have no copy says so."""
    if claim.kind == PAPER and not COPIES.get(claim.paper):
        assert "no copy" in claim.note and not claim.quote, claim.id
    elif claim.kind == PAPER:
        assert claim.quote, claim.id
    for paper, quote in [(claim.quote_in or claim.paper, claim.quote), *((a.paper, a.quote) for a in claim.also)]:
        if not quote:
            continue
        text = _copies(paper)
        if text is None:
            pytest.skip(f"no copy of {paper} in {PAPERS_DIR}")
        assert _clean(quote) in text, (claim.id, paper, quote)


@pytest.mark.parametrize("finding", FIELD_ONLY, ids=[f.id for f in FIELD_ONLY])
def test_field_only_findings_are_quoted_too(finding):
    text = _copies(finding.paper)
    if text is None:
        pytest.skip(f"no copy of {finding.paper} in {PAPERS_DIR}")
    assert _clean(finding.quote) in text, finding.id


def _all_blocked(shipped: ShippedScenario) -> ShippedScenario:
    """chaudhary-fallback reduced to links that all block UDP 35 s in 60 (as its short budget
    once was): labels drop what every link shares, the middlebox among it."""
    box = {"block_udp": True, "active_from_s": 10.0, "on_s": 35.0, "off_s": 25.0}
    links = [
        {
            "name": f"{p}/udp-intermittent",
            "delay_ms": 20,
            "buffer_packets": 30,
            "up": {"rate_mbit": 10},
            "down": {"trace": f"chaudhary-patterns-traces/{p.lower()}-short.mahi"},
            "middlebox": box,
        }
        for p in ("DL", "DH")
    ]
    return replace(shipped, short={"rounds": 1, "links": links}, standard=None)


def test_a_store_s_cells_say_what_their_middlebox_sets_whatever_their_label(tmp_path):
    """When every link blocks UDP, the cells' labels say nothing of it; the cells read from
    the store do."""
    from longlook.core.store import Store

    shipped = _all_blocked(SCENARIOS["chaudhary-fallback"])
    sc = load_scenario(shipped.path, shipped.overrides("short"))
    with Store.open(tmp_path / "x") as st:
        st.start_experiment(sc, {})
    m = Measured.from_store(tmp_path / "x")
    assert all("middlebox" not in m.dims(c)["link"] for c in m.cells["cell_id"])
    assert all("block_udp=True" in m.dims(c)["middlebox"] for c in m.cells["cell_id"])
    assert next(c for c in CLAIMS if c.id == "chaudhary-tcp-as-good").rule.claim_cells(m) == []


def test_a_budget_names_the_cells_of_the_figure_it_leaves_out():
    """Fig. 6a is 4 rates x 7 sizes; the standard budget keeps 2 x 2 and says which it left
    out. A cell is matched by where it lies on the figure's axes: cells whose links all block
    UDP carry the ids of the paper grid's cells without a middlebox (their labels drop what
    all the links share), yet none of them is one. chaudhary-fallback's short budget keeps
    DL with no middlebox, its standard budget all five patterns."""
    from longlook.analyses.reproduce.coverage import coverage

    fig6a = next(c for c in CLAIMS if c.id == "kakhki-fig6a")
    out, text = coverage(fig6a, SCENARIOS[fig6a.scenario], "standard")
    assert len(out) == 24 and text.startswith("4 of the 28 cells of its figure") and "rate_mbit 5, 100" in text
    assert coverage(fig6a, SCENARIOS[fig6a.scenario], "paper") == ([], "all 28 cells of its figure")
    tcp_as_good = next(c for c in CLAIMS if c.id == "chaudhary-tcp-as-good")
    out, text = coverage(tcp_as_good, _all_blocked(SCENARIOS[tcp_as_good.scenario]), "short")
    assert len(out) == 5 and text.startswith("0 of the 5 cells"), text
    out, text = coverage(tcp_as_good, SCENARIOS[tcp_as_good.scenario], "short")
    assert len(out) == 4 and text.startswith("1 of the 5 cells") and "dl-short" not in text, text
    assert coverage(tcp_as_good, SCENARIOS[tcp_as_good.scenario], "standard") == ([], "all 5 cells of its figure")
    # the budget shortens a download, not the figure: Zhang's 1 Gbit/s cell is kept
    zhang = next(c for c in CLAIMS if c.id == "zhang-slower-at-1g")
    assert coverage(zhang, SCENARIOS[zhang.scenario], "short") == ([], "its one cell")
