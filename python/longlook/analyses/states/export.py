"""Write a StatesAnalysis / StateDiff to files and JSON (what `longlook states --out` makes).

Per machine (QUIC, TCP, or PROTOCOL-ARM): KEY.dot, KEY.svg (with Graphviz), and CSVs of
transitions, states (dwell), entries per run, invariants and loss accounting; cwnd.svg with
one run per QUIC stack with one TCP run of the set (Fig. 5): the first stack (ours when
present) in cwnd.svg, every other in cwnd-STACK.svg.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from .analysis import StatesAnalysis
from .diff import StateDiff
from .dot import to_dot, to_svg
from .timeline import cwnd_figure_svg
from ...stacks.base import OURS


def _clean(v: Any) -> Any:
    if isinstance(v, float) and math.isnan(v):
        return None
    if hasattr(v, "item"):
        return _clean(v.item())
    return v


def _records(df: pd.DataFrame) -> list[dict]:
    return [{k: _clean(v) for k, v in row.items()} for row in df.to_dict(orient="records")]


def analysis_json(a: StatesAnalysis) -> dict:
    return {
        "machines": [
            {
                "protocol": m.protocol,
                "arm": m.arm,
                "stack": m.stack,
                "states_source": m.states_source,
                "runs": m.graph.n_traces,
                "transitions": _records(m.graph.transitions),
                "states": _records(m.graph.states),
                "entries_per_run": {
                    str(k): {s: int(n) for s, n in row.items()} for k, row in m.graph.entries_per_run.iterrows()
                },
                "invariants": [{"kind": i.kind, "a": i.a, "b": i.b, "support": i.support} for i in m.invariants],
                "losses": _records(m.losses),
            }
            for m in a.machines
        ]
    }


def diff_json(diffs: list[StateDiff]) -> dict:
    return {
        "diffs": [
            {
                "protocol": d.protocol,
                "a": d.label_a,
                "b": d.label_b,
                "n_a": d.n_a,
                "n_b": d.n_b,
                "alpha": d.alpha,
                "test": "Fisher exact (presence, when one side never has the item), Mann-Whitney U "
                f"(per-run counts), {'Holm over the items' if d.holm else 'no correction'}; "
                "status: the decisive test's verdict, direction: the data's way",
                "rows": _records(d.rows),
            }
            for d in diffs
        ]
    }


def _stack_order(stack: str) -> tuple:
    return (stack == "TCP", stack != OURS, stack)


def _examples(a: StatesAnalysis) -> list[tuple[str, str, object]]:
    """(stack, label, log): one run per stack (QUIC stacks, ours first, then TCP), the run
    with the median loss events."""
    picked = []
    for stack in sorted({r.stack for r in a.runs}, key=_stack_order):
        rs = sorted((r for r in a.runs if r.stack == stack), key=lambda r: r.losses().loss_events)
        r = rs[len(rs) // 2]
        who = "TCP" if stack == "TCP" else f"{r.protocol} {stack}"
        picked.append((stack, f"{who} {r.arm} {r.run_id[-4:]}", r.log))
    return picked


def cwnd_groups(a: StatesAnalysis) -> list[tuple[str, list]]:
    """(stack, [(label, log)]) per QUIC stack: its example run with the TCP example when there
    is one (Fig. 5 per stack); only TCP when no QUIC run has a log."""
    examples = _examples(a)
    tcp = [(label, log) for stack, label, log in examples if stack == "TCP"]
    groups = [(stack, [(label, log), *tcp]) for stack, label, log in examples if stack != "TCP"]
    return groups or ([("TCP", tcp)] if tcp else [])


def slug(stack: str) -> str:
    return "".join(c if c.isalnum() or c in ".-" else "-" for c in stack)


def write_analysis(a: StatesAnalysis, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []

    def put(name: str, text: str) -> None:
        p = out / name
        p.write_text(text)
        written.append(p)

    for m in a.machines:
        dot = to_dot(m.graph)
        put(f"{m.key}.dot", dot)
        svg = to_svg(dot)
        if svg:
            put(f"{m.key}.svg", svg)
        put(f"{m.key}-transitions.csv", m.graph.transitions.to_csv(index=False))
        put(f"{m.key}-states.csv", m.graph.states.to_csv(index=False))
        put(f"{m.key}-entries-per-run.csv", m.graph.entries_per_run.to_csv(index_label="run_id"))
        put(
            f"{m.key}-invariants.csv",
            pd.DataFrame(
                [{"kind": i.kind, "a": i.a, "b": i.b, "support": i.support} for i in m.invariants],
                columns=["kind", "a", "b", "support"],
            ).to_csv(index=False),
        )
        put(f"{m.key}-losses.csv", m.losses.to_csv(index=False))
    for i, (stack, logs) in enumerate(cwnd_groups(a)):
        put(
            "cwnd.svg" if i == 0 else f"cwnd-{slug(stack)}.svg",
            cwnd_figure_svg(logs, f"congestion window over time: {stack}"),
        )
    put("states.json", json.dumps(analysis_json(a), indent=1))
    return written
