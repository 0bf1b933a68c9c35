"""`longlook compare --history`: E-Divisive finds an injected step in a cell's series over
experiments, and nothing in a flat one; the figure marks it."""

import json
import random

import numpy as np
from test_compare import cli, make_experiment

from longlook.analyses.compare.history import e_divisive_change_points, history

ONE_CELL = '''
name = "history-test"
rounds = 6
workloads = ["1x1m"]
[[links]]
rate_mbit = 10
rtt_ms = 36
[options]
max_cwnd_packets = {macw}
'''


def test_e_divisive_finds_a_step_and_not_a_flat_series():
    rng = np.random.default_rng(4)
    flat = 1000 * rng.normal(1, 0.01, 16)
    step = flat.copy()
    step[9:] *= 1.15
    assert e_divisive_change_points(step) == [9]
    assert e_divisive_change_points(flat) == []
    assert e_divisive_change_points(step) == e_divisive_change_points(step)  # seeded
    with_gap = step.copy()
    with_gap[3] = np.nan  # an experiment without counted runs in this cell
    assert e_divisive_change_points(with_gap) == [9]


def test_history_over_experiments_finds_the_injected_step(tmp_path):
    dirs = []
    for i in range(8):
        d = tmp_path / f"exp{i}"
        # from the 6th experiment on, QUIC is 20% slower; TCP never changes
        make_experiment(d, seed=10 + i, toml=ONE_CELL, h3_factor=1.2 if i >= 5 else 1.0)
        dirs.append(d)
    shuffled = dirs[:]
    random.Random(1).shuffle(shuffled)  # the command orders them by start time
    h = history(shuffled)
    assert [s.directory for s in h.sides] == dirs
    by_arm = {s.arm: s for s in h.series}
    assert [cp.index for cp in by_arm["h3"].change_points] == [5]
    assert 15 < by_arm["h3"].change_points[0].change_pct < 25
    assert by_arm["h2"].change_points == []

    code, out = cli("compare", "--history", *shuffled, "--json", tmp_path / "h.json",
                    "--plot", tmp_path / "h.svg", "--html", tmp_path / "h.html")
    assert code == 0, out
    data = json.loads((tmp_path / "h.json").read_text())
    assert [len(s["means"]) for s in data["series"]] == [8, 8]
    svg = (tmp_path / "h.svg").read_text()
    assert "<svg" in svg and any(f"+{k}%" in svg for k in range(15, 26))  # the step, labelled
    html = (tmp_path / "h.html").read_text()
    assert 'id="change-points"' in html and "exp5" in html and "<svg" in html


def test_history_needs_three_experiments(tmp_path):
    make_experiment(tmp_path / "a", seed=1, toml=ONE_CELL)
    code, out = cli("compare", "--history", tmp_path / "a", tmp_path / "a")
    assert code == 2 and "at least 3" in out
