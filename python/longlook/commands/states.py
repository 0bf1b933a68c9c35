"""`longlook states DIR` and `longlook states diff A B`: inferred congestion-state machines.

A and B are `DIR`, `DIR:CELL_ID` or `DIR:DIM=VALUE[,DIM=VALUE]` (every cell whose dimensions
match, e.g. `DIR:client_cpu=phone-2014`: one CPU budget across the grid). The library behind it
is `longlook.analyses.states`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console
from rich.table import Table

from ..errors import LonglookError, check_output, check_range
from ..render.console import make_console

FORMATS = ("text", "json")
TEST_SHORT = {"fisher": "Fisher", "mannwhitney": "U"}


def states(
    args: List[str] = typer.Argument(
        ...,
        metavar="DIR | diff A B",
        help="An experiment directory, or `diff A B` with A, B = DIR[:CELL_ID or :DIM=VALUE,...].",
    ),
    cell: Optional[str] = typer.Option(
        None, "--cell", help="Only this cell's runs (or DIM=VALUE,...: the cells matching)."
    ),
    arm: Optional[str] = typer.Option(None, "--arm", help="Only this arm's runs (e.g. h3)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Write DOT/SVG/CSV/JSON files here."),
    fmt: str = typer.Option("text", "--format", help="text or json."),
    as_json: bool = typer.Option(False, "--json", help="The same as --format json."),
    alpha: float = typer.Option(0.01, "--alpha", help="Significance level of `diff` (after Holm)."),
    holm: bool = typer.Option(True, "--holm/--no-holm", help="Holm correction across the items of `diff`."),
) -> None:
    """Infer QUIC's and TCP's congestion-control state machines from the run logs.

    States, transitions (counts, probabilities), time in each state, entries per run,
    invariants, loss accounting (declared vs spurious). `diff A B` shows what appears,
    vanishes or changes in frequency between two sets of runs (Fisher exact / Mann-Whitney
    U, Holm): a status other than "same" only where the test is significant."""
    if as_json:
        fmt = "json"
    if fmt not in FORMATS:
        raise LonglookError(f'--format: must be text or json, got "{fmt}"')
    if out is not None:
        check_output(out, "--out", directory=True)
    check_range("--alpha", alpha, 0, 1, low_open=True, high_open=True, hint="a significance level, e.g. 0.01")
    if args[0] == "diff":
        if len(args) != 3:
            raise LonglookError("usage: longlook states diff A B (A, B = DIR, DIR:CELL_ID or DIR:DIM=VALUE)")
        run_diff(args[1], args[2], arm=arm, out=out, fmt=fmt, alpha=alpha, holm=holm)
        return
    if len(args) != 1:
        raise LonglookError("usage: longlook states DIR [--cell ID] | longlook states diff A B")
    run_show(Path(args[0]), cell=cell, arm=arm, out=out, fmt=fmt)


def run_show(directory: Path, *, cell: str | None, arm: str | None, out: Path | None, fmt: str) -> None:
    from ..analyses.states import analyse_runs, load_runs
    from ..analyses.states.export import analysis_json, write_analysis

    runs = load_runs(directory, cell=cell, arm=arm)
    if not runs:
        raise LonglookError(
            f"{directory}: no ok runs with congestion logs" + (f" in cell {cell}" if cell else ""),
            hint="runs need the endpoint's qlog/TCP logs (serve without --no-qlog)",
        )
    a = analyse_runs(runs)
    written = write_analysis(a, out) if out is not None else []
    if fmt == "json":
        print(json.dumps(analysis_json(a), indent=1))
        return
    console = make_console()
    for m in a.machines:
        g = m.graph
        console.rule(f"[bold]{m.protocol}[/bold] {m.label}: {g.n_traces} runs, states {m.states_source}")
        t = Table(title="transitions")
        for c in ("from", "to", "count", "probability", "runs"):
            t.add_column(c)
        for r in g.transitions.itertuples():
            t.add_row(r.src, r.dst, str(r.count), f"{r.probability:.2f}", f"{r.runs}/{g.n_traces}")
        console.print(t)
        t = Table(title="states")
        for c in ("state", "entries", "entries/run (mean)", "time share", "mean dwell (ms)"):
            t.add_column(c)
        for r in g.states.itertuples():
            t.add_row(
                r.state,
                str(r.entries),
                f"{g.entries(r.state).mean():.2f}",
                f"{r.dwell_share * 100:.1f}%",
                f"{r.dwell_mean_ms:.1f}",
            )
        console.print(t)
        console.print("invariants (hold in every run): " + "; ".join(str(i) for i in m.invariants))
        _print_losses(console, m)
    for p in written:
        print(p)


def _print_losses(console: Console, m) -> None:
    df = m.losses
    t = Table(title="loss accounting per run (spurious = declared lost, delivered by the link)")
    cols = [
        "run_id",
        "declared_lost",
        "loss_events",
        "by_packet_threshold",
        "by_time_threshold",
        "network_drops",
        "network_reordered",
        "spurious",
        "dsack_spurious",
    ]
    for c in cols:
        t.add_column(c.replace("_", " "))
    for row in df[cols].itertuples(index=False):
        t.add_row(*["-" if v is None or v != v else str(v) for v in row])
    console.print(t)


def run_diff(
    source_a: str, source_b: str, *, arm: str | None, out: Path | None, fmt: str, alpha: float, holm: bool = True
) -> None:
    from ..analyses.states import compare, load_runs, parse_source
    from ..analyses.states.diff import direction_text, protocols_in
    from ..analyses.states.export import diff_json

    sides = []
    for s in (source_a, source_b):
        d, c = parse_source(s)
        sides.append(load_runs(d, cell=c, arm=arm))
    a, b = sides
    diffs = [
        compare(a, b, p, label_a=source_a, label_b=source_b, alpha=alpha, holm=holm)
        for p in protocols_in(a)
        if p in protocols_in(b)
    ]
    if not diffs:
        raise LonglookError("no protocol has runs with logs on both sides")
    doc = diff_json(diffs)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "states-diff.json").write_text(json.dumps(doc, indent=1))
        for d in diffs:
            d.rows.to_csv(out / f"{d.protocol}-diff.csv", index=False)
    if fmt == "json":
        print(json.dumps(doc, indent=1))
        return
    console = make_console()
    for d in diffs:
        console.rule(f"[bold]{d.protocol}[/bold]: A = {d.label_a} ({d.n_a} runs), B = {d.label_b} ({d.n_b} runs)")
        if not d.measured:
            console.print(f"[yellow]{d.not_measured_text()}[/yellow]")
            continue
        t = Table(
            caption="status: the decisive test, significant "
            f"{'after Holm over the items' if holm else 'without correction'} at alpha {d.alpha} "
            "(Fisher exact on presence when one side never has the item, else Mann-Whitney U on "
            "per-run counts), else same; direction: what the data show, significant or not"
        )
        for c in (
            "item",
            "status",
            "direction",
            "mean A",
            "mean B",
            "runs A",
            "runs B",
            "test",
            "p",
            *(["p (Holm)"] if holm else []),
        ):
            t.add_column(c)
        for r in d.rows.itertuples():
            t.add_row(
                r.item,
                r.status,
                direction_text(r),
                f"{r.mean_a:.2f}",
                f"{r.mean_b:.2f}",
                f"{r.runs_a}/{r.n_a}",
                f"{r.runs_b}/{r.n_b}",
                TEST_SHORT.get(r.test, r.test),
                f"{r.p:.3g}",
                *([f"{r.p_adjusted:.3g}"] if holm else []),
            )
        console.print(t)


def register(app: typer.Typer) -> None:
    app.command("states", context_settings={"allow_interspersed_args": True})(states)
