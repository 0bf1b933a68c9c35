"""The CLI reads well anywhere: help as whole paragraphs, and tables whole (no 80-column cut,
no "…") when stdout is a file or a pipe."""

import inspect
import re

import click
import pytest
import typer
from typer.testing import CliRunner

from longlook.cli import app, paragraphs
from repo_paths import ROOT

WIDE = {"COLUMNS": "3000", "TERMINAL_WIDTH": None}  # wide enough that rich never wraps a line


def _commands(group: click.Group, path: tuple[str, ...] = ()):
    for name, cmd in group.commands.items():
        yield (*path, name), cmd
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, (*path, name))


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _lines(output: str) -> list[str]:
    """Each output line without the panel borders, whitespace squashed."""
    return [_squash(line.strip("│ ")) for line in output.splitlines()]


def test_paragraphs_joins_hard_wrapped_lines():
    doc = """First line
    goes on here.

    Second paragraph
    with two lines:
    - a list item
    - another one"""
    assert paragraphs(doc) == (
        "First line goes on here.\n\nSecond paragraph with two lines:\n- a list item\n- another one"
    )


def test_every_help_shows_whole_paragraphs():
    root = typer.main.get_command(app)
    runner = CliRunner()
    listed = _lines(runner.invoke(app, ["--help"], env=WIDE).output)
    assert any("QUIC (HTTP/3) vs TCP (HTTP/2)" in line for line in listed)
    for path, cmd in _commands(root):
        doc = inspect.cleandoc(cmd.help or "")
        if not doc:
            continue
        paras = [_squash(p) for p in doc.split("\n\n") if not p.startswith("\b")]
        if len(path) == 1:  # the root listing shows each command's first paragraph on one line
            assert any(paras[0] in line for line in listed), f"longlook --help: {path[0]}: {paras[0]!r}"
        result = runner.invoke(app, [*path, "--help"], env=WIDE)
        assert result.exit_code == 0, result.output
        shown = _lines(result.output)
        for p in paras:
            assert any(p in line for line in shown), (
                f"longlook {' '.join(path)} --help breaks a paragraph: {p!r}\n{result.output}"
            )


def test_tables_stay_whole_in_a_pipe():
    result = CliRunner().invoke(
        app, ["scenario", "show", str(ROOT / "scenarios" / "quick.toml")], env={"COLUMNS": None, "TERMINAL_WIDTH": None}
    )
    assert result.exit_code == 0, result.output
    assert "…" not in result.output
    assert "link=10mbit-36ms,loss=0|wl=10x100k|cc=cubic|tcpcc=cubic|macw=default|0rtt=on" in result.output
    assert max(len(line) for line in result.output.splitlines()) > 80


def test_bench_tables_keep_every_number(capsys, monkeypatch):
    from longlook.bench.row import print_table

    monkeypatch.delenv("COLUMNS", raising=False)
    cols = [f"quantity number {i}" for i in range(12)]
    row = [1234.5678 + i for i in range(12)]
    print_table("a wide table of figures", cols, [row])
    out = capsys.readouterr().out
    assert "…" not in out
    for x in row:
        assert f"{x:.3f}" in out


@pytest.mark.parametrize("argv", [["scenario", "show", str(ROOT / "scenarios" / "quick.toml"), "--json"]])
def test_json_is_json(argv):
    import json

    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["cells"]
