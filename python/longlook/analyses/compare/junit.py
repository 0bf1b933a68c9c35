"""The verdicts as JUnit XML, the format CI systems show as test results: one testcase per
cell x arm x metric, a failure on a regression, skipped when a side has too few runs."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path

from .change import UNJUDGED, Comparison, Verdict


def _num(x: float, fmt: str) -> str:
    return "n/a" if x is None or math.isnan(x) else format(x, fmt)


def junit_xml(comparison: Comparison) -> str:
    changes = comparison.changes
    s = comparison.settings
    suite = ET.Element(
        "testsuite",
        name=f"longlook compare {comparison.base.experiment['scenario_name']}",
        tests=str(len(changes)),
        failures=str(comparison.count(Verdict.REGRESSION)),
        errors="0",
        skipped=str(sum(comparison.count(v) for v in UNJUDGED)),
    )
    props = ET.SubElement(suite, "properties")
    for name, value in (
        ("base", comparison.base.directory),
        ("cand", comparison.cand.directory),
        ("test", s.test),
        ("alpha", s.alpha),
        ("holm", s.holm),
        ("threshold_pct", s.threshold_pct),
    ):
        ET.SubElement(props, "property", name=name, value=str(value))
    for c in changes:
        case = ET.SubElement(suite, "testcase", classname=c.cell_id, name=c.name)
        text = (
            f"{c.metric} of {c.arm}: {_num(c.mean_base, '.4g')} -> {_num(c.mean_cand, '.4g')} {c.unit} "
            f"({_num(c.change_pct, '+.1f')}%, {s.confidence:.0%} CI [{_num(c.ci_low, '+.1f')}%, "
            f"{_num(c.ci_high, '+.1f')}%], p{'_holm' if s.holm else ''} = {_num(c.p_adjusted, '.2g')}, "
            f"n {c.n_base}/{c.n_cand})"
        )
        if c.verdict is Verdict.REGRESSION:
            ET.SubElement(case, "failure", message=f"regression: {text}", type="regression").text = text
        elif c.verdict in UNJUDGED:
            ET.SubElement(case, "skipped", message=f"{c.verdict.value}: {c.note}")
        else:
            ET.SubElement(case, "system-out").text = f"{c.verdict.value}: {text}"
    ET.indent(suite)
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"


def write_junit(comparison: Comparison, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(junit_xml(comparison))
    return path
