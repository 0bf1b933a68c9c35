"""`longlook analyze fallback DIR`: does falling back to TCP drive quality drops and stalls
(Chaudhary et al.)? `longlook analyze intervention DIR`: the same question by experiment (the
ATE of a randomised QUIC break). The library behind both is `longlook.analyses.fallback`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

analyze_app = typer.Typer(
    no_args_is_help=True, add_completion=False, help="Analyses of a finished experiment directory."
)


@analyze_app.command("fallback")
def fallback(
    directory: Path = typer.Argument(..., help="experiment directory with series F, B and S"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="output folder [default: DIR]"),
    quic_arm: Optional[str] = typer.Option(
        None, "--quic-arm", help="the QUIC-enabled arm [default: h3; page loads: the racing arm]"
    ),
    tcp_arm: Optional[str] = typer.Option(
        None, "--tcp-arm", help="the TCP-only arm [default: h2; page loads: the h2 arm]"
    ),
    metric: str = typer.Option("qoe", "--metric", help="QoE metric compared per pattern"),
    lower_is_better: bool = typer.Option(False, "--lower-is-better", help="the metric is a cost"),
    alpha: Optional[float] = typer.Option(
        None, "--alpha", help="significance level [default: the paper's 0.05; page loads: the scenario's]"
    ),
    include_flagged: bool = typer.Option(False, "--include-flagged", help="keep runs the audit flagged"),
    cause: str = typer.Option(
        "bytes", "--cause", help="F: 'bytes' over TCP per step, or 'share' = T/(T+Q) so far (the paper's §6.1)"
    ),
    step_s: float = typer.Option(1.0, "--step", help="seconds per grid step"),
    max_lag_s: Optional[float] = typer.Option(
        None,
        "--max-lag",
        help="widest Granger lag window, seconds (the paper's: 250) [default: 1/8 of the session, 20 steps at most]",
    ),
    as_json: bool = typer.Option(False, "--json", help="print the tables as JSON (records) instead of text"),
) -> None:
    """Does falling back to TCP drive quality drops and stalls (Chaudhary et al.)?

    Per QUIC-enabled session: cross-correlation of F with B and S and its lag, KPSS
    differencing, Granger F -> B and F -> S. Per pattern: Welch on QoE and the share of
    pairs where TCP did better or the same. Writes CSV, JSON and the Fig. 12 figure.

    A page-load experiment with a racing arm: PLT of the racing arm vs the TCP-only arm per cell, fallback
    share and time, bytes over QUIC, time lost to a blocked handshake (fallback-pageloads.csv)."""
    from ..core.store import Store
    from ..errors import check_output

    check_output(out or directory, "--out", directory=True)
    with Store.open(directory, read_only=True) as store:
        racing = store.kind_name() == "pageload" and any(a.protocol == "race" for a in store.scenario().arm_list())
    if racing:  # page loads behind middleboxes: the racing arm against TCP-only
        from ..analyses.fallback.pageload import analyze_pageload_store

        df = analyze_pageload_store(
            directory, quic_arm=quic_arm, tcp_arm=tcp_arm, alpha=alpha, include_flagged=include_flagged
        )
        path = (out or directory) / "fallback-pageloads.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        df.to_csv(path, index=False)
        if not _files_or_json([path], as_json, cells=_records(df)):
            typer.echo(df.drop(columns=["cell_id"]).to_string(index=False))
        return
    from ..analyses.fallback.from_store import analyze_store

    alpha = 0.05 if alpha is None else alpha
    result = analyze_store(
        directory,
        quic_arm=quic_arm,
        tcp_arm=tcp_arm or "h2",
        metric=metric,
        higher_is_better=not lower_is_better,
        alpha=alpha,
        include_flagged=include_flagged,
        step_s=step_s,
        cause=cause,
        max_lag_s=max_lag_s,
    )
    if _files_or_json(
        result.write(out or directory), as_json, patterns=_records(result.patterns), summary=result.summary
    ):
        return
    columns = [
        "pattern",
        "n_quic",
        "n_tcp",
        "mean_quic",
        "mean_tcp",
        "p_welch",
        "verdict",
        "tcp_better_or_same_share",
        "fell_back",
        "tcp_flow",
        "tcp_bytes_share",
        "median_corr_B",
        "median_corr_S",
        "suitable",
        "granger_B_share",
        "granger_S_share",
    ]
    typer.echo(
        result.patterns[[c for c in columns if c in result.patterns]].to_string(
            index=False, float_format=lambda x: f"{x:.3g}"
        )
    )
    pairs = result.summary["pairs"]
    typer.echo(
        f"session pairs (same cell and round; Welch on the temporal QoE's block means, 'same' within "
        f"the margin): {pairs['pairs']}; TCP better {pairs['tcp_better']}, the same {pairs['same']}, "
        f"undecided {pairs['undecided']}, QUIC better {pairs['quic_better']}, not testable "
        f"{pairs['not testable']}; sessions without {metric}: {result.summary['missing_metric']}"
    )
    for name in ("all", "tcp_better_or_same"):
        s = result.summary[name]
        typer.echo(
            f"{name}: {s['fell_back']}/{s['sessions']} sessions fell back, {s['tcp_flow']} had a TCP "
            f"flow ({s['tcp_bytes_share']:.0%} of bytes over TCP); {s['suitable']} suitable; median corr B "
            f"{s['median_corr_B']:.2f}, S {s['median_corr_S']:.2f}; "
            f"Granger (shift-null p, Holm over B and S) at {alpha}: "
            f"B {s['granger_B_share']:.0%} of {s['tested_B']}, S {s['granger_S_share']:.0%} "
            f"of {s['tested_S']}, either {s['granger_either_share']:.0%}"
        )


@analyze_app.command("intervention")
def intervention(
    directory: Path = typer.Argument(..., help="experiment directory of a video scenario with [intervention]"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="output folder [default: DIR]"),
    alpha: Optional[float] = typer.Option(None, "--alpha", help="significance level [default: the scenario's]"),
    include_flagged: bool = typer.Option(False, "--include-flagged", help="keep runs the audit flagged"),
    as_json: bool = typer.Option(False, "--json", help="print the tables as JSON (records) instead of text"),
) -> None:
    """Causality by experiment: the average treatment effect of a randomised QUIC break (and the
    fallback it forces) on QoE, bitrate and stall time, beside the Granger verdicts of the same
    sessions. Writes intervention-ate.csv, -sessions.csv and -summary.json."""
    from ..analyses.fallback.intervention import analyze_intervention
    from ..errors import check_output, check_range

    check_output(out or directory, "--out", directory=True)
    if alpha is not None:
        check_range("--alpha", alpha, 0, 1, low_open=True, high_open=True, hint="a significance level, e.g. 0.05")
    result = analyze_intervention(directory, alpha=alpha, include_flagged=include_flagged)
    if _files_or_json(
        result.write(out or directory), as_json, effects=_records(result.effects), summary=result.summary
    ):
        return
    cols = [
        "scope",
        "metric",
        "n_treated",
        "n_control",
        "mean_treated",
        "mean_control",
        "ate",
        "ci_low",
        "ci_high",
        "p",
        "verdict",
    ]
    typer.echo(result.effects[cols].to_string(index=False, float_format=lambda x: f"{x:.3g}"))
    s = result.summary
    typer.echo(
        f"treated {s['treated']} (fell back {s['compliance']['treated_fell_back']}), control {s['control']} "
        f"(fell back {s['compliance']['control_fell_back']}); {s['estimator']}"
    )
    for arm in ("treated", "control"):
        g = s["granger"][arm]
        typer.echo(
            f"Granger, {arm}: {g['fell_back']}/{g['sessions']} fell back, {g['suitable']} suitable; p<{s['alpha']:g}: "
            f"B {g['granger_B_share']:.0%} of {g['tested_B']}, S {g['granger_S_share']:.0%} of {g['tested_S']}, "
            f"either {g['granger_either_share']:.0%} of {g['tested_either']}"
        )
    if s["granger_note"]:
        typer.echo(f"Granger not run: {s['granger_note']}")
    typer.echo(f"observational vs interventional: {s['agreement']}")


def _files_or_json(written: list[Path], as_json: bool, **tables) -> bool:
    """Print the files an analysis wrote, or (--json) them and its tables as one document;
    True when that was all (JSON), False when the text tables follow."""
    if as_json:
        typer.echo(json.dumps({"files": [str(p) for p in written], **tables}, indent=1, default=float))
        return True
    for path in written:
        typer.echo(path)
    return False


def _records(df) -> list[dict]:
    return json.loads(df.to_json(orient="records"))


def register(app: typer.Typer) -> None:
    app.add_typer(analyze_app, name="analyze")
