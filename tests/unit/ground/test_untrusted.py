"""Names from outside never become paths or SQL: a release string that climbs out of the
stacks cache, and a store whose table names are SQL, each tried against a sandbox, and
nothing outside it changes."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

import longlook
from longlook.core.export import export
from longlook.core.store import DB_FILE
from longlook.errors import LonglookError
from longlook.untrusted import path_inside, release_token, sql_identifier

from unit.core.test_export import _make

LONGLOOK = [sys.executable, "-m", "longlook.cli"]


def _snapshot(root: Path) -> dict[str, str]:
    """Every file under root with its digest, and every folder."""
    out = {}
    for p in sorted(root.rglob("*")):
        out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
    return out


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    """A stacks cache at sandbox/a/b/c/stacks and a victim beside it holding files an attack
    would overwrite or remove."""
    stacks = tmp_path / "a" / "b" / "c" / "stacks"
    stacks.mkdir(parents=True)
    victim = tmp_path / "victim"
    victim.mkdir()
    for name in ("main.go", "go.mod", "go.sum", "keep.txt"):
        (victim / name).write_text(f"the victim's {name}\n")
    monkeypatch.setenv("LONGLOOK_STACKS_DIR", str(stacks))
    return tmp_path, stacks, victim


@pytest.mark.parametrize(
    "spec",
    [
        "quiche@../../../victim",
        "quic-go@../../../victim",
        "quic-go@../../../../victim",
        "tquic@/tmp/victim",
        "ours@../victim",
        "quic-go@-v0.65.0",
        "quic-go@v0.65.0/../../x",
        "kwik@..",
        "quiche@.",
    ],
)
def test_a_release_that_names_a_path_is_refused_and_nothing_outside_changes(sandbox, spec):
    root, stacks, victim = sandbox
    before = _snapshot(root)
    env = {**os.environ, "LONGLOOK_STACKS_DIR": str(stacks)}
    for _ in range(2):  # the second install of a cached build is the one that removed a folder
        r = subprocess.run([*LONGLOOK, "stacks", "install", spec], env=env, capture_output=True, text=True, timeout=120)
        assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr
        assert "is not a release name" in r.stderr
    assert _snapshot(root) == before


def test_a_scenario_naming_a_path_as_a_release_does_not_validate(tmp_path, sandbox):
    root, stacks, _ = sandbox
    scenario = tmp_path / "s.toml"
    scenario.write_text(
        'name = "x"\nrounds = 2\nworkloads = ["1x5k"]\nserver = "quiche@../../../victim"\n'
        "[[links]]\nrate_mbit = 10\nrtt_ms = 20\n"
    )
    before = _snapshot(root)
    env = {**os.environ, "LONGLOOK_STACKS_DIR": str(stacks)}
    r = subprocess.run(
        [*LONGLOOK, "scenario", "validate", str(scenario)], env=env, capture_output=True, text=True, timeout=120
    )
    assert r.returncode != 0 and "Traceback" not in r.stderr, r.stderr
    assert "not a release name" in r.stdout + r.stderr
    assert _snapshot(root) == before


@pytest.mark.parametrize(
    "good",
    ["v0.65.0", "0.11.15", "1.2.0-rc.1", "0.0.0-20240101120000-abcdef012345", "1.91.0", "workspace", "2.0.0+build.7"],
)
def test_release_names_of_the_registries_pass(good):
    assert release_token(good, "v") == good


@pytest.mark.parametrize(
    "bad", ["", "..", "../x", "a/b", "-rf", "v1..2", ".hidden", "a b", "a\x00", "x" * 65, "v1.0;rm", "$(id)", None, 3]
)
def test_anything_else_is_one_clear_error(bad):
    with pytest.raises(LonglookError, match="not a release name"):
        release_token(bad, "stack x's version")


def test_path_inside_refuses_every_way_out(tmp_path):
    (tmp_path / "root").mkdir()
    os.symlink(tmp_path, tmp_path / "root" / "up")
    assert path_inside(tmp_path / "root", "a-1") == (tmp_path / "root" / "a-1").resolve()
    for parts in (("..",), ("../x",), ("/etc/passwd",), ("up", "victim"), ("a", "..", "..", "x")):
        with pytest.raises(LonglookError, match="would leave"):
            path_inside(tmp_path / "root", *parts)


def test_sql_identifier_quotes():
    assert sql_identifier('a"b') == '"a""b"'
    with pytest.raises(LonglookError):
        sql_identifier("")


HOSTILE = [
    "experiments) TO '{target}' (FORMAT CSV); COPY (SELECT 1",
    "x\" TO '{target}' (FORMAT CSV); --",
    "../../{name}",
]


@pytest.mark.parametrize("hostile", HOSTILE)
def test_a_shared_store_never_writes_outside_out(tmp_path, hostile):
    """A store with a table whose name is SQL (or a path) is opened and exported: nothing is
    written outside --out, the foreign table is not read, and the experiment's own tables
    still are."""
    exp, out, outside = tmp_path / "exp", tmp_path / "out", tmp_path / "outside"
    outside.mkdir()
    _make(exp)
    target = outside / "pwned.csv"
    name = hostile.format(target=target, name="pwned")
    con = duckdb.connect(str(exp / DB_FILE))
    con.execute(f"CREATE TABLE {sql_identifier(name)} (run_id VARCHAR)")
    con.execute(f"INSERT INTO {sql_identifier(name)} VALUES ('x')")
    con.close()
    written = export(exp, out, "csv")
    tables = longlook.open(exp).tables
    assert not target.exists() and not list(outside.iterdir())
    assert not (tmp_path / "pwned.csv").exists()
    assert name not in tables
    for path, _ in written:
        assert out.resolve() in path.resolve().parents
    assert {p.name for p, _ in written} >= {"runs.csv", "metrics.csv", "experiments.csv", "objects.csv"}
    shutil.rmtree(out)
