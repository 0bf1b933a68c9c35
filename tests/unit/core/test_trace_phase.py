"""Where a run over a trace meets it (core.trace_phase): the phase of a round, which links
have one, and the paired comparison of the cells whose runs recorded it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from longlook.core.stats import compare_cells
from longlook.core.trace_phase import DETAIL, paired_cells, phase_ms, run_phase_ms, trace_files
from longlook.linkprofile import LinkProfile


def _trace(tmp_path: Path, name: str, last_ms: int) -> str:
    (tmp_path / name).write_text("\n".join(str(t) for t in range(1, last_ms + 1)) + "\n")
    return name


def test_a_round_has_one_phase_whatever_the_arm_retry_or_resume():
    first = [phase_ms("random", 7, r, 60_000.0) for r in range(200)]
    assert first == [phase_ms("random", 7, r, 60_000.0) for r in range(200)]  # stateless
    assert all(0 <= p < 60_000 and p == int(p) for p in first)
    assert len(set(first)) > 190  # rounds sample the trace
    assert first != [phase_ms("random", 8, r, 60_000.0) for r in range(200)]  # the seed decides
    # spread over the whole period (a uniform draw: each tenth holds about 20 of 200)
    counts = np.histogram(first, bins=10, range=(0, 60_000))[0]
    assert counts.min() >= 8, counts
    assert phase_ms("start", 7, 3, 60_000.0) == 0.0


def test_only_a_link_over_a_trace_gets_a_phase(tmp_path: Path):
    fixed = LinkProfile(rate_mbit=10, delay_ms=18)
    assert run_phase_ms("random", fixed, tmp_path, 1, 0) is None
    down = _trace(tmp_path, "down.trace", 4000)
    up = _trace(tmp_path, "up.trace", 1000)
    traced = LinkProfile(delay_ms=18, down={"trace": down}, up={"trace": up})
    assert trace_files(traced, tmp_path) == [(tmp_path / "up.trace").resolve(), (tmp_path / "down.trace").resolve()]
    assert run_phase_ms("start", traced, tmp_path, 1, 0) == 0.0
    # drawn over the longer trace's period (the shorter one wraps)
    assert {run_phase_ms("random", traced, tmp_path, 1, r) for r in range(50)} <= set(np.arange(4000.0))
    assert max(run_phase_ms("random", traced, tmp_path, 1, r) for r in range(50)) > 1000


def _runs(values: dict[tuple[str, str], list[float]], phased: set[str]) -> pd.DataFrame:
    rows = []
    for (cell, arm), xs in values.items():
        for r, x in enumerate(xs):
            rows.append(
                dict(
                    run_id=f"{cell}-{arm}-{r}",
                    cell_id=cell,
                    arm=arm,
                    round=r,
                    attempt=1,
                    status="ok",
                    protocol_requested=None,
                    protocol_negotiated=None,
                    audit_flagged=False,
                    plt_ms=x,
                    **{DETAIL: 0.0 if cell in phased else None},
                )
            )
    return pd.DataFrame(rows)


def test_cells_whose_runs_met_one_stretch_of_the_trace_are_compared_as_pairs():
    """Each round's network moves both arms (a trace's good and bad stretches): paired by
    round, h3's steady 3% lead is shown; unpaired, the rounds' spread hides it."""
    rng = np.random.default_rng(5)
    network = rng.lognormal(0, 0.4, 10) * 1000
    h3, h2 = list(network * 0.97 * rng.normal(1, 0.005, 10)), list(network * rng.normal(1, 0.005, 10))
    runs = _runs({("lte", "h3"): h3, ("lte", "h2"): h2, ("old", "h3"): h3, ("old", "h2"): h2}, phased={"lte"})
    assert paired_cells(runs) == {"lte"}
    out = {c.cell_id: c for c in compare_cells(runs, [("h3", "h2")], metric="plt_ms", paired_cells=paired_cells(runs))}
    assert out["lte"].paired and out["lte"].verdict.significant and out["lte"].p_value < 1e-6
    assert not out["old"].paired and not out["old"].verdict.significant
    assert out["lte"].percent_difference == pytest.approx(3, abs=1)


def test_a_cell_with_one_run_without_a_phase_is_not_paired():
    runs = _runs({("lte", "h3"): [1.0, 2.0, 3.0], ("lte", "h2"): [1.0, 2.0, 3.0]}, phased={"lte"})
    runs.loc[2, DETAIL] = None
    assert paired_cells(runs) == set()
    assert paired_cells(runs.drop(columns=DETAIL)) == set()
