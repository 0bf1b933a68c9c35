"""`compare` says what it compares: an experiment against itself (one directory twice, or
two copies of one experiment) is refused, a scenario that differs outside its cells (name,
timeout, [fidelity], [testbed], [capture]) is stated beside the verdicts, and a --history
--pvalue no permutation budget can reach is answered at once instead of searched for hours."""

import json
import shutil
import time

from unit.analyses.test_compare import SCENARIO, cli, make_experiment
from unit.analyses.test_compare_history import ONE_CELL

from longlook.analyses.compare.common_fields import common_field_differences
from longlook.kinds.pageload import Scenario


def test_base_equal_to_cand_is_refused(tmp_path):
    make_experiment(tmp_path / "a", seed=1)
    code, out = cli("compare", tmp_path / "a", tmp_path / "a")
    assert code == 2 and "are the same directory" in out
    code, out = cli("compare", tmp_path / "a", tmp_path / "." / "a")  # another spelling
    assert code == 2 and "are the same directory" in out
    shutil.copytree(tmp_path / "a", tmp_path / "copy")
    code, out = cli("compare", tmp_path / "a", tmp_path / "copy")
    assert code == 2 and "are the same experiment" in out


def test_a_directory_repeated_in_history_is_refused(tmp_path):
    dirs = []
    for i in range(8):
        make_experiment(tmp_path / f"e{i}", seed=i, toml=ONE_CELL)
        dirs.append(tmp_path / f"e{i}")
    code, out = cli("compare", "--history", *dirs, dirs[3])
    assert code == 2 and "e3" in out and "are the same directory" in out


def test_common_fields_that_differ_are_stated(tmp_path):
    make_experiment(tmp_path / "base", seed=1)
    other = SCENARIO.replace('name = "', 'timeout_s = 5\nname = "', 1) + "\n[fidelity]\nmax_stall_ms = 20.0\n"
    make_experiment(tmp_path / "cand", seed=2, toml=other)
    code, out = cli("compare", tmp_path / "base", tmp_path / "cand", "--json", tmp_path / "c.json")
    text = " ".join(out.split())
    assert code == 0, out
    assert "the scenarios differ outside their cells" in text
    assert "timeout_s 60.0 -> 5.0" in text and "fidelity.max_stall_ms 5.0 -> 20.0" in text
    parts = {d["part"] for d in json.loads((tmp_path / "c.json").read_text())["scenario_differs"]}
    assert parts == {"timeout_s", "fidelity.max_stall_ms"}


def test_common_fields_leave_cells_and_prose_out():
    base = Scenario.from_toml(SCENARIO.format(macw=430))
    assert common_field_differences(base, base) == []
    other = Scenario.from_toml(
        SCENARIO.format(macw=107).replace('name = "', 'description = "other words"\nname = "', 1)
    )
    assert common_field_differences(base, other) == []  # macw is a cell parameter; prose is prose
    renamed = Scenario.from_toml(SCENARIO.format(macw=430).replace('name = "', 'name = "x', 1))
    assert [d["part"] for d in common_field_differences(base, renamed)] == ["name"]


def test_history_pvalue_out_of_reach_answers_at_once(tmp_path):
    dirs = []
    for i in range(8):
        make_experiment(tmp_path / f"e{i}", seed=i, toml=ONE_CELL)
        dirs.append(tmp_path / f"e{i}")
    started = time.monotonic()
    code, out = cli("compare", "--history", *dirs, "--pvalue", "1e-6")
    assert code == 0 and "no change can be significant" in " ".join(out.split())
    assert time.monotonic() - started < 60  # was 1.6e8 permutations per series


def test_history_pvalue_reachable_only_by_too_many_permutations_is_refused(tmp_path):
    dirs = []
    for i in range(20):  # 2/C(20,10) = 1.1e-5: a change could be significant at 1e-4 / 2
        make_experiment(tmp_path / f"e{i}", seed=i, toml=ONE_CELL.replace("rounds = 6", "rounds = 2"))
        dirs.append(tmp_path / f"e{i}")
    code, out = cli("compare", "--history", *dirs, "--pvalue", "1e-4")
    assert code == 2 and "permutations per series" in out and "--pvalue 0.0004 or larger" in out
