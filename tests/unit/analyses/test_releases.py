"""Releases from the registries (stacks/builds/releases.py): listing, ranges, nearest releases in
errors. The registries are replaced by recorded answers (no network in unit tests)."""

from __future__ import annotations

import json

import pytest

from longlook.errors import LonglookError
from longlook.stacks.builds.releases import check_release, expand, nearest, registry_of, releases

GO = "v0.48.2\nv0.52.0\nv0.54.0\nv0.55.0-beta.1\nv0.55.0\nv0.57.1\nv0.65.0\n"
CRATES = "\n".join(
    json.dumps({"name": "quinn", "vers": v, "yanked": y})
    for v, y in [("0.11.5", False), ("0.11.6", False), ("0.11.7", True), ("0.11.8", False), ("0.11.10-rc.1", False)]
)
PYPI = json.dumps({"releases": {"1.7.0": [{"yanked": False}], "1.7.1": [], "1.7.2": [{"yanked": False}]}})


def fake(text):
    return lambda url: text


def test_each_registry_s_listing_is_read_oldest_first_without_pre_releases_yanked_or_empty_ones():
    assert releases("quic-go", fetch=fake(GO)) == ["v0.48.2", "v0.52.0", "v0.54.0", "v0.55.0", "v0.57.1", "v0.65.0"]
    assert "v0.55.0-beta.1" in releases("quic-go", pre=True, fetch=fake(GO))
    assert releases("quinn", fetch=fake(CRATES)) == ["0.11.5", "0.11.6", "0.11.8"]  # 0.11.7 yanked
    assert releases("aioquic", fetch=fake(PYPI)) == ["1.7.0", "1.7.2"]  # 1.7.1 has no files
    assert registry_of("quinn").url() == "https://index.crates.io/qu/in/quinn"
    assert registry_of("quic-go").url() == "https://proxy.golang.org/github.com/quic-go/quic-go/@v/list"


def test_a_range_expands_to_the_releases_inside_it_and_an_empty_or_reversed_one_is_an_error():
    assert expand("quic-go@v0.50.0..v0.57.1", fetch=fake(GO)) == [
        "quic-go@v0.52.0",
        "quic-go@v0.54.0",
        "quic-go@v0.55.0",
        "quic-go@v0.57.1",
    ]
    assert expand("quic-go@v0.54.0", fetch=fake(GO)) == ["quic-go@v0.54.0"]  # one release: itself
    with pytest.raises(LonglookError, match="no release in this range") as e:
        expand("quic-go@v0.70.0..v0.80.0", fetch=fake(GO))
    assert "v0.65.0" in e.value.hint
    with pytest.raises(LonglookError, match="range is empty"):
        expand("quic-go@v0.57.1..v0.52.0", fetch=fake(GO))


def test_an_unknown_release_names_the_registry_s_nearest():
    with pytest.raises(LonglookError, match="has no such release") as e:
        check_release("quic-go", "v0.53.0", fetch=fake(GO))
    assert e.value.hint == "nearest releases: v0.48.2, v0.52.0, v0.54.0"
    assert check_release("quic-go", "0.52.0", fetch=fake(GO)) == "v0.52.0"  # the v is optional
    assert nearest("quinn", "0.11.7", known=["0.11.5", "0.11.6", "0.11.8"]) == ["0.11.5", "0.11.6", "0.11.8"]
    with pytest.raises(LonglookError, match="no registry lists"):
        releases("ngtcp2")


SWEEP = """
name = "sweep"
rounds = 2
workloads = ["1x1m"]
versions = "quic-go@v0.57.0..v0.65.0"
[[links]]
rate_mbit = 20
rtt_ms = 36
[[arms]]
label = "qg"
protocol = "h3"
server = "quic-go"
client = "quic-go"
[[arms]]
label = "h2"
protocol = "h2"
"""


def test_a_release_range_becomes_one_arm_per_release_that_alternate_within_a_round(tmp_path, monkeypatch):
    from longlook.kinds.pageload import Scenario

    monkeypatch.setenv("LONGLOOK_CACHE", str(tmp_path))
    (tmp_path / "releases").mkdir()
    (tmp_path / "releases" / "quic-go.json").write_text(GO)  # a fresh listing: no network
    sc = Scenario.from_toml(SWEEP, source="test")
    assert [a.label for a in sc.arms] == ["qg-v0.57.1", "qg-v0.65.0", "h2"]
    assert [(a.server, a.client) for a in sc.arms[:2]] == [(f"quic-go@{v}",) * 2 for v in ("v0.57.1", "v0.65.0")]
    cell = sc.cells()[0]
    assert sorted(a.label for a in sc.round_order(cell, 0)) == sorted(a.label for a in sc.arms)  # one round, all
    with pytest.raises(LonglookError, match="versions: .*no release in this range"):
        Scenario.from_toml(SWEEP.replace("v0.57.0..v0.65.0", "v0.70.0..v0.80.0"), source="test")
    # releases older than the adapter's main.go supports: one error naming the range
    with pytest.raises(LonglookError, match="supports v0.56.0 and newer"):
        Scenario.from_toml(SWEEP.replace("v0.57.0..v0.65.0", "v0.52.0..v0.57.1"), source="test")
    with pytest.raises(LonglookError, match="no arm runs aioquic"):
        Scenario.from_toml(
            SWEEP.replace('versions = "quic-go@v0.57.0..v0.65.0"', 'versions = "aioquic@1.7.0"'), source="test"
        )


def test_a_sweep_s_history_finds_the_release_where_the_metric_stepped(tmp_path, monkeypatch):
    """Nine releases, page loads 20% slower from the sixth on: E-Divisive puts the change
    point there, the limit says what it can detect, and the report draws it."""
    import numpy as np

    from longlook.analyses.releases import release_history
    from longlook.core.store import Store
    from longlook.kinds.pageload import Scenario, record_from_fetch
    from unit.core.test_store import fetch

    listing = "\n".join(f"v0.{60 + i}.0" for i in range(9))
    monkeypatch.setenv("LONGLOOK_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache" / "releases").mkdir(parents=True)
    (tmp_path / "cache" / "releases" / "quic-go.json").write_text(listing)
    sc = Scenario.from_toml(
        SWEEP.replace("v0.57.0..v0.65.0", "v0.60.0..v0.68.0").replace("rounds = 2", "rounds = 6"), source="test"
    )
    out = tmp_path / "exp"
    rng = np.random.default_rng(3)
    with Store.open(out) as store:
        store.start_experiment(sc)
        cell = sc.cells()[0]
        for i, arm in enumerate(sc.arms):
            for r in range(6):
                plt = (500.0 if arm.label == "h2" else 400.0 if i < 5 else 480.0) * rng.normal(1, 0.02)
                store.record_run(
                    record_from_fetch(
                        fetch("h3" if arm.protocol == "h3" else "h2", plt=plt),
                        run_id=f"{arm.label}-{r}",
                        cell_id=cell.id,
                        round=r,
                        position=i,
                        arm=arm.label,
                    )
                )
    h = release_history(out)
    [s] = h.series
    assert [p.version for p in s.points] == [f"v0.{60 + i}.0" for i in range(9)]
    assert [cp.index for cp in s.change_points] == [5] and 15 < s.change_points[0].change_pct < 25
    assert "E-Divisive over 9 releases" in h.limit() and "95% intervals" in h.limit()
    from longlook.report.sections.releases import section

    with Store.open(out, read_only=True) as store:
        from longlook.core.experiment_stats import analyse

        sec = section(store, analyse(store))
    assert sec is not None and "v0.64.0 → v0.65.0" in sec.html


def test_the_history_s_limit_names_the_family_its_bonferroni_divided_by():
    """Four series, one with only two releases measured: E-Divisive tests three, each at
    pvalue / 3, and the limit says so (it said "Bonferroni over 4")."""
    import math

    from longlook.analyses.releases.history import ReleaseHistory, ReleasePoint, ReleaseSeries, change_points

    def series(cell, measured):
        return ReleaseSeries(
            cell,
            "qg",
            "plt_ms",
            [
                ReleasePoint(f"v0.{60 + i}.0", f"qg-v0.{60 + i}.0", 5, 500.0 + i, 490.0 + i, 510.0 + i)
                if i < measured
                else ReleasePoint(f"v0.{60 + i}.0", f"qg-v0.{60 + i}.0", 0, math.nan, math.nan, math.nan)
                for i in range(9)
            ],
        )

    family = [series("a", 9), series("b", 9), series("c", 9), series("d", 2)]
    threshold, perms, tested = change_points(family, 0.05)
    assert tested == 3 and threshold == 0.05 / 3
    h = ReleaseHistory(family, "plt_ms", "ms", 0.05, threshold, perms)
    assert "Bonferroni over the 3 series tested; 1 with fewer than 3 releases measured not tested" in h.limit()
    assert "Bonferroni over 4" not in h.limit()
    assert "(Bonferroni over 3 series)" in ReleaseHistory(family[:3], "plt_ms", "ms", 0.05, threshold, perms).limit()


def _world(levels: dict[str, float], cv: float = 0.05, seed: int = 0, noisy: set[str] = frozenset()):
    """A fake measure(): each release's runs lognormal around its level (CV `cv`; 60% for the
    `noisy` ones), drawn for the step's whole budget (a look reads only the rounds before
    it, as the experiment's loop does). Records each step's releases."""
    import math

    import numpy as np

    from longlook.analyses.releases.sides import StepRuns

    rng = np.random.default_rng(seed)
    calls = []

    def measure(step, which, plan):
        calls.append(which)
        values = {}
        for r in which:
            c = 0.6 if r in noisy else cv
            s = math.sqrt(math.log1p(c * c))
            values[r] = levels[r] * np.exp(rng.normal(-s * s / 2, s, plan.max_rounds))
        return StepRuns(list(which), values, {r: np.ones(plan.max_rounds, bool) for r in which}), f"step-{step}"

    return measure, calls


def _levels(releases, first_changed, factor=1.2, base=1000.0):
    return {
        r: base * (factor if first_changed is not None and i >= first_changed else 1.0) for i, r in enumerate(releases)
    }


def test_bisect_names_the_first_changed_release_within_log2_steps_and_says_when_nothing_differs():
    import math

    from longlook.analyses.releases.bisect import bisect

    releases = [f"v0.{50 + i}.0" for i in range(16)]
    for first in (1, 5, 11, 15):
        measure, calls = _world(_levels(releases, first), seed=first)
        res = bisect("quic-go", releases, measure)
        assert res.outcome == "found" and res.first_changed == releases[first], res.summary()
        assert len(res.steps) <= math.ceil(math.log2(14 + 1)) + 1 == res.max_steps()
        assert calls[0] == ["v0.50.0", "v0.65.0"]
        for step, which in zip(res.steps[1:], calls[1:]):  # each later step: its range's two ends and the middle
            assert which == [step.ends[0], step.release, step.ends[1]]
            assert releases.index(which[0]) < releases.index(which[1]) < releases.index(which[2])
    measure, _ = _world(_levels(releases, None), cv=0.02, seed=2)  # "the same" needs its interval within +-5%
    res = bisect("quic-go", releases, measure)
    assert res.outcome == "no difference" and len(res.steps) == 1 and "do not differ" in res.summary()


def test_bisect_leaves_a_range_unplaced_where_its_budget_cannot_decide_and_never_guesses():
    from longlook.analyses.releases.bisect import bisect

    releases = [f"v0.{50 + i}.0" for i in range(8)]
    measure, _ = _world(_levels(releases, 6), seed=3, noisy={"v0.53.0"})  # the first middle release is all noise
    res = bisect("quic-go", releases, measure, max_rounds=12)
    assert res.outcome == "inconclusive" and res.first_changed is None
    assert res.steps[-1].release == "v0.53.0" and res.steps[-1].verdict == "unclear"
    assert res.unplaced and res.unplaced[0][:2] == ("v0.50.0", "v0.57.0") and "inconclusive" in res.summary()


def test_a_large_change_is_decided_in_the_fewest_rounds_at_every_step():
    """The issue's cell: v0.61.0 at 3,925 ms (sd 301), v0.64.0 on at 630 ms, six releases. Step
    0 decides at its first look (6 rounds, not 30); each later step plans from the previous
    one for the margin the ends imply (half of 84%) and needs no more than the fewest rounds."""
    from longlook.analyses.releases.bisect import bisect

    releases = ["v0.61.0", "v0.62.0", "v0.63.0", "v0.64.0", "v0.64.1", "v0.65.0"]
    levels = {r: 630.0 if r >= "v0.64.0" else 3925.0 for r in releases}
    measure, calls = _world(levels, cv=0.08, seed=47)
    res = bisect("quic-go", releases, measure, alpha=0.01)
    assert res.outcome == "found" and res.first_changed == "v0.64.0", res.summary()
    assert [s.rounds for s in res.steps] == [6, 6, 6] and [c[1] for c in calls[1:]] == ["v0.63.0", "v0.64.0"]
    assert [s.verdict for s in res.steps] == ["different", "like GOOD", "like BAD"]
    assert "first changed in v0.64.0 (after v0.63.0): -8" in res.summary()


def test_two_changes_are_both_named_with_the_share_of_the_change_each_carries():
    from longlook.analyses.releases.bisect import bisect

    releases = [f"v0.{50 + i}.0" for i in range(12)]
    levels = {r: 1000.0 * (1 + 0.4 * (i >= 3) + 0.6 * (i >= 8)) for i, r in enumerate(releases)}  # +40%, then +60%
    measure, _ = _world(levels, cv=0.04, seed=5)
    res = bisect("quic-go", releases, measure, alpha=0.05)
    assert res.outcome == "found", res.summary()
    assert [c.after for c in res.changes] == ["v0.53.0", "v0.58.0"]
    assert any(s.verdict == "in between" for s in res.steps)
    first, second = res.changes
    assert first.share_low < 0.4 < first.share_high and second.share_low < 0.6 < second.share_high
    assert abs(first.share + second.share - 1) < 1e-9
    assert "changed in 2 releases" in res.summary() and "carries" in res.summary()


def test_every_step_states_the_metric_s_own_change_inside_its_interval_in_lines_json_and_junit():
    """A release 19% slower than GOOD: its change reads +19% and its interval, in the same
    convention, holds it (the old step kept the comparison's interval in the better
    direction: "+19.1% (interval -20.9..-17.4%)"), in the step lines, JSON and JUnit."""
    import json
    import re

    from longlook.analyses.releases.bisect import bisect
    from longlook.commands.bisect import junit, result_json, step_line

    releases = ["v0.60.0", "v0.61.0", "v0.62.0"]
    measure, _ = _world({"v0.60.0": 1000.0, "v0.61.0": 1190.0, "v0.62.0": 1190.0}, cv=0.03, seed=8)
    res = bisect("quic-go", releases, measure)
    assert res.first_changed == "v0.61.0"
    doc = json.loads(json.dumps(result_json(res)))
    for s, js in zip(res.steps, doc["steps"]):
        assert s.interval[0] <= s.change_pct <= s.interval[1]
        assert js["interval"][0] <= js["change_pct"] <= js["interval"][1]
        if s.index:
            assert s.interval_vs_high[0] <= s.change_vs_high_pct <= s.interval_vs_high[1]
    step0 = res.steps[0]
    assert 13 < step0.change_pct < 25 and step0.interval[0] > 0  # slower: + in the metric's own sign
    change, lo, hi = (
        float(x)
        for x in re.search(
            r": ([+-][\d.]+)% \([\d.]+% interval ([+-][\d.]+)\.\.([+-][\d.]+)%\)", step_line(step0)
        ).groups()
    )
    assert lo <= change <= hi and change > 0
    xml = junit(res)
    assert f"{step0.change_pct:+.1f}%" in xml and f"interval {step0.interval[0]:+.1f}..{step0.interval[1]:+.1f}%" in xml
    c = res.changes[0]
    assert c.interval[0] <= c.change_pct <= c.interval[1] and c.change_pct > 0


def test_the_path_page_shows_every_step_and_the_states_diff_at_the_change():
    import pandas as pd

    from longlook.analyses.releases.bisect import bisect
    from longlook.analyses.states.diff import StateDiff
    from longlook.report.sections.bisect import bisect_page

    releases = [f"v0.{60 + i}.0" for i in range(6)]
    measure, _ = _world(_levels(releases, 4, factor=0.3), seed=9)
    res = bisect("quic-go", releases, measure)
    rows = pd.DataFrame([{"item": "Recovery->SlowStart", "status": "appears"}, {"item": "x", "status": "same"}])
    html = bisect_page(res, {0: [StateDiff("QUIC", "v0.63.0", "v0.64.0", 6, 6, 0.01, rows)]}, "plt_ms (ms)")
    assert html.count("<tr><td class=num>") == len(res.steps) and 'id="bisect-path"' in html
    assert "v0.63.0 → v0.64.0" in html and "Recovery-&gt;SlowStart appears (QUIC)" in html


def test_the_build_cache_drops_the_least_recently_used_release_first_and_never_a_kept_one(tmp_path):
    import os
    import time

    from longlook.stacks.builds.cache import STAMP, evict, touch

    for i, name in enumerate(["quic-go-v0.52.0", "quic-go-v0.54.0", "quic-go-v0.65.0", "quiche-0.30.0"]):
        d = tmp_path / name
        d.mkdir()
        (d / "bin").write_bytes(b"x" * 1000)
        touch(d)
        os.utime(d / STAMP, (time.time() - 100 + i, time.time() - 100 + i))  # used in this order
    touch(tmp_path / "quic-go-v0.52.0")  # used again just now: the youngest
    removed = evict(tmp_path, keep={tmp_path / "quic-go-v0.65.0"}, limit=2500)
    assert [d.name for d in removed] == ["quic-go-v0.54.0", "quiche-0.30.0"]
    assert sorted(d.name for d in tmp_path.iterdir()) == ["quic-go-v0.52.0", "quic-go-v0.65.0"]
    assert evict(tmp_path, keep=set(), limit=10**9) == []  # under the limit: nothing goes


def test_a_bisect_step_is_read_back_from_its_store_with_every_release_s_completion(tmp_path, monkeypatch):
    """The command's step (commands/bisect.py step_runs) on a real store: three releases, the
    middle and the last 20% slower than the first, one failed run of the middle one; then
    judged like the search does (sides.decide)."""
    import numpy as np

    from longlook.analyses.releases.bisect import next_plan
    from longlook.analyses.releases.sides import LIKE_BAD, StepPlan, decide
    from longlook.commands.bisect import _StepRunner, step_runs
    from longlook.core.store import Store
    from longlook.kinds.pageload import Scenario, record_from_fetch
    from unit.core.test_store import fetch

    monkeypatch.setenv("LONGLOOK_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache" / "releases").mkdir(parents=True)
    (tmp_path / "cache" / "releases" / "quic-go.json").write_text("v0.60.0\nv0.61.0\nv0.62.0\n")
    sc = Scenario.from_toml(
        SWEEP.replace("v0.57.0..v0.65.0", "v0.60.0..v0.62.0")
        .replace("rounds = 2", "rounds = 8")
        .replace('[[arms]]\nlabel = "h2"\nprotocol = "h2"\n', ""),
        source="test",
    )
    releases = ["v0.60.0", "v0.61.0", "v0.62.0"]
    out = tmp_path / "step"
    rng = np.random.default_rng(5)
    with Store.open(out) as store:
        store.start_experiment(sc)
        cell = sc.cells()[0]
        for i, arm in enumerate(sc.arms):
            for r in range(8):
                plt = (1000.0 if i == 0 else 1200.0) * rng.normal(1, 0.02)
                failed = i == 1 and r == 3
                store.record_run(
                    record_from_fetch(
                        fetch("h3", plt=plt, ok=not failed),
                        run_id=f"{arm.label}-{r}",
                        cell_id=cell.id,
                        round=r,
                        position=i,
                        arm=arm.label,
                    )
                )
    runner = _StepRunner("quic-go", tmp_path / "one.toml", tmp_path, None, 8, False)
    arms = {v: f"qg-{v}" for v in releases}
    runs = step_runs(Store.open(out, read_only=True).runs_frame(), sc, arms, runner._metric(sc))
    assert runs.rounds == 8 and [len(runs.sample(r)) for r in releases] == [8, 7, 8]
    assert str(runs.completion("v0.61.0")) == "7/8" and np.isnan(runs.values["v0.61.0"][3])
    base = StepPlan(0.2, 4, 8)  # a large alpha: one missing run at n = 8 still lets a rank test decide
    plan = next_plan(base, runs, "v0.60.0", "v0.62.0")  # as if an earlier step had measured the ends so
    d = decide(runs, plan)
    assert d.done and d.look.verdict == LIKE_BAD, d.look


@pytest.mark.skipif(not __import__("shutil").which("go"), reason="needs Go")
def test_a_release_that_does_not_build_is_one_error_naming_it_and_the_failed_step(tmp_path, monkeypatch):
    """A real Go build that fails (the adapter's main.go broken in a copy): the error names
    the release and the step, and nothing half-built counts as installed."""
    import shutil

    from longlook.stacks.adapters.quicgo import QuicGo

    folder = tmp_path / "adapter"
    folder.mkdir()
    for f in ("go.mod", "go.sum"):
        shutil.copy(QuicGo().folder / f, folder / f)
    (folder / "main.go").write_text(
        'package main\n\nimport "github.com/quic-go/quic-go"\n\nfunc main() { quic.NoSuchFunction() }\n'
    )
    monkeypatch.setenv("LONGLOOK_STACKS_DIR", str(tmp_path / "stacks"))
    monkeypatch.setattr(QuicGo, "folder", property(lambda self: folder))
    stack = QuicGo("v0.65.0")
    with pytest.raises(LonglookError, match=r"building quic-go@v0\.65\.0 failed at `go build") as e:
        stack.install()
    assert "undefined" in e.value.message and "retry" in e.value.hint
    assert not stack.installed()


def test_the_command_runs_each_step_until_its_look_decides_resumes_without_rerunning_and_writes_the_path(
    tmp_path, monkeypatch, capsys
):
    """`longlook bisect` end to end with the testbed replaced: the executor's per-round loop
    (Runner.run_cells) records runs drawn from known levels and asks the step's stopping rule
    after every round, as the real loop does. Every step stops at its first look (a 5x
    change), the path is written beside the steps, and a second run of the same command
    resumes: it reads the stored steps and measures nothing again."""
    import json

    import numpy as np

    from longlook.commands.bisect import bisect_command
    from longlook.core.execute import Runner
    from longlook.core.registry import get_kind
    from longlook.kinds.pageload import record_from_fetch
    from unit.core.test_store import fetch

    listing = "\n".join(f"v0.{60 + i}.0" for i in range(6))
    monkeypatch.setenv("LONGLOOK_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache" / "releases").mkdir(parents=True)
    (tmp_path / "cache" / "releases" / "quic-go.json").write_text(listing)
    scenario = tmp_path / "cell.toml"
    scenario.write_text(
        SWEEP.replace('versions = "quic-go@v0.57.0..v0.65.0"\n', "").replace(
            '[[arms]]\nlabel = "h2"\nprotocol = "h2"\n', ""
        )
    )
    rng = np.random.default_rng(30)
    ran = []

    def run_cells(self, store, cells):  # the per-round loop of Runner._run_cell, minus the testbed
        for cell in cells:
            done = (
                {(r, a) for r, a in zip(store.runs_frame()["round"], store.runs_frame()["arm"])}
                if len(store.runs_frame())
                else set()
            )
            for r in range(self.scenario.rounds):
                for i, arm in enumerate(self.scenario.arm_list()):
                    if (r, arm.label) in done:
                        continue
                    version = arm.label.rpartition("-")[2]
                    plt = (4000.0 if version < "v0.64.0" else 800.0) * rng.lognormal(0, 0.08)
                    store.record_run(
                        record_from_fetch(
                            fetch("h3", plt=plt),
                            run_id=f"{arm.label}-{r}-{len(ran)}",
                            cell_id=cell.id,
                            round=r,
                            position=i,
                            arm=arm.label,
                        )
                    )
                    ran.append((self.out_dir.name, r, arm.label))
                if not self._needs_more_rounds(store, cell):
                    break

    monkeypatch.setattr(Runner, "run_cells", run_cells)
    monkeypatch.setattr(Runner, "_versions", lambda self: {})
    monkeypatch.setattr(type(get_kind("pageload")), "prepare", lambda self, sc: {})
    out = tmp_path / "bisect"
    args = dict(
        stack="quic-go",
        good="v0.60.0",
        bad="v0.65.0",
        scenario=scenario,
        metric=None,
        threshold=None,
        alpha=None,
        min_rounds=6,
        max_rounds=30,
        out=out,
        json_out=None,
        junit_out=tmp_path / "j.xml",
        link_check=False,
    )
    bisect_command(**args)
    printed = capsys.readouterr().out
    assert "the metric first changed in v0.64.0 (after v0.63.0)" in printed
    doc = json.loads((out / "bisect.json").read_text())
    assert doc["outcome"] == "found" and doc["first_changed"] == "v0.64.0"
    assert [s["rounds"] for s in doc["steps"]] == [6] * len(doc["steps"])
    runs_per_step = {d: sum(1 for x in ran if x[0] == d) for d in {x[0] for x in ran}}
    assert runs_per_step["step-0-ends"] == 12 and all(v == 18 for k, v in runs_per_step.items() if k != "step-0-ends")
    assert (out / "bisect.html").read_text().count("<tr><td class=num>") == len(doc["steps"])
    assert 'failures="' in (tmp_path / "j.xml").read_text()
    before = len(ran)
    bisect_command(**args)  # resumed: every step is read back, none measured again
    assert len(ran) == before and "first changed in v0.64.0" in capsys.readouterr().out
