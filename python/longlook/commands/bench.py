"""`longlook bench link|stacks|endpoint`: benchmarks of the testbed itself (longlook.bench)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from ..errors import check_output

bench_app = typer.Typer(no_args_is_help=True, help="Benchmarks of the testbed itself.")


@bench_app.callback()
def _bench() -> None:
    """Benchmarks of the testbed itself."""


@bench_app.command("link")
def bench_link(
    as_json: bool = typer.Option(False, "--json", help="print the figures as JSON"),
    quick: bool = typer.Option(False, "--quick", help="shorter measurements"),
    ceiling: bool = typer.Option(
        False,
        "--ceiling",
        help="also find, per link model (rate; trace), the "
        "highest rate still in tolerance with 20 ms each way, and linkem's CPU there",
    ),
    datapath: list[str] = typer.Option(
        [],
        "--datapath",
        help="linkem's datapath (nfqueue, afpacket); repeat it to "
        "compare them side by side in the kernel ratio and the gigabit check",
    ),
    aqm: list[str] = typer.Option(
        [],
        "--aqm",
        help="a queue discipline (codel, fq_codel, pie, dualpi2) whose forwarding cost the gigabit check "
        "measures beside drop-tail's; repeatable",
    ),
) -> None:
    """Measure linkem against its targets: rate accuracy, RTT error, loss, max forwarding, the
    ratio to plain kernel forwarding at 0 and 20 ms, a gigabit flow, and (--ceiling) the ceiling."""
    from ..bench.link import print_bench, run_bench

    from ..testbed.host import DATAPATHS

    for d in datapath:
        if d not in DATAPATHS:
            raise typer.BadParameter(f"{d!r}: one of {', '.join(DATAPATHS)}", param_hint="--datapath")
    for d in aqm:
        if d not in ("codel", "fq_codel", "pie", "dualpi2"):
            raise typer.BadParameter(f"{d!r}: one of codel, fq_codel, pie, dualpi2", param_hint="--aqm")
    result = run_bench(quick=quick, ceiling=ceiling, datapaths=tuple(datapath), disciplines=tuple(aqm))
    if as_json:
        print(json.dumps(result, indent=1))
    else:
        print_bench(result)


@bench_app.command("soak")
def bench_soak_command(
    runs: int = typer.Option(1000, min=8, max=100_000, help="about this many short page loads"),
    executor: str = typer.Option("local", help="local, or ray (a one-node cluster it starts)"),
    seed: int = typer.Option(1, help="the fault injector's seed"),
    as_json: bool = typer.Option(False, "--json", help="print the books as JSON"),
) -> None:
    """A long grid of short runs under injected faults (servers and clients killed, linkem
    stopped 20-200 ms, the disk filled, the driver SIGKILLed twice and resumed), then the
    books: every planned run stored exactly once, none counted through a fault unflagged,
    nothing left behind. Exit 1 when the books do not balance."""
    from ..bench.soak import result_json, run_soak

    if executor not in ("local", "ray"):
        raise typer.BadParameter(f"{executor!r}: local or ray", param_hint="--executor")
    res = run_soak(runs, executor=executor, seed=seed, say=lambda m: print(m, flush=True))
    if as_json:
        print(result_json(res))
    else:
        print(
            f"soak ({res.executor}): planned {res.planned}, settled {res.settled}, stored {res.stored} "
            f"(ok {res.ok}, failed {res.failed}, flagged {res.flagged}), duplicates {res.duplicates}, "
            f"unsettled {len(res.unsettled)}, counted through a kill {len(res.counted_through_fault)}, "
            f"counted through a linkem stop {len(res.counted_through_linkem_stop)}, unjudged {len(res.unjudged)}, "
            f"leftover namespaces {len(res.leftover_namespaces)}, processes {len(res.leftover_processes)}; "
            f"faults {res.faults}; driver exits {res.driver_exits}; wall {res.wall_s:.0f} s"
        )
        for title, reasons in (("failed", res.failed_reasons), ("flagged", res.flagged_reasons)):
            for reason, n in reasons.items():
                print(f"  {title} {n}x: {reason}")
        for line in (
            res.counted_through_fault[:20]
            + res.counted_through_linkem_stop[:20]
            + res.unjudged[:20]
            + res.unsettled[:20]
        ):
            print(f"  {line}")
    if not res.passed:
        raise typer.Exit(1)


@bench_app.command("endpoint")
def bench_endpoint_command(
    size: str = typer.Option("10m", help="download size (k/m suffixes)"),
    rate_mbit: float = typer.Option(100.0, help="link rate"),
    rtt_ms: float = typer.Option(36.0, help="round-trip time"),
    runs: int = typer.Option(3, help="downloads per protocol (the median is judged)"),
    as_json: bool = typer.Option(False, "--json", help="print the figures as JSON"),
) -> None:
    """Each protocol's download against the physical limit of the emulated path (target >= 90%)."""
    from ..bench.endpoint import bench_endpoint
    from ..bench.row import print_rows, title

    rows = bench_endpoint(size=size, rate_mbit=rate_mbit, rtt_ms=rtt_ms, runs=runs)
    if as_json:
        print(json.dumps([r.endpoint_json() for r in rows], indent=1))
        return
    print_rows(rows, title(size, rate_mbit, rtt_ms, runs))


@bench_app.command("stacks")
def bench_stacks_command(
    specs: Optional[list[str]] = typer.Argument(
        None,
        metavar="SPEC",
        show_default=False,
        help="a stack (quic-go, quic-go@v0.64.1, ngtcp2, ...), optionally with a congestion control "
        "(tquic:cubic), or ours (our endpoint, h3, Cubic); default: ours and every installed stack",
    ),
    size: str = typer.Option("10m", help="download size (k/m suffixes)"),
    rate_mbit: float = typer.Option(100.0, help="link rate"),
    rtt_ms: float = typer.Option(36.0, help="round-trip time"),
    runs: int = typer.Option(3, help="downloads per stack (the median is judged)"),
    out: Optional[Path] = typer.Option(
        None, "--out", help="write the rows as JSON (DIR/stacks-bench.json: the report's stacks table)"
    ),
    as_json: bool = typer.Option(False, "--json", help="print the rows as JSON"),
) -> None:
    """Each QUIC stack's download, its own server and client, against the physical limit of the path."""
    from ..bench.row import print_rows, title
    from ..bench.stacks import bench_stacks, default_specs, stacks_document
    from ..stacks.builds.install import ensure_stacks

    if specs:  # a stack named here is installed the first time (scripts/setup.sh builds none)
        ensure_stacks([s.partition(":")[0] for s in specs])

    if out:
        check_output(out, "--out")
    rows = bench_stacks(specs or default_specs(), size, rate_mbit, rtt_ms, runs)
    doc = stacks_document(rows, size, rate_mbit, rtt_ms)
    if out:
        out.write_text(json.dumps(doc, indent=1))
    if as_json:
        print(json.dumps(doc, indent=1))
    else:
        print_rows(rows, title(size, rate_mbit, rtt_ms, runs), label=("stack", "version", "cc"))


def register(app: typer.Typer) -> None:
    app.add_typer(bench_app, name="bench")
