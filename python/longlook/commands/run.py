"""`longlook run`: a scenario of any kind through the testbed into an experiment directory."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from ..render.console import make_console


def register(app: typer.Typer) -> None:
    app.command("run")(run)


def run(
    scenario: Path = typer.Argument(..., help="scenario TOML file"),
    out: Path = typer.Option(..., "--out", "-o", help="experiment directory (store + artifacts)"),
    resume: bool = typer.Option(False, "--resume", help="continue an interrupted experiment in --out"),
    allow_version_change: bool = typer.Option(
        False,
        "--allow-version-change",
        help="with --resume: continue even though longlook, linkem, the endpoint or a stack changed "
        "since the experiment began (what changed is recorded)",
    ),
    link_check: bool = typer.Option(
        True, "--link-check/--no-link-check", help="self-check each link profile before its cells"
    ),
    force: bool = typer.Option(False, "--force", help="write into a non-empty directory that is no experiment"),
    executor: str = typer.Option(
        "local",
        "--executor",
        help="local (this machine's testbed) or ray (one cell per cluster node "
        "with the testbed resource; docs/cluster.md)",
    ),
    address: str = typer.Option(
        None,
        "--address",
        help="Ray cluster address HOST:PORT (--executor ray; default: RAY_ADDRESS or the cluster on this machine)",
    ),
    as_json: bool = typer.Option(
        False, "--json", help="also print the session's counts and times as JSON on stdout (progress stays on stderr)"
    ),
) -> None:
    """Run every cell of SCENARIO (rounds, arms in random order) and store each run as it ends."""
    run_scenario(
        scenario,
        out,
        resume=resume,
        allow_version_change=allow_version_change,
        link_check=link_check,
        force=force,
        executor=executor,
        address=address,
        as_json=as_json,
    )


def run_scenario(
    scenario: Path,
    out: Path,
    *,
    resume: bool = False,
    link_check: bool = True,
    command: str = "longlook run",
    resume_hint: str | None = None,
    force: bool = False,
    executor: str = "local",
    address: str | None = None,
    as_json: bool = False,
    allow_version_change: bool = False,
) -> None:
    from ..core.execute import Runner
    from ..core.executors import by_name
    from ..core.spec import load_scenario

    runs_on = by_name(executor, address)  # one clear error before anything is written
    sc = load_scenario(scenario)
    console = make_console(stderr=True)
    from .scenario import summary as plan

    console.print(f"{sc.name}: {plan(sc)}", markup=False, highlight=False)  # what it will cost, first
    display = _ProgressDisplay(console)
    with display.progress:
        summary = Runner(
            sc,
            out,
            resume=resume,
            link_check=link_check,
            progress=display.event,
            force=force,
            executor=runs_on,
            allow_version_change=allow_version_change,
        ).run()
    if as_json:
        import dataclasses
        import json

        doc = {
            **dataclasses.asdict(summary),
            "harness_overhead": summary.harness_overhead,
            "harness_s_per_run": summary.harness_s_per_run,
        }
        typer.echo(json.dumps(doc, indent=1, default=str))
    console.print(
        f"[bold]{summary.runs}[/] runs this session: {summary.ok} ok ({summary.flagged} flagged by "
        f"their path audit), {summary.failed} failed, {summary.mismatched} protocol mismatches; "
        f"{summary.skipped_done} already done before."
    )
    console.print(
        f"wall {summary.wall_s:.1f} s, of which set-up, link checks and the experiment's start and "
        f"end {summary.setup_s:.1f} s; "
        f"harness overhead {summary.harness_overhead:.1%} of the measuring loop, "
        f"{summary.harness_s_per_run * 1e3:.0f} ms per run (targets <= 2%, <= 50 ms)"
    )
    if phases := summary.phases_per_run_ms():
        console.print(
            "harness per run: "
            + ", ".join(f"{name} {ms:.1f} ms" for name, ms in phases)
            + " (the rest: between the steps)",
            markup=False,
            highlight=False,
        )
    if summary.interrupted:
        import signal

        name = signal.Signals(summary.signal or signal.SIGINT).name
        console.print(
            f"[yellow]interrupted[/] ({name}): every finished run is stored; continue with "
            f"`{resume_hint or f'{command} {scenario} --out {out} --resume'}`"
        )
        raise typer.Exit(128 + (summary.signal or signal.SIGINT))
    console.print(f"results in {out}; report: `longlook report {out}`")
    if summary.short:
        console.print(
            f"[red]{len(summary.short)} cell(s) ended without the counted runs a comparison "
            f"needs[/] (failures have their phase in the report's Excluded runs):"
        )
        for line in summary.short:
            console.print(f"  {line}")
        raise typer.Exit(1)


class _ProgressDisplay:
    """Runs, failures and ETA in one bar; link checks and failures as log lines above it."""

    def __init__(self, console: Console):
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("failed {task.fields[failed]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=False,
        )
        self.task = None
        self.failed = 0
        self.cells_task = None  # --executor ray: cells done, and what each node is doing
        self.nodes: dict[str, str] = {}

    def event(self, kind: str, **info) -> None:
        if kind == "start":
            self.task = self.progress.add_task("runs", total=info["total"], completed=info["done"], failed=0)
        elif kind == "cells":
            self.cells_task = self.progress.add_task(
                f"cells ({info['nodes']} testbed nodes)", total=info["total"], failed=0
            )
        elif kind in ("cell_started", "cell_done", "cell_requeued"):
            self._node_event(kind, info)
        elif kind == "link_check":
            where = f" on {info['node']}" if "node" in info else ""
            self.progress.log(f"link self-check{where}: {info['link']} ...")
        elif kind == "link_checked":
            self.progress.log(("[green]" if info["ok"] else "[red]") + info["summary"])
        elif kind == "run":
            if info["status"] != "ok":
                self.failed += 1
                self.progress.log(
                    f"[yellow]{info['status']}[/] {info['cell']} round {info['round']} {info['arm']}: {info['error']}"
                )
            elif info["flagged"]:
                self.progress.log(
                    f"[yellow]flagged[/] {info['cell']} round {info['round']} "
                    f"{info['arm']}: {'; '.join(info['reasons'])}"
                )
            if info["final"]:
                self.progress.update(
                    self.task, advance=1, failed=self.failed, description=f"runs ({info['arm']} {info['text']})"
                )
            else:
                self.progress.update(self.task, failed=self.failed)
            if "node" in info:
                self.nodes[info["node"]] = f"{info['cell']} r{info['round']}"
                self._show_nodes()

    def _node_event(self, kind: str, info: dict) -> None:
        node, cell = info["node"], info["cell"]
        if kind == "cell_started":
            self.nodes[node] = f"{cell} starting"
        elif kind == "cell_done":
            self.nodes[node] = "idle"
            self.progress.update(self.cells_task, advance=1)
        else:
            self.nodes[node] = "lost"
            self.progress.log(
                f"[yellow]requeued[/] {cell}: its task on {node} died ({info['reason']}); "
                f"finished runs kept, attempt {info['attempt'] + 1}"
            )
        self._show_nodes()

    def _show_nodes(self) -> None:
        if self.cells_task is not None:
            busy = ", ".join(f"{n}: {what}" for n, what in sorted(self.nodes.items()))
            self.progress.update(self.cells_task, description=f"cells [{busy}]")
