"""Null calibration of the release producers: a bisect step's verdicts (releases.bisect_step),
the search that names releases (releases.bisect), and a release sweep's change points
(releases.history).

The simulated world: releases whose runs are lognormal around their level (CV 5-15%, the
spread of page loads on one cell), a share of runs failing at random (0-10%, the same in
every release, so completion says nothing), 8-16 releases with one change at a known point
or two, effects from 10% to 6x either way. `measure` draws a step's rounds for each of its
releases (all of its budget at once: a look reads only the rounds before it, so this is the
experiment's round-by-round loop, sides.decide) and hands them to bisect(), which compares
them with core.stats (compare_samples with each release's completion) exactly as the
command does. A later step's plan comes from the previous step's rounds of its ends, as in
the search (bisect.next_plan).

Checked (each against its stated rate; alpha per claim 0.05 where a step is calibrated
alone, to see a rate at all):
- a step's ends equal -> "different"; the ends exactly 5% apart -> "the same";
- a release exactly like one end -> the wrong side ("like BAD" for a release like GOOD) and
  a false second change ("in between" / "beyond"), each <= alpha;
- a release exactly at the ends' midpoint -> "like GOOD" and "like BAD", each side <= alpha;
- an absolute margin (--threshold 10): a release exactly 10% from GOOD -> "like GOOD"
  (equivalence planned on the previous step's spread only: the fixed design's rate);
- the search, alpha 0.05: no change -> any release named; one change -> a wrong release
  named <= alpha; two changes -> a release named that did not change <= the path's stated
  bound (2 alpha per step * steps). Printed: how often each change is found, rounds per
  step, steps.
- a sweep's change points (E-Divisive, Bonferroni over the tested series), no change: a
  change point in any series <= pvalue.
"""

from __future__ import annotations

import math

import numpy as np

from longlook.analyses.releases.bisect import FOUND, bisect, max_steps, next_plan
from longlook.analyses.releases.history import ReleaseSeries, change_points, release_point
from longlook.analyses.releases.sides import (
    BETWEEN,
    BEYOND,
    DIFFERENT,
    LIKE_BAD,
    LIKE_GOOD,
    SAME,
    StepPlan,
    StepRuns,
    decide,
)

from .harness import calibrates, check_rate

STEP, SEARCH, HISTORY = "releases.bisect_step", "releases.bisect", "releases.history"
ALPHA = 0.05
MIN, MAX = 6, 30


def _lognormal(rng, level: float, cv: float, size: int) -> np.ndarray:
    s = math.sqrt(math.log1p(cv * cv))
    return level * np.exp(rng.normal(-s * s / 2, s, size))  # mean `level`, CV `cv`


class World:
    """Releases at known levels; `measure` is the command's, with runs drawn instead of run."""

    def __init__(self, levels: dict[str, float], cv: float, fail: float, rng):
        self.levels, self.cv, self.fail, self.rng = levels, cv, fail, rng
        self.rounds: list[int] = []

    def runs(self, releases: list[str], rounds: int) -> StepRuns:
        values, tried = {}, {}
        for r in releases:
            x = _lognormal(self.rng, self.levels[r], self.cv, rounds)
            x[self.rng.random(rounds) < self.fail] = np.nan
            values[r], tried[r] = x, np.ones(rounds, dtype=bool)
        return StepRuns(list(releases), values, tried)

    def measure(self, index: int, releases: list[str], plan: StepPlan):
        runs = self.runs(releases, plan.max_rounds)
        self.rounds.append(decide(runs, plan).look.rounds)
        return runs, f"step-{index}"


def _step(rng, levels: tuple[float, float, float], cv: float, fail: float, threshold=None):
    """One later step as the search runs it: the plan from a previous step's rounds of the
    ends (6, 12 or 30 of them), then the step on LOW, M, HIGH."""
    world = World(dict(zip(("lo", "m", "hi"), levels)), cv, fail, rng)
    base = StepPlan(ALPHA, MIN, MAX, threshold)
    prev = world.runs(["lo", "hi"], int(rng.choice([6, 12, 30])))
    plan = next_plan(base, prev, "lo", "hi")
    return decide(world.runs(["lo", "m", "hi"], MAX), plan).look


def _draw(rng):
    return rng.uniform(0.05, 0.15), rng.choice([0.0, 0.05, 0.1])


@calibrates(STEP)
def test_step0_says_different_for_equal_ends_and_the_same_for_ends_at_the_margin_at_most_alpha():
    rng = np.random.default_rng(470)
    trials = 300
    different = same = 0
    rounds = []
    for i in range(trials):
        cv, fail = _draw(rng)
        world = World({"g": 1000.0, "b": 1000.0, "b5": 1050.0 if i % 2 else 950.0}, cv, fail, rng)
        plan = StepPlan(ALPHA, MIN, MAX)
        look = decide(world.runs(["g", "b"], MAX), plan).look
        different += look.verdict == DIFFERENT
        rounds.append(look.rounds)
        same += decide(world.runs(["g", "b5"], MAX), plan).look.verdict == SAME
    print(f"step 0, equal ends: rounds mean {np.mean(rounds):.1f}")
    check_rate(STEP, "step 0: 'different' for equal ends", different, trials, ALPHA)
    check_rate(STEP, "step 0: 'the same' for ends 5% apart (the margin)", same, trials, ALPHA)


@calibrates(STEP)
def test_a_release_like_an_end_is_put_on_the_wrong_side_or_called_a_second_change_at_most_alpha():
    rng = np.random.default_rng(471)
    trials = 400
    wrong = second = 0
    rounds = []
    for _ in range(trials):
        cv, fail = _draw(rng)
        ratio = math.exp(rng.uniform(math.log(1.1), math.log(6.0)))
        high = 1000.0 * (ratio if rng.random() < 0.5 else 1 / ratio)
        look = _step(rng, (1000.0, 1000.0, high), cv, fail)  # M is exactly like LOW (GOOD)
        wrong += look.verdict == LIKE_BAD
        second += look.verdict in (BETWEEN, BEYOND)
        rounds.append(look.rounds)
    print(f"a release like GOOD: rounds mean {np.mean(rounds):.1f}, median {np.median(rounds):.0f}")
    check_rate(STEP, "'like BAD' for a release like GOOD (wrong side)", wrong, trials, ALPHA)
    check_rate(STEP, "a second change for a release like GOOD", second, trials, ALPHA)


@calibrates(STEP)
def test_a_release_at_the_midpoint_is_put_on_either_side_at_most_alpha_each():
    rng = np.random.default_rng(472)
    trials = 400
    good = bad = 0
    for _ in range(trials):
        cv, fail = _draw(rng)
        # ends close enough that M often differs from neither: where a side verdict is possible
        gap = math.exp(rng.uniform(math.log(0.03), math.log(1.0)))
        high = 1000.0 * (1 + gap)
        look = _step(rng, (1000.0, (1000.0 + high) / 2, high), cv, fail)
        good += look.verdict == LIKE_GOOD
        bad += look.verdict == LIKE_BAD
    check_rate(STEP, "'like GOOD' for a release at the midpoint", good, trials, ALPHA)
    check_rate(STEP, "'like BAD' for a release at the midpoint", bad, trials, ALPHA)


@calibrates(STEP)
def test_with_an_absolute_margin_a_release_at_the_margin_is_called_like_good_at_most_alpha():
    """Equivalence within +-10% of GOOD, planned on the previous step's spread alone: at a
    true difference equal to the margin, "like GOOD" at most alpha (a fixed design's rate)."""
    rng = np.random.default_rng(473)
    trials = 400
    like = 0
    rounds = []
    for i in range(trials):
        cv, fail = _draw(rng)
        m = 1000.0 * (1.1 if i % 2 else 0.9)  # exactly the margin above or below GOOD
        look = _step(rng, (1000.0, m, 1000.0 * rng.uniform(1.5, 3.0)), cv * 0.6, fail, threshold=10.0)
        like += look.verdict == LIKE_GOOD
        rounds.append(look.rounds)
    print(f"absolute margin 10%, release at the margin: rounds mean {np.mean(rounds):.1f}")
    check_rate(STEP, "'like GOOD' (within +-10%) for a release 10% from GOOD", like, trials, ALPHA)


def _one_change(rng):
    n = int(rng.integers(8, 17))
    at = int(rng.integers(1, n))
    ratio = math.exp(rng.uniform(math.log(1.1), math.log(6.0)))
    ratio = ratio if rng.random() < 0.5 else 1 / ratio
    releases = [f"v0.{i}.0" for i in range(n)]
    return releases, {r: 1000.0 * (ratio if i >= at else 1.0) for i, r in enumerate(releases)}, {releases[at]}, ratio


def _two_changes(rng):
    n = int(rng.integers(8, 17))
    a, b = sorted(rng.choice(np.arange(1, n), 2, replace=False))
    total = math.exp(rng.uniform(math.log(1.5), math.log(6.0)))
    share = rng.uniform(0.3, 0.7)
    releases = [f"v0.{i}.0" for i in range(n)]
    levels = {
        r: 1000.0 * (1 + (total - 1) * (share * (i >= a) + (1 - share) * (i >= b))) for i, r in enumerate(releases)
    }
    return releases, levels, {releases[a], releases[b]}, total


@calibrates(SEARCH)
def test_the_search_names_a_wrong_release_at_most_its_stated_rate():
    rng = np.random.default_rng(474)
    rates = {}
    for name, make, trials in (("one change", _one_change, 100), ("two changes", _two_changes, 60)):
        wrong = found_all = 0
        bounds, steps, per_step, found_by = [], [], [], {}
        for _ in range(trials):
            releases, levels, changed, ratio = make(rng)
            cv, fail = _draw(rng)
            world = World(levels, cv, fail, rng)
            res = bisect("stack", releases, world.measure, alpha=ALPHA, min_rounds=MIN, max_rounds=MAX)
            named = {c.after for c in res.changes}
            wrong += bool(named - changed)
            found_all += named == changed and res.outcome == FOUND
            size = "<1.5x" if max(ratio, 1 / ratio) < 1.5 else ">=1.5x"
            found_by.setdefault(f"{size}, {fail:.0%} failed", []).append(named == changed)
            bounds.append(res.error_bound())
            steps.append(len(res.steps))
            per_step += world.rounds
        rates[name] = found_all / trials
        print(
            f"{name}: every change found in {found_all}/{trials} "
            + "("
            + ", ".join(f"{k}: {np.mean(v):.0%} of {len(v)}" for k, v in sorted(found_by.items()))
            + ")"
            + f"; steps mean {np.mean(steps):.1f} (max {max(steps)}), rounds per step mean {np.mean(per_step):.1f} "
            f"median {np.median(per_step):.0f}; wrong release {wrong}/{trials}, stated <= {np.mean(bounds):.3f}"
        )
        check_rate(SEARCH, f"a release named that did not change ({name})", wrong, trials, float(np.mean(bounds)))
        if name == "one change":  # missing runs cost power: the worst-case check at a step's small alpha
            clean = [x for k, v in found_by.items() if k.startswith(">=") and not k.endswith("10% failed") for x in v]
            assert np.mean(clean) >= 0.9, found_by
    assert rates["two changes"] >= 0.5, rates


@calibrates(SEARCH)
def test_the_search_names_no_release_when_nothing_changed_at_most_alpha():
    rng = np.random.default_rng(475)
    trials = 150
    named = 0
    for _ in range(trials):
        n = int(rng.integers(8, 17))
        releases = [f"v0.{i}.0" for i in range(n)]
        cv, fail = _draw(rng)
        res = bisect("stack", releases, World({r: 1000.0 for r in releases}, cv, fail, rng).measure, alpha=ALPHA)
        named += bool(res.changes)
        assert len(res.steps) <= max_steps(n) + 2
    check_rate(SEARCH, "a release named when nothing changed", named, trials, ALPHA)


@calibrates(HISTORY)
def test_a_flat_sweep_shows_a_change_point_in_any_series_at_most_pvalue():
    """Two series per sweep (two cells), 8-16 releases, 3-10 rounds per release with failed
    runs: E-Divisive on the per-release means, each series at pvalue / (series tested)."""
    rng = np.random.default_rng(476)
    pvalue, trials = 0.2, 150
    false = 0
    for _ in range(trials):
        n, rounds = int(rng.integers(8, 17)), int(rng.integers(3, 11))
        cv, fail = _draw(rng)
        series = []
        for cell in ("a", "b"):
            pts = []
            for i in range(n):
                x = _lognormal(rng, 1000.0, cv, rounds)
                x = x[rng.random(rounds) >= fail]
                pts.append(release_point(x, f"v0.{i}.0", f"arm-{i}"))
            series.append(ReleaseSeries(cell, "stack", "plt_ms", pts))
        change_points(series, pvalue)
        false += any(s.change_points for s in series)
    check_rate(HISTORY, "a change point in a flat sweep (any of 2 series)", false, trials, pvalue)
