"""Null calibration of `states diff` (analyses/states/diff.py): with the same process on both
sides, how often does any item of a protocol get a status other than "same"?

The data have the shapes per_run_counts gives on real runs: per protocol 10-20 items, most
of them rare transitions (taken in a share q of 0.02-0.3 of the runs, 1 + Poisson or
geometric times when taken), a few common ones (state entries, Recovery->CA) with skewed
counts (rounded lognormal), constant ones (Init->SlowStart, once a run), and loss counts
(declared losses in the hundreds, skewed; spurious losses rare and sometimes unknown);
3-30 counted runs a side, the sides' sizes drawn apart. Each trial runs `diff_counts`, the
part of `compare` after the logs are counted (compare itself infers a transition graph from
qlog files per run, too slow for thousands of diffs; tests/unit/analyses/test_states.py checks that
compare is per_run_counts + diff_counts).

Checked, each against alpha = 0.01 (the command's default):
- families, Holm over the items (as `states diff` runs): any non-"same" status;
- the issue's case, 15 rare items with q = 0.05 on 10 runs a side;
- one item named in advance, no Holm (as the StateShift claim calls it), over q from 0.02
  to 0.9 and 3-30 runs a side: "appears" or "more" (the claim would hold) and "vanishes" or
  "fewer" (it would fail) counted apart.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from longlook.analyses.states.diff import diff_counts

from .harness import calibrates, check_rate

ALPHA = 0.01
PRODUCER = "states.diff"


def _rare(rng, q: float, geometric: bool, size: float):
    def draw(n: int) -> np.ndarray:
        taken = rng.random(n) < q
        extra = rng.geometric(1 / (1 + size), n) - 1 if geometric else rng.poisson(size, n)
        return np.where(taken, 1 + extra, 0).astype(float)

    return draw


def _common(rng, mu: float, sigma: float):
    return lambda n: np.round(np.exp(rng.normal(mu, sigma, n)))


def _constant(n: int) -> np.ndarray:
    return np.ones(n)


def _spurious(rng, q: float, unknown: float):
    """Spurious losses: rare, and unknown (nan) in the runs whose link counters are missing."""
    rare = _rare(rng, q, True, 3.0)

    def draw(n: int) -> np.ndarray:
        x = rare(n)
        x[rng.random(n) < unknown] = np.nan
        return x

    return draw


def _protocol(rng) -> dict:
    """item -> a per-run count generator: one protocol's process, used for both sides."""
    items = {"Init->SlowStart": _constant, "enter:SlowStart": _constant}
    for i in range(rng.integers(2, 6)):
        items[f"enter:Common{i}"] = _common(rng, rng.uniform(0.3, 3.0), rng.uniform(0.3, 1.2))
    items["loss:declared_lost"] = _common(rng, rng.uniform(2.0, 5.5), rng.uniform(0.4, 1.5))
    items["loss:spurious"] = _spurious(rng, rng.uniform(0.02, 0.3), rng.uniform(0.0, 0.2))
    for i in range(int(rng.integers(10, 21)) - len(items)):
        items[f"Rare{i}->X"] = _rare(rng, rng.uniform(0.02, 0.3), bool(rng.random() < 0.5), rng.uniform(0.0, 2.0))
    return items


def _frame(items: dict, n: int) -> pd.DataFrame:
    return pd.DataFrame({name: draw(n) for name, draw in items.items()})


def _moved(rows: pd.DataFrame) -> pd.Series:
    return rows["status"] != "same"


@calibrates(PRODUCER)
def test_no_item_changes_between_identical_processes():
    rng = np.random.default_rng(20240540)
    trials, false = 400, 0
    for _ in range(trials):
        items = _protocol(rng)
        n_a, n_b = rng.integers(3, 31, size=2)
        rows = diff_counts(_frame(items, int(n_a)), _frame(items, int(n_b)), alpha=ALPHA)
        false += bool(_moved(rows).any())
    check_rate(
        PRODUCER,
        "any item appears/vanishes/more/fewer, identical processes, Holm over 10-20 items",
        false,
        trials,
        ALPHA,
    )


@calibrates(PRODUCER)
def test_rare_transitions_at_ten_runs_do_not_appear():
    """The issue's case: q = 0.05 on 10 runs a side, where the old rule said "appears" for any
    item seen on one side only."""
    rng = np.random.default_rng(405)
    trials, false = 400, 0
    for _ in range(trials):
        items = {f"Rare{i}->X": _rare(rng, 0.05, bool(i % 2), 1.0) for i in range(15)}
        rows = diff_counts(_frame(items, 10), _frame(items, 10), alpha=ALPHA)
        false += bool(_moved(rows).any())
    check_rate(PRODUCER, "any item not same, 15 items q = 0.05, 10 runs a side, Holm", false, trials, ALPHA)


@calibrates(PRODUCER)
def test_one_item_named_in_advance_each_side():
    """No Holm, one item (how a claim names it): each side of the verdict within alpha."""
    rng = np.random.default_rng(54)
    trials, up, down = 1600, 0, 0
    for t in range(trials):
        if t < trials // 4:  # the case
            q, n_a, n_b = 0.05, 10, 10
        else:
            q, (n_a, n_b) = float(rng.uniform(0.02, 0.9)), map(int, rng.integers(3, 31, size=2))
        item = {"SlowStart->ApplicationLimited": _rare(rng, q, bool(rng.random() < 0.5), rng.uniform(0.0, 3.0))}
        status = diff_counts(_frame(item, n_a), _frame(item, n_b), alpha=ALPHA, holm=False)["status"].iloc[0]
        up += status in ("appears", "more")
        down += status in ("vanishes", "fewer")
    check_rate(PRODUCER, "one item, no Holm: appears or more", up, trials, ALPHA)
    check_rate(PRODUCER, "one item, no Holm: vanishes or fewer", down, trials, ALPHA)
