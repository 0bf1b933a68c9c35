"""`longlook reproduce`: claim evaluation on synthetic data (a claim that holds, one that does
not, one that stays inconclusive, and one whose cells the budget dropped), scenario overrides,
the registry against the shipped scenarios, and the report a --no-run pass writes."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from longlook.analyses.reproduce import (
    CLAIMS,
    FAILS,
    HOLDS,
    NOT_RUN,
    SCENARIOS,
    UNCLEAR,
    Cells,
    Measured,
    PairShare,
    Ratio,
    claims,
    reproduce,
)
from longlook.analyses.reproduce.measured import TCP_MEAN, grid
from longlook.core.record import new_run_id
from longlook.core.spec import Statistics, apply_overrides, load_scenario
from longlook.core.store import Store
from longlook.errors import LonglookError
from longlook.kinds.pageload import record_from_fetch
from longlook.report import build_report

CELLS = ["c1", "c2", "c3", "c4"]


def page_loads(factor, n=10, noise=0.03, seed=1, cells=CELLS, arms=("h3", "h2")) -> Measured:
    """Runs of arms a, b per cell: PLT 1000 ms x `factor` for the first arm, `noise` relative sd."""
    rng = np.random.default_rng(seed)
    rows = []
    for i, c in enumerate(cells):
        for r in range(n):
            for arm in arms:
                plt = 1000 * (1 + i) * (factor if arm == arms[0] else 1.0) * rng.normal(1, noise)
                rows.append(
                    {
                        "run_id": f"{c}-{r}-{arm}",
                        "cell_id": c,
                        "round": r,
                        "arm": arm,
                        "status": "ok",
                        "protocol_requested": None,
                        "protocol_negotiated": None,
                        "audit_flagged": False,
                        "plt_ms": plt,
                    }
                )
    dims = [{"rate_mbit": 10 * (i + 1), "object_size": 1000} for i in range(len(cells))]
    return Measured(
        cells=pd.DataFrame({"cell_id": cells, "dims": dims}),
        runs=pd.DataFrame(rows),
        statistics=Statistics(bootstrap_resamples=999),
    )


def test_quic_clearly_faster_everywhere_holds():
    out = Cells("h3", "h2", "a").evaluate(page_loads(0.8))
    assert out.verdict == HOLDS
    assert out.number.startswith("QUIC better in 4/4 cells")
    assert out.n == "10/10 per cell" and out.p < 0.01 and out.against == []


def test_tcp_clearly_faster_does_not_hold_and_names_the_cells_against():
    out = Cells("h3", "h2", "a").evaluate(page_loads(1.25))
    assert out.verdict == FAILS
    assert sorted(out.against) == CELLS
    assert "TCP better in 4" in out.number


def test_no_difference_is_inconclusive_for_a_direction_and_holds_for_same():
    m = page_loads(1.0, n=6, noise=0.2)
    assert Cells("h3", "h2", "a").evaluate(m).verdict == UNCLEAR
    assert Cells("h3", "h2", "same", tolerance_pct=50).evaluate(page_loads(1.0)).verdict == HOLDS
    # a large significant difference contradicts "same"
    assert Cells("h3", "h2", "same", tolerance_pct=5).evaluate(page_loads(0.5)).verdict == FAILS


def test_mixed_cells_weigh_against_the_share_needed():
    # QUIC faster in half the cells, slower in the other half: "nearly every" fails, "half" holds
    m = page_loads(0.8, cells=["c1", "c2"])
    slow = page_loads(1.25, cells=["c3", "c4"], seed=2)
    m.runs = pd.concat([m.runs, slow.runs], ignore_index=True)
    m.cells = pd.concat([m.cells, slow.cells.assign(dims=[{"rate_mbit": 50}, {"rate_mbit": 60}])], ignore_index=True)
    assert Cells("h3", "h2", "a", at_least=0.75).evaluate(m).verdict == FAILS
    assert Cells("h3", "h2", "a", at_least=0.5).evaluate(m).verdict == HOLDS
    assert Cells("h3", "h2", "a", where={"rate_mbit": [10, 20]}).evaluate(m).verdict == HOLDS


def test_cells_the_budget_dropped_say_not_run_and_too_few_runs_are_inconclusive():
    m = page_loads(0.8)
    assert Cells("h3", "h2", "a", where={"rate_mbit": 100}).evaluate(m).verdict == NOT_RUN
    assert Cells("h3", "h2", "a").evaluate(page_loads(0.5, n=1)).verdict == UNCLEAR


def test_ratio_against_the_papers_factor():
    m = page_loads(2.0, arms=("macw107", "macw430"), cells=["c1"])
    out = Ratio("macw107", "macw430", at_least=1.5).evaluate(m)
    assert out.verdict == HOLDS and 1.9 < float(out.number.split("x")[0]) < 2.1 and out.p < 0.01
    out = Ratio("macw107", "macw430", at_least=1.5).evaluate(page_loads(1.1, arms=("macw107", "macw430"), cells=["c1"]))
    assert out.verdict == FAILS and out.against == ["c1"]  # the whole interval is below 1.5x
    noisy = page_loads(1.3, n=3, noise=0.4, arms=("macw107", "macw430"), cells=["c1"])
    assert Ratio("macw107", "macw430", at_least=1.5).evaluate(noisy).verdict == UNCLEAR


def test_fairness_flows_read_as_arms_with_the_tcp_mean():
    runs, flows = [], []
    rng = np.random.default_rng(3)
    for r in range(20):  # one run flagged: a missing pair the verdict must survive at its worst
        rid = f"run{r}"
        runs.append(
            {
                "run_id": rid,
                "cell_id": "x2",
                "round": r,
                "arm": "flows",
                "status": "ok",
                "protocol_requested": None,
                "protocol_negotiated": None,
                "audit_flagged": r == 19,
            }
        )
        for label, mbit in (("QUIC", 2.8), ("TCP 1", 0.7), ("TCP 2", 0.96)):
            flows.append({"run_id": rid, "flow": label, "router_mbit": mbit * rng.normal(1, 0.05), "status": "ok"})
    m = Measured(
        cells=pd.DataFrame({"cell_id": ["x2"], "dims": [{"matchup": "QUIC vs TCPx2"}]}),
        runs=pd.DataFrame(runs),
        flows=pd.DataFrame(flows),
        statistics=Statistics(bootstrap_resamples=999),
    )
    fr = m.flow_runs()
    assert set(fr["arm"]) == {"QUIC", "TCP 1", "TCP 2", TCP_MEAN}
    out = Ratio(
        "QUIC", TCP_MEAN, at_least=2.0, metric="router_mbit", flows=True, where={"matchup": "QUIC vs TCPx2"}
    ).evaluate(m)
    assert out.verdict == HOLDS and out.n == "19/19"  # the flagged run is left out
    # a round without a counted run shows no equivalence and nothing beyond it either (its run
    # could lie anywhere: core.stats.equivalence_blocked); every round counted, 'fair' fails
    m.runs["audit_flagged"] = False
    fair = Cells(
        "QUIC",
        TCP_MEAN,
        "same",
        tolerance_pct=25,
        metric="router_mbit",
        lower_is_better=False,
        flows=True,
        at_least=1.0,
    ).evaluate(m)
    assert fair.verdict == FAILS


def test_pair_share_counts_tcp_better_or_same():
    rows, series = [], []
    rng = np.random.default_rng(4)
    for r in range(12):
        for arm, mbit in (("h3", 1.0), ("h2", 2.0 if r < 11 else 0.5)):
            rows.append(
                {
                    "run_id": f"{r}{arm}",
                    "cell_id": "DL",
                    "round": r,
                    "arm": arm,
                    "status": "ok",
                    "protocol_requested": None,
                    "protocol_negotiated": None,
                    "audit_flagged": False,
                    "qoe": mbit,
                }
            )
            series += [
                {"run_id": f"{r}{arm}", "name": "qoe_t", "t_s": float(t), "value": mbit + 0.05 * rng.normal()}
                for t in range(30)
            ]
    m = Measured(
        cells=pd.DataFrame({"cell_id": ["DL"], "dims": [{}]}),
        runs=pd.DataFrame(rows),
        statistics=Statistics(alpha=0.05),
        series=pd.DataFrame(series),
    )
    out = PairShare().evaluate(m)
    assert out.verdict == HOLDS and out.number.startswith("92% of 12") and out.n == "12"


def test_overrides_merge_tables_replace_lists_and_follow_aliases():
    data = {"runs": 10, "link": {"rate_mbit": [5, 10], "rtt_ms": 36}, "workloads": {"object_size": ["1k"]}}
    got = apply_overrides(data, {"rounds": 3, "links[*]": {"rate_mbit": [10]}, "workloads": {"object_size": ["2k"]}})
    assert got == {"rounds": 3, "links": [{"rate_mbit": [10], "rtt_ms": 36}], "workloads": {"object_size": ["2k"]}}
    with pytest.raises(LonglookError, match="not a list of tables"):
        apply_overrides({"seed": 1}, {"seed[*]": {"x": 1}})


def test_every_claim_reads_a_shipped_scenario_and_its_cells_exist_at_the_paper_budget():
    assert len({c.id for c in CLAIMS}) == len(CLAIMS)
    for name, shipped in SCENARIOS.items():
        paper, short = load_scenario(shipped.path), load_scenario(shipped.path, shipped.short)
        assert paper.name == name == short.name
        assert short.total_runs() < paper.total_runs(), name
        assert "with overrides" in short.toml_text
    for c in CLAIMS:
        sc = load_scenario(SCENARIOS[c.scenario].path)
        cells = grid(sc)
        found = c.rule.claim_cells(Measured(cells=cells, runs=pd.DataFrame()))
        # a claim whose scenario lacks its cells says which (it is 'not run' until they exist)
        assert bool(found) != bool(c.missing), c.id
    assert [c.id for c in claims(["kakhki-table4-fairness"])][:2] == ["kakhki-table4-tcp", "kakhki-table4-tcpx2"]


def _fig2_store(directory: Path, factor: float, *, finished: bool = True) -> None:
    """The short fig2 scenario with synthetic runs: MACW 107 `factor` times slower."""
    sc = load_scenario(SCENARIOS["kakhki-fig2-macw"].path, SCENARIOS["kakhki-fig2-macw"].short)
    rng = np.random.default_rng(1)
    with Store.open(directory) as st:
        st.start_experiment(sc, {})
        for cell in sc.cells():
            for rnd in range(sc.rounds):
                for pos, arm in enumerate(sc.round_order(cell, rnd)):
                    plt = 1500 * (factor if arm.label == "macw107" else 1) * rng.normal(1, 0.02)
                    f = {
                        "protocol_requested": "h3",
                        "protocol": "h3",
                        "ok": True,
                        "plt_ms": plt,
                        "handshake_ms": 40,
                        "ttfb_ms": 80,
                        "objects": [],
                    }
                    st.record_run(
                        record_from_fetch(
                            f, run_id=new_run_id(), cell_id=cell.id, round=rnd, position=pos, arm=arm.label
                        )
                    )
        if finished:
            st.finish_experiment()


def test_no_run_reads_the_directory_and_writes_the_report(tmp_path):
    _fig2_store(tmp_path / "kakhki-fig2-macw", 2.0)
    result = reproduce(tmp_path, budget="short", only=["kakhki-fig2", "kakhki-fig6a"], execute=False)
    verdicts = {r.claim.id: r.outcome.verdict for r in result.rows}
    assert verdicts == {"kakhki-fig2": HOLDS, "kakhki-fig6a": NOT_RUN}
    doc = json.loads((tmp_path / "reproduction.json").read_text())
    assert doc["claims"][0]["n"] == "4/4" and doc["claims"][0]["p"] < 0.01
    assert "| kakhki-fig2 |" in (tmp_path / "reproduction.md").read_text()
    html = (tmp_path / "reproduction.html").read_text()
    assert 'data-verdict="holds"' in html and 'data-verdict="not run"' in html
    md = (tmp_path / "reproduction.md").read_text()
    assert "not run: not measured yet" in md and "not run: not run" not in md  # said once
    # the papers' findings in one table, our own rows (never counted) in another
    papers_table = html[html.index('id="claims-table"') : html.index("</table>", html.index('id="claims-table"'))]
    assert 'id="kakhki-fig2"' in papers_table and "Field-only findings" in html


def test_our_own_rows_are_a_table_of_their_own_in_the_html(tmp_path):
    result = reproduce(tmp_path, budget="short", only=["kakhki-fig2", "chaudhary-causal"], execute=False)
    html = (tmp_path / "reproduction.html").read_text()
    papers = html[html.index('id="claims-table"') : html.index("</table>", html.index('id="claims-table"'))]
    ours = html[html.index('id="ours-table"') : html.index("</table>", html.index('id="ours-table"'))]
    assert 'id="kakhki-fig2"' in papers and 'id="chaudhary-causal"' not in papers
    assert 'id="chaudhary-causal"' in ours and {r.claim.id for r in result.rows} == {"kakhki-fig2", "chaudhary-causal"}


def test_a_claim_that_does_not_hold_links_to_its_explanation(tmp_path):
    _fig2_store(tmp_path / "kakhki-fig2-macw", 1.0)
    result = reproduce(tmp_path, budget="short", only=["kakhki-fig2"], execute=False, build_report=build_report)
    row = result.rows[0]
    assert row.outcome.verdict == FAILS
    titles = dict(row.links)
    assert titles.get("report #states") == "kakhki-fig2-macw/report.html#states", row.links
    assert (tmp_path / "kakhki-fig2-macw" / "report.html").exists()
    assert 'href="kakhki-fig2-macw/report.html#states"' in (tmp_path / "reproduction.html").read_text()


def test_bad_budget_or_unknown_claim_is_one_clear_error(tmp_path):
    with pytest.raises(LonglookError, match="--budget"):
        reproduce(tmp_path, budget="long")
    with pytest.raises(LonglookError, match="unknown claim 'fig99'") as e:
        claims(["fig99"])
    assert "kakhki-fig2" in e.value.hint


def test_an_experiment_without_runs_leaves_its_claims_not_run(tmp_path):
    # what a first link check that failed leaves behind: the experiment, no run
    sc = load_scenario(SCENARIOS["kakhki-fig2-macw"].path, SCENARIOS["kakhki-fig2-macw"].short)
    with Store.open(tmp_path / "kakhki-fig2-macw") as st:
        st.start_experiment(sc, {})
    result = reproduce(tmp_path, budget="short", only=["kakhki-fig2"], execute=False)
    assert result.rows[0].outcome.verdict == NOT_RUN


def test_sessions_leave_out_the_gaps_between_them():
    from datetime import datetime, timedelta

    from longlook.analyses.reproduce.publish import active_seconds, sessions

    t0 = datetime(2026, 11, 27, 4, 0)
    day1 = [t0 + timedelta(minutes=m) for m in (0, 5, 19, 30)]  # one session of 30 min
    day2 = [t0 + timedelta(hours=20, minutes=m) for m in (0, 10)]  # the next day: 10 min
    assert len(sessions(day1 + day2)) == 2
    assert active_seconds(day2 + day1) == pytest.approx(40 * 60)
    assert active_seconds([]) == 0.0


def test_the_published_reproduction_says_when_where_how_long_and_why(tmp_path):
    from longlook.analyses.reproduce.publish import publish

    _fig2_store(tmp_path / "kakhki-fig2-macw", 1.0)  # TCP as fast: the claim does not hold
    result = reproduce(tmp_path, budget="short", only=["kakhki-fig2"], execute=False, build_report=build_report)
    text = publish(result, tmp_path / "docs" / "reproduction.md", "longlook reproduce ...").read_text()
    assert "0 of 1 findings of the papers conclusive" not in text
    assert "1 of 1 findings of the papers conclusive (100%" in text
    assert "**wall time" in text and "vCPUs" in text and "commit(s)" in text
    assert "### kakhki-fig2 (Kakhki IMC'17" in text and "Measured:" in text
    assert "--no-run --publish docs/reproduction.md" in text
    assert "report.html" not in text  # the results folder is not published
    # each row names the scenario that measured it; the provenance table, its sessions' commits
    row = next(line for line in text.splitlines() if line.startswith("| kakhki-fig2 |"))
    assert row.rstrip(" |").endswith("kakhki-fig2-macw"), row
    assert "| scenario | runs | flagged | sessions | wall | commits |" in text


def test_a_complete_experiment_is_read_even_when_todays_versions_differ(tmp_path):
    """A reproduction resumed with newer software reads what it already finished (its
    versions were recorded as {} here: any real ones differ) instead of refusing it."""
    _fig2_store(tmp_path / "kakhki-fig2-macw", 2.0)
    result = reproduce(tmp_path, budget="short", only=["kakhki-fig2"], execute=True, link_check=False)
    (run,) = result.scenarios
    assert (run.status, run.detail, run.runs) == ("read", "complete already", 0)
    assert result.rows[0].outcome.verdict == HOLDS
    with Store.open(tmp_path / "kakhki-fig2-macw", read_only=True) as st:
        assert "resumed" not in st.experiment()["versions"]  # nothing was started again


def test_an_interrupted_experiment_is_resumed_not_read_as_complete(tmp_path):
    """An experiment a signal stopped has no end time: reproduce resumes it (here that is
    refused, its recorded versions {} differing from today's, which shows it tried) instead of
    drawing a verdict from its partial runs."""
    _fig2_store(tmp_path / "kakhki-fig2-macw", 2.0, finished=False)
    with Store.open(tmp_path / "kakhki-fig2-macw", read_only=True) as st:
        assert st.experiment()["ended_at"] is None
    result = reproduce(tmp_path, budget="short", only=["kakhki-fig2"], execute=True, link_check=False)
    (run,) = result.scenarios
    assert run.status == "failed" and "versions changed" in run.detail, run


def test_explanations_count_congestion_responses_alike_for_quic_and_tcp():
    """Recovery entries (and TCP's Loss) per run for both: a QUIC stack's loss batches, one per
    ACK that declared a loss, are not congestion events."""
    from longlook.analyses.reproduce.publish import _dwell_text

    quic = {
        "protocol": "QUIC",
        "runs": 4,
        "losses": [{"loss_events": 100}] * 4,
        "states": [
            {"state": "CongestionAvoidance", "entries": 8, "dwell_share": 0.9},
            {"state": "Recovery", "entries": 8, "dwell_share": 0.1},
        ],
    }
    tcp = {
        "protocol": "TCP",
        "runs": 4,
        "losses": [{"loss_events": 1}] * 4,
        "states": [
            {"state": "Open", "entries": 10, "dwell_share": 0.9},
            {"state": "Recovery", "entries": 6, "dwell_share": 0.08},
            {"state": "Loss", "entries": 2, "dwell_share": 0.02},
        ],
    }
    assert _dwell_text(quic).endswith("2.0 Recovery entries per run")
    assert _dwell_text(tcp).endswith("2.0 Recovery entries per run")


def test_every_fairness_claim_is_explained_by_its_flows_state_machines():
    """Table 4 keeps each flow's server log (one trace per flow): a fairness claim that does
    not hold is explained by the flows' state machines, not by its numbers alone."""
    from longlook.analyses.reproduce.registry import CLAIMS

    fairness = [c for c in CLAIMS if c.explain.anchor == "fairness"]
    assert len(fairness) >= 5 and all(c.explain.states for c in fairness)


def test_the_estimate_times_a_resumed_experiment_by_its_active_hours_not_its_span(tmp_path):
    """The standard run's fig8b was started, stopped for hours by other work, and resumed: its
    start-to-end span made the estimate 198 s a page load (132 min for 40 runs). The active
    time (sessions of activity, gaps over 20 min left out) is what a run costs."""
    from longlook.analyses.reproduce.estimate import measured_s_per_run

    d = tmp_path / "kakhki-fig2-macw"
    _fig2_store(d, 2.0)
    with Store.open(d) as st:
        st.sql("UPDATE experiments SET started_at = started_at - INTERVAL 5 HOUR")
    per_run, where, _ = measured_s_per_run("kakhki-fig2-macw", [tmp_path])
    assert where == str(d) and per_run < 60, per_run


def test_a_republished_page_says_which_verdicts_changed_and_what_moved_them(tmp_path):
    from longlook.analyses.reproduce.changes import read_earlier
    from longlook.analyses.reproduce.publish import publish, table_row

    page = tmp_path / "docs" / "reproduction.md"
    _fig2_store(tmp_path / "a" / "kakhki-fig2-macw", 1.0)  # TCP as fast: does not hold
    first = reproduce(tmp_path / "a", budget="short", only=["kakhki-fig2"], execute=False, build_report=build_report)
    text = publish(first, page, "longlook reproduce ...").read_text()
    assert "## Changes against the last published table" not in text  # nothing to tell it against
    # the page reads back as it was written, column by column
    earlier = read_earlier(page)
    assert earlier.budget == "short" and earlier.rows["kakhki-fig2"] == {
        **table_row(first.rows[0]),
        "kind": "paper",
    }
    _fig2_store(tmp_path / "b" / "kakhki-fig2-macw", 2.0)  # twice as long: holds
    second = reproduce(tmp_path / "b", budget="short", only=["kakhki-fig2"], execute=False, build_report=build_report)
    assert second.rows[0].outcome.verdict != first.rows[0].outcome.verdict
    text = publish(second, page, "longlook reproduce ...").read_text()
    section = text.split("## Changes against the last published table")[1].split("\n## ")[0]
    row = next(line for line in section.splitlines() if line.startswith("| kakhki-fig2 |"))
    before, now = first.rows[0].outcome, second.rows[0].outcome
    assert f"| {before.verdict} | {now.verdict} | the data alone: {before.number} -> {now.number} |" in row
    assert "0 claim(s) kept their verdict; 1 changed" in section


def test_the_last_published_page_reads_back_as_the_baseline():
    from longlook.analyses.reproduce.changes import read_earlier
    from longlook.analyses.reproduce.registry import CLAIMS

    earlier = read_earlier(Path(__file__).parents[3] / "docs" / "reproduction.md")
    assert earlier is not None and earlier.budget in ("short", "standard", "paper")
    assert len(earlier.rows) >= 20
    verdicts = {r["verdict"] for r in earlier.rows.values()}
    assert verdicts <= {"holds", "does not hold", "inconclusive", "not run"}, verdicts
    assert {r["kind"] for r in earlier.rows.values()} == {"paper", "ours"}
    known = {c.id for c in CLAIMS}
    assert len(known & set(earlier.rows)) >= 20


def test_a_row_dropped_from_the_registry_is_a_change_and_one_left_off_by_only_is_not():
    from longlook.analyses.reproduce.changes import Earlier, changes

    old = {"verdict": "holds", "kind": "paper"}
    earlier = Earlier("standard", "2026-11-29 08:07 UTC", {"kakhki-fig2": old, "retired-claim": old})
    found = changes(earlier, [])
    assert [(c.claim, c.moved_by) for c in found] == [("retired-claim", ["no longer a row"])]


def test_the_paper_budget_measures_its_shortest_scenarios_first(tmp_path):
    from longlook.analyses.reproduce.estimate import estimate

    seen = []
    only = ["kakhki-video", "kakhki-fig2", "kakhki-table4-tcp", "kakhki-fig6a"]
    progress = lambda event, **kw: seen.append(kw["name"]) if event == "scenario" else None  # noqa: E731
    reproduce(tmp_path, budget="paper", only=only, execute=False, progress=progress)
    walls = {r.name: r.wall_s for r in estimate([SCENARIOS[n] for n in seen], "paper", tmp_path)}
    assert [walls[n] for n in seen] == sorted(walls[n] for n in seen) and len(seen) == 4
    assert seen[0] == "kakhki-fig2-macw" and seen[-1] == "kakhki-video"
    # the other budgets keep the registry's order
    seen.clear()
    reproduce(tmp_path / "s", budget="short", only=only, execute=False, progress=progress)
    assert seen == list(dict.fromkeys(c.scenario for c in claims(only)))
