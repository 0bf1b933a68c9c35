"""Bad input gets one clear error naming what is wrong and how to fix it, never a
traceback: scenarios, link profiles, output directories. The endpoint's URL:
tests/testbed/stacks/test_bad_input_testbed.py."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from longlook.cli import app
from longlook.errors import LonglookError

GOOD = textwrap.dedent("""
    name = "bad-input"
    seed = 1
    rounds = 2
    protocols = ["h3", "h2"]
    timeout_s = 10
    workloads = ["1x10k"]
    [[links]]
    rate_mbit = 10
    rtt_ms = 20
    buffer_bytes = 30000
""")

# (what is wrong, edit of the good scenario, words the error must contain)
SCENARIO_CASES = [
    ("rate is a boolean", ("rate_mbit = 10", "rate_mbit = true"), "links[0].rate_mbit"),
    ("rate of 1e12 Mbit/s", ("rate_mbit = 10", "rate_mbit = 1e12"), "links[0].rate_mbit"),
    ("rate of 1e-9 Mbit/s", ("rate_mbit = 10", "rate_mbit = 1e-9"), "links[0].rate_mbit"),
    ("empty trace", ("rate_mbit = 10", 'trace = ""'), "links[0].trace"),
    ("timeout of 1e300 s", ("timeout_s = 10", "timeout_s = 1e300"), "timeout_s"),
    ("jitter of 1e12 ms", ("buffer_bytes = 30000", "buffer_bytes = 30000\njitter_ms = 1e12"), "jitter_ms"),
    ("delay of days", ("rtt_ms = 20", "delay_ms = 3e8"), "delay_ms"),
    ("buffer under one packet", ("buffer_bytes = 30000", "buffer_bytes = 10"), "buffer_bytes"),
    ("seed beyond 64 bits", ("seed = 1", "seed = 123456789012345678901234567890"), "seed"),
    ("a billion rounds", ("rounds = 2", "rounds = 1000000000"), "rounds"),
    ("negative retries", ("rounds = 2", "rounds = 2\nretries = -1"), "retries"),
    ("an object the server will not make", ('workloads = ["1x10k"]', 'workloads = ["1x500g"]'), "object_size"),
    ("more objects than the server makes", ('workloads = ["1x10k"]', 'workloads = ["100000x1k"]'), "object_count"),
]


def _invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def _one_clear_error(result, *words: str) -> str:
    assert result.exit_code != 0
    e = result.exception
    assert isinstance(e, LonglookError), f"{type(e).__name__}: {e}"
    for w in words:
        assert w in str(e), str(e)
    return str(e)


@pytest.mark.parametrize("case", SCENARIO_CASES, ids=[c[0] for c in SCENARIO_CASES])
def test_a_malformed_scenario_names_the_field(tmp_path: Path, case):
    _, (old, new), field = case
    path = tmp_path / "s.toml"
    assert old in GOOD
    path.write_text(GOOD.replace(old, new))
    _one_clear_error(_invoke("run", str(path), "--out", str(tmp_path / "exp")), str(path), field)
    assert not (tmp_path / "exp").exists()


def test_scenario_and_link_files_that_are_not_files_or_not_text(tmp_path: Path):
    (tmp_path / "dir.toml").mkdir()
    (tmp_path / "latin1.toml").write_bytes(b'name = "\xff\xfe"\n')
    out = str(tmp_path / "exp")
    _one_clear_error(_invoke("run", str(tmp_path / "dir.toml"), "--out", out), "is a directory")
    _one_clear_error(_invoke("run", str(tmp_path / "latin1.toml"), "--out", out), "not UTF-8")
    _one_clear_error(_invoke("link", "check", str(tmp_path / "dir.toml")), "is a directory")
    _one_clear_error(_invoke("link", "check", str(tmp_path / "latin1.toml")), "not UTF-8")


def test_output_directories_that_cannot_hold_an_experiment(tmp_path: Path):
    scenario = tmp_path / "s.toml"
    scenario.write_text(GOOD)
    a_file = tmp_path / "afile"
    a_file.write_text("")
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    for out, words in [
        (a_file, "is a file"),
        ("/proc/longlook-test", "under /proc"),
        ("/sys/longlook-test", "under /sys"),
        (other, "no experiment"),
    ]:
        _one_clear_error(_invoke("run", str(scenario), "--out", str(out)), "--out", words)
    assert (other / "notes.txt").read_text() == "mine" and len(list(other.iterdir())) == 1


def test_the_cli_prints_one_error_and_a_hint_never_a_traceback(tmp_path: Path):
    path = tmp_path / "s.toml"
    path.write_text(GOOD.replace("rate_mbit = 10", "rate_mbit = true"))
    p = subprocess.run(
        [sys.executable, "-m", "longlook.cli", "run", str(path), "--out", str(tmp_path / "x")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert lines[0].startswith("longlook: error: ") and "rate_mbit" in lines[0], p.stderr
    assert len(lines) <= 2 and "Traceback" not in p.stderr


def test_matrix_refuses_an_unknown_executor_before_writing_anything(tmp_path: Path):
    out = str(tmp_path / "m")
    _one_clear_error(_invoke("matrix", "-o", out, "--stack", "ours", "--executor", "dask"), "unknown executor")
    _one_clear_error(_invoke("matrix", "-o", out, "--stack", "ours", "--address", "h:1"), "--address is for")
    assert not (tmp_path / "m").exists()


def test_matrix_refuses_to_skip_the_interop_grid_with_nothing_else_to_run(tmp_path: Path):
    out = str(tmp_path / "m")
    _one_clear_error(_invoke("matrix", "-o", out, "--stack", "ours", "--no-interop"), "nothing to run")
    assert not (tmp_path / "m").exists()


def test_reproduce_refuses_an_unknown_executor_and_a_bad_archive_before_running(tmp_path: Path):
    out = str(tmp_path / "r")
    _one_clear_error(_invoke("reproduce", "--budget", "paper", "-o", out, "--executor", "dask"), "unknown executor")
    _one_clear_error(
        _invoke("reproduce", "--budget", "paper", "-o", out, "--address", "h:1"), "--address is for --executor ray"
    )
    (tmp_path / "file").write_text("x")
    _one_clear_error(
        _invoke("reproduce", "--budget", "paper", "-o", out, "--archive", str(tmp_path / "file"), "--no-run"),
        "--archive",
        "is a file",
    )
    assert not (tmp_path / "r").exists()  # nothing was written
