"""The matrix's published page (analyses/matrix/publish.py): the generated part goes between the
page's markers and nowhere else, a page without them is refused before any run, and the
provenance counts what the stores hold."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from longlook.analyses.matrix.publish import BEGIN, END, demote, generated_part, place, publish
from longlook.core.record import RunRecord
from longlook.core.store import Store
from longlook.errors import LonglookError
from longlook.kinds.pageload import Scenario

SCENARIO = """
name = "quic-matrix"
rounds = 1
workloads = ["1x10k"]
[[arms]]
label = "ours_ours"
protocol = "h3"
[[arms]]
label = "ours_quic-go"
protocol = "h3"
[[links]]
rate_mbit = 20
rtt_ms = 20
"""
MATRIX = "# QUIC matrix: interoperability from the wire\n\nlegend\n\n### handshake\n\n| a |\n#5 is no heading\n"


def _experiment(folder: Path) -> None:
    sc = Scenario.from_toml(SCENARIO)
    (cell,) = sc.cells()
    t0 = datetime(2026, 11, 30, 5, 2)
    with Store.open(folder) as s:
        s.start_experiment(sc, {"commit": "abc123", "stacks": {"quic-go@v0.65.0": "quic-go@v0.65.0"}})
        runs = [("r1", "ours_ours", "ok", False), ("r2", "ours_quic-go", "failed", False)]
        runs += [("r3", "ours_quic-go", "ok", True)]
        for i, (run_id, arm, status, flagged) in enumerate(runs):
            s.record_run(
                RunRecord(
                    run_id=run_id,
                    cell_id=cell.id,
                    round=0,
                    position=i,
                    arm=arm,
                    status=status,
                    started_at=t0.replace(minute=2 + i),
                    audit={"flagged": flagged},
                    metrics={"plt_ms": 100.0},
                )
            )


def test_the_part_goes_between_the_markers_and_the_prose_stays(tmp_path: Path):
    page = tmp_path / "matrix.md"
    page.write_text(f"# Page\n\nprose before\n\n{BEGIN}\nold grids\n{END}\n\n## Later\n\nprose after\n")
    publish(page, "new grids\n")
    publish(page, "newer grids\n")  # a second run replaces, never appends
    text = page.read_text()
    assert "old grids" not in text and "new grids" not in text and text.count("newer grids") == 1
    assert text.startswith("# Page\n\nprose before\n\n" + BEGIN) and text.endswith("## Later\n\nprose after\n")


def test_a_page_without_its_markers_is_refused_with_where_to_put_them(tmp_path: Path):
    page = tmp_path / "matrix.md"
    page.write_text(f"# Page\n\n{END}\n{BEGIN}\n")  # both, in the wrong order
    with pytest.raises(LonglookError) as e:
        place(page)
    assert "marker" in str(e.value) and BEGIN in e.value.hint
    assert place(tmp_path / "new.md") is None  # no page yet: it is written whole
    publish(tmp_path / "new.md", "grids\n")
    assert BEGIN in (tmp_path / "new.md").read_text()


def test_headings_go_one_level_down_and_the_title_is_left_out():
    text = demote(MATRIX)
    assert text.splitlines()[0] == "legend" and "#### handshake" in text and "#5 is no heading" in text


def test_the_provenance_counts_what_the_stores_hold(tmp_path: Path):
    _experiment(tmp_path / "experiment")
    now = datetime(2026, 11, 30, 9, 0, tzinfo=timezone.utc)
    part = generated_part(tmp_path, MATRIX, "longlook matrix --out X --no-run --publish docs/matrix.md", now)
    row = next(line for line in part.splitlines() if line.startswith("| interoperability"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1:6] == ["2", "3", "2", "1", "1"]  # arms, runs, ok, not ok, flagged
    assert "2026-11-30 05:02-05:04" in row and "abc123" in part and "quic-go@v0.65.0" in part
    assert part.startswith("Generated 2026-11-30 09:00 UTC by\n\n    longlook matrix --out X")
    assert "#### handshake" in part


def test_a_stack_a_resumed_session_added_is_named_among_the_implementations():
    from longlook.analyses.matrix.publish import provenance_markdown

    versions = {
        "stacks": {"quic-go@v0.65.0": "quic-go@v0.65.0"},
        "resumed": [{"changed": {"stacks": {"was": {}, "now": {"ngtcp2@1.11.0": "ngtcp2@1.11.0-1~bpo12+1"}}}}],
    }
    row = {"name": "interoperability", "arms": 2, "runs": 2, "ok": 2, "not_ok": 0, "flagged": 0}
    text = provenance_markdown([{**row, "sessions": [], "active_s": 0.0, "commits": [], "versions": versions}], "x")
    assert "Implementations: ngtcp2@1.11.0-1~bpo12+1; quic-go@v0.65.0." in text, text


def test_the_provenance_says_which_failed_runs_were_set_aside_and_why(tmp_path: Path):
    _experiment(tmp_path / "experiment")
    with Store.open(tmp_path / "experiment") as s:
        assert s.set_aside_failed(["ours_quic-*"], "a client defect, fixed") == ["r2"]
    part = generated_part(tmp_path, MATRIX, "x", datetime(2026, 11, 30, 9, 0, tzinfo=timezone.utc))
    assert "interoperability: 1 failed runs set aside and run again (`longlook again`): a client defect, fixed" in part
    row = next(line for line in part.splitlines() if line.startswith("| interoperability"))
    assert [c.strip() for c in row.strip("|").split("|")][1:6] == ["2", "2", "2", "0", "1"]
