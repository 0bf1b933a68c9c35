"""`longlook compare BASE CAND` (a regression gate: exit 1 on a regression) and
`longlook compare --history DIR...` (change points over many experiments)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import List, Optional

import typer
from rich.table import Table

from ..render.console import make_console

VERDICT_STYLE = {
    "regression": "bold red",
    "improvement": "bold green",
    "insufficient data": "yellow",
    "not testable": "yellow",
    "inconclusive: survivorship": "yellow",
    "no significant change": "",
}


PLOT_SUFFIXES = (".svg", ".png", ".pdf")


def _n(x, fmt: str = ",.1f") -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)


def change_text(ch) -> str:
    """The % change, or the change in the metric's unit where BASE's mean is 0."""
    if math.isnan(ch.change_pct) and not math.isnan(ch.change):
        return f"{ch.change:+.3g} {ch.unit}".strip()
    return f"{_n(ch.change_pct, '+.1f')}%"


def compare(
    directories: List[Path] = typer.Argument(
        ..., help="BASE CAND (two experiment directories), or with --history, many."
    ),
    history: bool = typer.Option(
        False, "--history", help="Change points over many experiments of one scenario, in start-time order."
    ),
    threshold: float = typer.Option(
        2.0, "--threshold", help="A significant change counts only when larger than this (% of BASE's mean)."
    ),
    test: Optional[str] = typer.Option(None, "--test", help="welch or mannwhitney [default: BASE's statistics]."),
    alpha: Optional[float] = typer.Option(None, "--alpha", help="Significance level [default: BASE's statistics]."),
    holm: bool = typer.Option(
        True,
        "--holm/--no-holm",
        help="Holm-correct over all tests (cells x arms x metrics, and the completions of each cell x arm).",
    ),
    metric: Optional[List[str]] = typer.Option(
        None, "--metric", help="Only this metric (repeatable) (default: all of the kind's; history: the first)."
    ),
    vary: Optional[List[str]] = typer.Option(
        None,
        "--vary",
        help="A parameter that is the change under test (e.g. max_cwnd_packets): left out of cell matching.",
    ),
    json_out: Optional[Path] = typer.Option(
        None,
        "--json",
        help="Write the results as JSON to this file, or to stdout with `--json -` (instead of the table).",
    ),
    junit_out: Optional[Path] = typer.Option(None, "--junit", help="Write JUnit XML (a failure per regression)."),
    html_out: Optional[Path] = typer.Option(None, "--html", help="Write an HTML page."),
    plot: Optional[Path] = typer.Option(None, "--plot", help="History: write the figure (.svg, .png or .pdf)."),
    pvalue: float = typer.Option(
        0.05,
        "--pvalue",
        help="History: E-Divisive permutation test level, family-wise (Bonferroni over the cell x arm series).",
    ),
    strict: bool = typer.Option(
        False, "--strict", help="Also fail (exit 1) when a cell has too few counted runs to compare."
    ),
) -> None:
    """Compare experiments of one scenario: a regression gate, or change points over many.

    BASE CAND: per cell, arm and metric, the % change of the mean with its interval, a test,
    Holm, and a verdict; exit status 1 when any cell regressed (a CI gate), 2 on bad input.
    With --history, many experiments in start-time order: the change points of each cell's
    mean (E-Divisive)."""
    from ..errors import LonglookError, check_output

    for option, path in (("--json", json_out), ("--junit", junit_out), ("--html", html_out)):
        if path is not None and not _stdout(path):  # `--json -` is stdout
            check_output(path, option)
    if plot is not None:
        check_output(plot, "--plot", suffixes=PLOT_SUFFIXES)
    if history:
        if junit_out:
            raise LonglookError("--junit: only for BASE CAND, not --history")
        _history(directories, metric, vary or [], pvalue, json_out, html_out, plot)
        return
    if len(directories) != 2:
        raise LonglookError(
            f"compare: give exactly two experiment directories (BASE CAND), got {len(directories)}",
            hint="for more, in time order, add --history",
        )
    if plot:
        raise LonglookError("--plot: only with --history")
    from ..analyses.compare.change import compare_experiments
    from ..analyses.compare.experiments import load_side
    from ..analyses.compare.junit import write_junit
    from ..analyses.compare.page import comparison_page, write_page

    base, cand = load_side(directories[0], "BASE"), load_side(directories[1], "CAND")
    result = compare_experiments(
        base, cand, vary=vary or [], metrics=metric or [], threshold_pct=threshold, alpha=alpha, test=test, holm=holm
    )  # type: ignore[arg-type]
    if not _stdout(json_out):
        _print_comparison(result)
    _write_json(result.as_dict(), json_out)
    if junit_out:
        write_junit(result, junit_out)
    if html_out:
        write_page(comparison_page(result), html_out)
    raise typer.Exit(result.exit_status(strict))


def _print_comparison(result) -> None:
    console = make_console()
    s = result.settings
    b, c = result.base, result.cand
    console.print(
        f"[bold]{b.experiment['scenario_name']}[/bold]: BASE {b.directory} "
        f"({b.started_at:%Y-%m-%d %H:%M}) vs CAND {c.directory} ({c.started_at:%Y-%m-%d %H:%M})"
    )
    for v in result.varied:
        console.print(f"changed: {v['parameter']} {', '.join(v['base'])} -> {', '.join(v['cand'])}")
    from ..analyses.compare.path_setup import differences_text

    if result.path_differs:
        console.print(
            f"[yellow]the path was made differently: {differences_text(result.path_differs)}; "
            f"a change may be the testbed's, not CAND's[/yellow]"
        )
    if result.scenario_differs:
        console.print(
            f"[yellow]the scenarios differ outside their cells: {differences_text(result.scenario_differs)}; "
            f"a change may be the setting's, not CAND's[/yellow]"
        )
    table = Table()
    for col in (
        "cell",
        "arm",
        "metric",
        "n B/C",
        "mean BASE",
        "mean CAND",
        "change",
        "CI",
        "p_holm" if s.holm else "p",
        "verdict",
    ):
        table.add_column(col, overflow="fold")
    for ch in result.changes:
        ci = "-" if math.isnan(ch.ci_low) else f"[{ch.ci_low:+.1f}, {ch.ci_high:+.1f}]"
        style = VERDICT_STYLE.get(ch.verdict.value, "")
        verdict = f"[{style}]{ch.verdict.value}[/]" if style else ch.verdict.value
        table.add_row(
            ch.cell_id,
            ch.arm,
            ch.metric,
            f"{ch.n_base}/{ch.n_cand}",
            _n(ch.mean_base),
            _n(ch.mean_cand),
            change_text(ch),
            ci,
            _n(ch.p_adjusted, ".2g"),
            verdict + (f" ({ch.note})" if ch.note else ""),
        )
    console.print(table)
    from ..analyses.compare.change import Verdict

    counts = ", ".join(f"{v.value}: {result.count(v)}" for v in Verdict if result.count(v)) or "nothing compared"
    test = "Welch" if s.test == "welch" else "Mann-Whitney"
    console.print(
        f"{counts} ({test}, alpha {s.alpha:g}{', Holm over ' + str(len(result.changes)) + ' tests' if s.holm else ''}, "
        f"threshold {s.threshold_pct:g}%)"
    )
    if result.regressed:
        console.print("[bold red]regression: the gate fails[/bold red]")


def _history(directories, metric, vary, pvalue, json_out, html_out, plot) -> None:
    from ..analyses.compare.history import history
    from ..analyses.compare.history_figure import save_history_figure
    from ..analyses.compare.page import history_page, write_page

    h = history(directories, metric=(metric or [None])[0], vary=vary, pvalue=pvalue)
    _write_json(h.as_dict(), json_out)
    if not _stdout(json_out):
        _print_history(h)
    if html_out:
        write_page(history_page(h), html_out)
    if plot:
        save_history_figure(h, plot)


def _print_history(h) -> None:
    console = make_console()
    console.print(
        f"[bold]{h.sides[0].experiment['scenario_name']}[/bold]: {len(h.sides)} experiments, "
        f"{h.metric.name}; {h.method()}"
    )
    for warning in (h.warning(), h.path_warning(), h.scenario_warning()):
        if warning:
            console.print(f"[yellow]{warning}[/yellow]")
    table = Table()
    for col in ("cell", "arm", *(str(i) for i in range(len(h.sides))), "change points"):
        table.add_column(col, overflow="fold")
    for s in h.series:
        cps = (
            "; ".join(
                f"at {cp.index} ({h.sides[cp.index].directory.name}): {cp.change_pct:+.1f}% (p {cp.p:.2g})"
                for cp in s.change_points
            )
            or "-"
        )
        table.add_row(s.cell_id, s.arm, *(_n(m) for m in s.means), cps)
    console.print(table)
    for i, side in enumerate(h.sides):
        console.print(f"  {i}: {side.directory} ({side.started_at:%Y-%m-%d %H:%M})")


def _stdout(path: Path | None) -> bool:
    return path is not None and str(path) == "-"


def _write_json(doc: dict, path: Path | None) -> None:
    """--json FILE writes the document; --json - prints it (and the table is left out)."""
    if path is None:
        return
    text = json.dumps(doc, indent=1, default=str)
    if _stdout(path):
        typer.echo(text)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def register(app: typer.Typer) -> None:
    app.command("compare")(compare)
