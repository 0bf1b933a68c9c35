"""Why a claim does not hold: links to what explains it, made from the experiment itself.

- the experiment's own report (`longlook report`, built by the `build_report` the caller
  passes: the report floor sits above the analyses), at its section: `#states` (state
  machines, loss-handling states and false losses per cell, each impaired cell against its
  twin, cwnd of one QUIC and one TCP run) or `#fairness` (Table 4, throughput and cwnd
  timelines);
- for page loads, the states analysis of the first cell against the claim
  (`longlook states DIR --cell CELL --out ...`: cwnd timeline, state machines, losses) and,
  when the cell is impaired (reordering, loss), `longlook states diff` against its unimpaired
  twin (`states-diff.json`);
- for Chaudhary's fallback claim, the fallback analysis (`longlook analyze fallback`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from ...errors import LonglookError
from .claims import Claim

BuildReport = Callable[[Path], Path]  # writes an experiment's report, returns its path


def _report(directory: Path, built: dict[Path, Path | str], build_report: BuildReport) -> Path | str:
    """The experiment's report (built once per reproduction), or why it could not be built."""
    if directory not in built:
        try:
            built[directory] = build_report(directory)
        except LonglookError as e:
            built[directory] = f"report not built: {e.message}"
    return built[directory]


def _twin(directory: Path, cell_id: str) -> str | None:
    """The cell's unimpaired twin (same link but for its impairments, workload, options), as
    the report's states section pairs them (analyses.states.twins)."""
    from ...core.store import Store
    from ..states.twins import twins

    with Store.open(directory, read_only=True) as store:
        cells = store.cells_frame()
    return twins(cells).get(cell_id)


def _fallback(directory: Path, target: Path, out: Path, options: dict) -> list[tuple[str, str]]:
    """`longlook analyze fallback`: per session correlation, lag and Granger tests, Fig. 12,
    read as the claim reads them (`options`: its F, grid and lag window)."""
    from ..fallback.from_store import analyze_store

    try:
        paths = analyze_store(directory, **options).write(target)
    except LonglookError:
        return []
    return [(p.name, str(p.relative_to(out))) for p in paths if p.suffix in (".svg", ".csv")]


def explain(
    claim: Claim,
    directory: Path,
    cell_id: str | None,
    out: Path,
    built: dict[Path, Path | str],
    build_report: BuildReport | None = None,
) -> list[tuple[str, str]]:
    """(title, path relative to `out`) of each artefact explaining the claim's failure; the
    experiment's report first when `build_report` is given."""
    links: list[tuple[str, str]] = []
    if build_report is not None:
        report = _report(directory, built, build_report)
        if isinstance(report, Path):
            links.append((f"report #{claim.explain.anchor}", f"{report.relative_to(out)}#{claim.explain.anchor}"))
        else:
            links.append((report, ""))
    if claim.explain.fallback:
        options = claim.rule.fallback_options() if hasattr(claim.rule, "fallback_options") else {}
        links += _fallback(directory, out / "explain" / claim.id, out, options)
    if not (claim.explain.states and cell_id):
        return links
    from ..states import analyse_runs, compare, load_runs
    from ..states.diff import protocols_in
    from ..states.export import diff_json, write_analysis

    target = out / "explain" / claim.id
    runs = load_runs(directory, cell=cell_id)
    if not runs:
        return links
    written = write_analysis(analyse_runs(runs), target)
    (target / "cell.txt").write_text(cell_id + "\n")
    names = {p.name for p in written}
    if "cwnd.svg" in names:
        links.append(("cwnd timeline", str((target / "cwnd.svg").relative_to(out))))
    links.append(("states of the cell", str((target / "states.json").relative_to(out))))
    twin = _twin(directory, cell_id)
    if twin:
        other = load_runs(directory, cell=twin)
        diffs = [
            compare(other, runs, p, label_a=f"{directory.name}:{twin}", label_b=f"{directory.name}:{cell_id}")
            for p in protocols_in(runs)
            if p in protocols_in(other)
        ]
        if diffs:
            (target / "states-diff.json").write_text(json.dumps(diff_json(diffs), indent=1))
            links.append(("states diff vs unimpaired twin", str((target / "states-diff.json").relative_to(out))))
    return links
