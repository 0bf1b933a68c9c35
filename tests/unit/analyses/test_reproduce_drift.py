"""The reproduction's drift section: what its two pooled figures are read as."""

from __future__ import annotations

import math

from longlook.analyses.reproduce.drift import RoundDrift
from longlook.core.serial import Drift


def _drift(p: float, series: int = 10) -> Drift:
    return Drift(series, series * 10, 0.2 if p < 0.05 else 0.01, p, 0.05, 0.15)


def test_a_drift_common_to_a_rounds_arms_leaves_comparisons_alone():
    d = RoundDrift(_drift(0.4), _drift(0.01), ())
    assert "cancels in their comparison" in d.reading()
    assert "not affected" in d.reading()
    assert d.as_dict()["reading"] == d.reading()


def test_a_drifting_ratio_is_read_as_a_problem_for_every_comparison():
    assert "says more than its data" in RoundDrift(_drift(0.01), _drift(0.01), ()).reading()
    assert "independent draws" in RoundDrift(_drift(0.4), _drift(0.4), ()).reading()
    empty = Drift(0, 0, math.nan, math.nan, 0.05, math.nan)
    assert "enough rounds" in RoundDrift(empty, empty, ()).reading()
    lines = RoundDrift(_drift(0.4), _drift(0.01), ()).markdown()
    assert lines[0].startswith("- per-round log ratio") and lines[2].startswith("- reading:")


def test_the_pages_show_the_drift_and_its_reading(tmp_path):
    from longlook.analyses.reproduce.drift import ScenarioDrift
    from longlook.analyses.reproduce.output import Reproduction

    d = RoundDrift(_drift(0.4), _drift(0.01), (ScenarioDrift("kakhki-fig2-macw", _drift(0.4), _drift(0.01)),))
    r = Reproduction("standard", tmp_path, [], [], 1.0, "2026-11-29T00:00:00Z", drift=d)
    html, md = r.html(), r.markdown()
    for page in (html, md):
        assert "cancels in their comparison" in page and "kakhki-fig2-macw" in page
    assert r.as_dict()["drift"]["paired"]["drifts"] is False


def test_a_drifting_ratio_widens_every_test_and_says_so():
    from longlook.core.spec import Statistics

    base = Statistics(alpha=0.01, confidence=0.95)
    drifting = RoundDrift(Drift(44, 554, 0.092, 0.038, 0.05, 0.13), _drift(0.5), ())
    wide = drifting.widened(base)
    assert 0.0046 < wide.alpha < 0.0048 and 0.967 < wide.confidence < 0.969, wide
    assert "10% wider" in drifting.applied() and "alpha 0.01 -> 0.0047" in drifting.applied()
    # only the arms drift: what drifts cancels in the comparisons; nothing is widened
    arms_only = RoundDrift(_drift(0.5), Drift(94, 1192, 0.079, 0.018, 0.05, 0.1), ())
    assert arms_only.widened(base) == base and arms_only.applied().startswith("nothing")
