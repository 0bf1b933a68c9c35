"""Releases from the registries (stacks/releases.py): listing, ranges, nearest releases in
errors. The registries are replaced by recorded answers (no network in unit tests)."""

from __future__ import annotations

import json

import pytest

from longlook.errors import LonglookError
from longlook.stacks.releases import REGISTRIES, check_release, expand, nearest, releases

GO = "v0.48.2\nv0.52.0\nv0.54.0\nv0.55.0-beta.1\nv0.55.0\nv0.57.1\nv0.65.0\n"
CRATES = "\n".join(json.dumps({"name": "quinn", "vers": v, "yanked": y})
                   for v, y in [("0.11.5", False), ("0.11.6", False), ("0.11.7", True), ("0.11.8", False),
                                ("0.11.10-rc.1", False)])
PYPI = json.dumps({"releases": {"1.7.0": [{"yanked": False}], "1.7.1": [], "1.7.2": [{"yanked": False}]}})


def fake(text):
    return lambda url: text


def test_each_registry_s_listing_is_read_oldest_first_without_pre_releases_yanked_or_empty_ones():
    assert releases("quic-go", fetch=fake(GO)) == ["v0.48.2", "v0.52.0", "v0.54.0", "v0.55.0", "v0.57.1", "v0.65.0"]
    assert "v0.55.0-beta.1" in releases("quic-go", pre=True, fetch=fake(GO))
    assert releases("quinn", fetch=fake(CRATES)) == ["0.11.5", "0.11.6", "0.11.8"]  # 0.11.7 yanked
    assert releases("aioquic", fetch=fake(PYPI)) == ["1.7.0", "1.7.2"]  # 1.7.1 has no files
    assert REGISTRIES["quinn"].url() == "https://index.crates.io/qu/in/quinn"
    assert REGISTRIES["quic-go"].url() == "https://proxy.golang.org/github.com/quic-go/quic-go/@v/list"


def test_a_range_expands_to_the_releases_inside_it_and_an_empty_or_reversed_one_is_an_error():
    assert expand("quic-go@v0.50.0..v0.57.1", fetch=fake(GO)) == [
        "quic-go@v0.52.0", "quic-go@v0.54.0", "quic-go@v0.55.0", "quic-go@v0.57.1"]
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
        Scenario.from_toml(SWEEP.replace('versions = "quic-go@v0.57.0..v0.65.0"', 'versions = "aioquic@1.7.0"'),
                           source="test")


def test_a_sweep_s_history_finds_the_release_where_the_metric_stepped(tmp_path, monkeypatch):
    """Nine releases, page loads 20% slower from the sixth on: E-Divisive puts the change
    point there, the limit says what it can detect, and the report draws it."""
    import numpy as np

    from longlook.analyses.releases import release_history
    from longlook.core.store import Store
    from longlook.kinds.pageload import Scenario, record_from_fetch
    from test_store import fetch

    listing = "\n".join(f"v0.{60 + i}.0" for i in range(9))
    monkeypatch.setenv("LONGLOOK_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache" / "releases").mkdir(parents=True)
    (tmp_path / "cache" / "releases" / "quic-go.json").write_text(listing)
    sc = Scenario.from_toml(SWEEP.replace("v0.57.0..v0.65.0", "v0.60.0..v0.68.0").replace("rounds = 2", "rounds = 6"),
                            source="test")
    out = tmp_path / "exp"
    rng = np.random.default_rng(3)
    with Store.open(out) as store:
        store.start_experiment(sc)
        cell = sc.cells()[0]
        for i, arm in enumerate(sc.arms):
            for r in range(6):
                plt = (500.0 if arm.label == "h2" else 400.0 if i < 5 else 480.0) * rng.normal(1, 0.02)
                store.record_run(record_from_fetch(fetch("h3" if arm.protocol == "h3" else "h2", plt=plt),
                                                   run_id=f"{arm.label}-{r}", cell_id=cell.id, round=r,
                                                   position=i, arm=arm.label))
    h = release_history(out)
    [s] = h.series
    assert [p.version for p in s.points] == [f"v0.{60 + i}.0" for i in range(9)]
    assert [cp.index for cp in s.change_points] == [5] and 15 < s.change_points[0].change_pct < 25
    assert "E-Divisive over 9 releases" in h.limit() and "95% intervals" in h.limit()
    from longlook.report.sections.releases import section
    with Store.open(out, read_only=True) as store:
        from longlook.core.analysis import analyse
        sec = section(store, analyse(store))
    assert sec is not None and "v0.64.0 → v0.65.0" in sec.html


def _comparison(a_mean: float, b_mean: float, n: int = 12, sd: float = 0.02):
    import numpy as np

    from longlook.core.stats import compare_samples
    rng = np.random.default_rng(int(a_mean * 1000) % 2**31)
    return compare_samples(rng.normal(a_mean, sd * a_mean, n), rng.normal(b_mean, sd * b_mean, n), alpha=0.01)


def _world(first_changed: int | None, releases: list[str], noisy: set[str] = frozenset()):
    """A fake measure(): releases from index `first_changed` on take 20% longer."""
    calls = []

    def measure(step, which):
        calls.append(which)
        mean = {r: 1.2 if first_changed is not None and releases.index(r) >= first_changed else 1.0
                for r in releases}
        out = {}
        for r in which:
            for end in (which[0], which[-1]):
                if r != end:
                    out[(r, end)] = _comparison(mean[r], mean[end], sd=0.5 if r in noisy else 0.02)
        return out, f"step-{step}"
    return measure, calls


def test_bisect_names_the_first_changed_release_within_log2_steps_and_says_when_nothing_differs():
    import math

    from longlook.analyses.releases.bisect import bisect
    releases = [f"v0.{50 + i}.0" for i in range(16)]
    for first in (1, 5, 11, 15):
        measure, calls = _world(first, releases)
        res = bisect("quic-go", releases, 5.0, measure)
        assert res.outcome == "found" and res.first_changed == releases[first], res.summary()
        assert len(res.steps) <= math.ceil(math.log2(14 + 1)) + 1 == res.max_steps()
        assert all(c[0] == "v0.50.0" and c[-1] == "v0.65.0" for c in calls)  # both ends every step
    measure, _ = _world(None, releases)
    res = bisect("quic-go", releases, 5.0, measure)
    assert res.outcome == "no difference" and len(res.steps) == 1 and "do not differ" in res.summary()


def test_bisect_stops_inconclusive_where_its_budget_cannot_decide_and_never_guesses():
    from longlook.analyses.releases.bisect import bisect
    releases = [f"v0.{50 + i}.0" for i in range(8)]
    measure, _ = _world(6, releases, noisy={"v0.53.0"})  # the first middle release is all noise
    res = bisect("quic-go", releases, 5.0, measure)
    assert res.outcome == "inconclusive" and res.first_changed is None
    assert res.steps[-1].release == "v0.53.0" and "inconclusive at v0.53.0" in res.summary()


def test_the_build_cache_drops_the_least_recently_used_release_first_and_never_a_kept_one(tmp_path):
    import os
    import time

    from longlook.stacks.cache import STAMP, evict, touch
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


def test_a_bisect_step_is_read_back_from_its_store_as_each_release_against_each_end(tmp_path, monkeypatch):
    """The command's step (commands/bisect.py compare_step) on a real store: three releases,
    the middle and the last 20% slower than the first."""
    import numpy as np

    from longlook.analyses.releases.bisect import DIFFERENT, SAME, judge
    from longlook.commands.bisect import compare_step
    from longlook.core.store import Store
    from longlook.kinds.pageload import Scenario, record_from_fetch
    from test_store import fetch

    monkeypatch.setenv("LONGLOOK_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache" / "releases").mkdir(parents=True)
    (tmp_path / "cache" / "releases" / "quic-go.json").write_text("v0.60.0\nv0.61.0\nv0.62.0\n")
    sc = Scenario.from_toml(SWEEP.replace("v0.57.0..v0.65.0", "v0.60.0..v0.62.0").replace("rounds = 2", "rounds = 8")
                            .replace('[[arms]]\nlabel = "h2"\nprotocol = "h2"\n', ""), source="test")
    releases = ["v0.60.0", "v0.61.0", "v0.62.0"]
    out = tmp_path / "step"
    rng = np.random.default_rng(5)
    with Store.open(out) as store:
        store.start_experiment(sc)
        cell = sc.cells()[0]
        for i, arm in enumerate(sc.arms):
            for r in range(8):
                plt = (1000.0 if i == 0 else 1200.0) * rng.normal(1, 0.02)
                store.record_run(record_from_fetch(fetch("h3", plt=plt), run_id=f"{arm.label}-{r}", cell_id=cell.id,
                                                   round=r, position=i, arm=arm.label))
    got = compare_step(out, sc, releases)
    assert set(got) == {("v0.61.0", "v0.60.0"), ("v0.61.0", "v0.62.0"), ("v0.60.0", "v0.62.0"),
                        ("v0.62.0", "v0.60.0")}
    mid = got[("v0.61.0", "v0.60.0")]
    assert (mid.a.n, mid.b.n) == (8, 8) and 15 < (mid.a.mean / mid.b.mean - 1) * 100 < 25
    assert judge(mid, 5.0) == DIFFERENT and judge(got[("v0.61.0", "v0.62.0")], 5.0) == SAME


def test_bisect_accepts_a_scenario_whose_one_arm_runs_the_stack_and_refuses_more_than_one_cell(tmp_path, monkeypatch):
    """The scenario alone has one arm (no comparison); bisect checks it with the two ends as arms."""
    from longlook.commands.bisect import _StepRunner

    monkeypatch.setenv("LONGLOOK_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache" / "releases").mkdir(parents=True)
    (tmp_path / "cache" / "releases" / "quic-go.json").write_text("v0.60.0\nv0.61.0\nv0.62.0\n")
    one = tmp_path / "one.toml"
    one.write_text(SWEEP.replace('versions = "quic-go@v0.57.0..v0.65.0"\n', "")
                   .replace('[[arms]]\nlabel = "h2"\nprotocol = "h2"\n', ""))
    _StepRunner("quic-go", one, tmp_path / "out", None, 10.0, 12, False).check("v0.60.0", "v0.62.0")
    two = tmp_path / "two.toml"
    two.write_text(one.read_text().replace("rtt_ms = 36", "rtt_ms = [36, 112]"))
    with pytest.raises(LonglookError, match="bisect measures one cell, it has 2"):
        _StepRunner("quic-go", two, tmp_path / "out", None, 10.0, 12, False).check("v0.60.0", "v0.62.0")


@pytest.mark.skipif(not __import__("shutil").which("go"), reason="needs Go")
def test_a_release_that_does_not_build_is_one_error_naming_it_and_the_failed_step(tmp_path, monkeypatch):
    """A real Go build that fails (the adapter's main.go broken in a copy): the error names
    the release and the step, and nothing half-built counts as installed."""
    import shutil

    from longlook.stacks.quicgo import QuicGo

    folder = tmp_path / "adapter"
    folder.mkdir()
    for f in ("go.mod", "go.sum"):
        shutil.copy(QuicGo().folder / f, folder / f)
    (folder / "main.go").write_text('package main\n\nimport "github.com/quic-go/quic-go"\n\n'
                                    "func main() { quic.NoSuchFunction() }\n")
    monkeypatch.setenv("LONGLOOK_STACKS_DIR", str(tmp_path / "stacks"))
    monkeypatch.setattr(QuicGo, "folder", property(lambda self: folder))
    stack = QuicGo("v0.65.0")
    with pytest.raises(LonglookError, match=r"building quic-go@v0\.65\.0 failed at `go build") as e:
        stack.install()
    assert "undefined" in e.value.message and "retry" in e.value.hint
    assert not stack.installed()
