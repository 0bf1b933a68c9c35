"""Report section: inferred congestion-control state machines, false losses, cwnd timeline.

Kakhki et al. §4.2/§5.1: explain each difference from the protocols' inner states. For each
protocol and server stack (ours, another QUIC stack at its version, TCP): the state machine
of all runs (Fig. 3), per cell the entries into loss-handling states and the loss
accounting (declared vs spurious, by trigger), for each impaired cell what changes against
its unimpaired twin (StateDiff), the invariants, and the congestion window of one run per
QUIC stack beside one TCP run (Fig. 5). A stack whose qlog has no congestion_state_updated
gets derived states, and the section says how.
"""

from __future__ import annotations

import html
from typing import Any

import numpy as np
import pandas as pd


# Entries into these states are what §5 reads as "the protocol thought it lost packets".
LOSS_STATES = {
    "QUIC": ("Recovery", "RetransmissionTimeout", "TailLossProbe"),
    "TCP": ("Disorder", "Recovery", "Loss", "CWR"),
}
DIFF_ROWS = 8


def _e(x: Any) -> str:
    return html.escape(str(x))


def _num(v: Any, fmt: str = "{:.1f}") -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return "–"
    return fmt.format(v)


def _cell_label(dims: dict, profile: dict, workload: str) -> str:
    """Short: "10 Mbit/s 36 ms, reorder 5% 10 ms early, 1x1m" (impairments from the profile)."""
    from ...render.layout import format_dim

    parts = [
        f"{format_dim('rate_mbit', dims.get('rate_mbit'))} {format_dim('rtt_ms', dims.get('rtt_ms'))}"
        if dims.get("rate_mbit")
        else str(dims.get("link", ""))
    ]
    for where in ("", "up", "down"):
        d = profile if not where else (profile.get(where) or {})
        pre = f"{where} " if where else ""
        if d.get("reorder"):
            r = d["reorder"]
            parts.append(f"{pre}reorder {r['probability'] * 100:g}% {r['ahead_ms']:g} ms early")
        if d.get("loss"):
            parts.append(f"{pre}loss {d['loss'] * 100:g}%")
        if d.get("jitter_ms"):
            parts.append(f"{pre}jitter {d['jitter_ms']:g} ms")
        if d.get("gilbert_elliott"):
            parts.append(f"{pre}bursty loss")
    return ", ".join(parts + [workload])


def _table(headers: list[str], rows: list[list[str]], cls: str = "") -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _cell_rows(by_cell: dict[str, list], labels: dict[str, str]) -> list[list[str]]:
    from ...analyses.states import TransitionGraph

    rows = []
    for cell_id, runs in by_cell.items():
        for protocol, stack in _stacks_of(runs):
            rs = [r for r in runs if r.protocol == protocol and r.stack == stack]
            g = TransitionGraph.infer([r.trace() for r in rs])
            loss = pd.DataFrame([r.losses().as_dict() for r in rs])
            entries = sum(g.entries(s) for s in LOSS_STATES[protocol])
            share = g.states.set_index("state")["dwell_share"]
            rec_share = sum(float(share.get(s, 0.0)) for s in LOSS_STATES[protocol])
            mean = lambda c: loss[c].astype(float).mean() if c in loss and loss[c].notna().any() else None  # noqa: E731
            rows.append(
                [
                    _e(labels.get(cell_id, cell_id)),
                    _e(_who(protocol, stack)),
                    str(len(rs)),
                    _num(float(g.entries("Recovery").mean())),
                    _num(float(np.mean(entries))),
                    _num(rec_share * 100, "{:.0f}%"),
                    _num(mean("declared_lost")),
                    _num(mean("spurious")),
                    _num(mean("by_packet_threshold")),
                    _num(mean("by_time_threshold")),
                    _num(mean("network_drops")),
                ]
            )
    return rows


def _stacks_of(runs: list) -> list[tuple[str, str]]:
    """(protocol, server stack) pairs of the runs: QUIC stacks first (ours leading), TCP last."""
    return sorted({(r.protocol, r.stack) for r in runs}, key=lambda p: (p[0] != "QUIC", p[1] != "ours", p))


def _who(protocol: str, stack: str) -> str:
    return protocol if stack == protocol else f"{protocol} {stack}"


def _source_note(m) -> str:
    """How the machine's states were obtained, for other stacks (ours and TCP: the intro)."""
    from ...qlog.dialects import DERIVED_STATES_NOTE, EMITTED_STATES_NOTE

    if m.stack in ("ours", "TCP", ""):
        return ""
    note = DERIVED_STATES_NOTE if m.states_source == "derived" else EMITTED_STATES_NOTE
    return f'<p class="note">{_e(m.stack)} states: {_e(note)}</p>'


def _diff_html(base_runs: list, runs: list, label: str, base_label: str, alpha: float) -> str:
    from ...analyses.states import compare
    from ...analyses.states.diff import protocols_in

    parts = []
    for protocol, stack in _stacks_of(runs):
        base = [r for r in base_runs if r.stack == stack]
        if protocol not in protocols_in(base):
            continue
        d = compare(
            base, [r for r in runs if r.stack == stack], protocol, label_a=base_label, label_b=label, alpha=alpha
        )
        moved = d.rows[d.rows.direction != "same"]
        if moved.empty:
            continue
        rows = moved.sort_values("p").head(DIFF_ROWS)
        body = [
            [
                _e(r.item),
                _e(r.direction) + ("" if r.significant else " (n.s.)"),
                _num(r.mean_a, "{:.2f}"),
                _num(r.mean_b, "{:.2f}"),
                f"{r.runs_a}/{r.n_a}",
                f"{r.runs_b}/{r.n_b}",
                _num(r.p, "{:.3g}"),
                _num(r.p_adjusted, "{:.3g}"),
            ]
            for r in rows.itertuples()
        ]
        headline = "; ".join(
            f"{_e(r.item)} {_num(r.mean_a, '{:.1f}')} → {_num(r.mean_b, '{:.1f}')}" + ("*" if r.significant else "")
            for r in rows.head(3).itertuples()
        )
        parts.append(
            f"<details><summary><b>{_e(_who(protocol, stack))}</b>, {_e(label)}: {headline}</summary>"
            + _table(
                ["item", "change", "mean/run twin", "mean/run this", "runs twin", "runs this", "p", "p (Holm)"],
                body,
                "diff",
            )
            + "</details>"
        )
    return "".join(parts)


def section(store, analysis):
    from ...analyses.states import analyse_runs, load_runs, to_dot, to_svg
    from ...analyses.states.export import cwnd_groups, slug
    from ...analyses.states.timeline import cwnd_figure
    from ...analyses.states.twins import twins
    from ...render.figures import to_svg as fig_svg
    from ...render.html import Section

    runs = load_runs(store.directory, store=store)
    if not runs:
        return None
    cells = store.cells_frame()
    labels = {
        c.cell_id: _cell_label(c.dims or {}, c.link_profile or {}, (c.dims or {}).get("workload", ""))
        for c in cells.itertuples()
    }
    alpha = float(getattr(getattr(analysis, "statistics", None), "alpha", 0.01) or 0.01)
    out = [
        "<p>Congestion-control states inferred from the server's logs (QUIC: the "
        "instrumented controller's Table 3 states; TCP: Linux <code>ca_state</code>), as in "
        "Kakhki et al. §4.2/§5.1. <em>Spurious</em> losses are packets declared lost that the "
        "link delivered (declared − dropped by the link; TCP also DSACK); QUIC losses are "
        "split by trigger (packet threshold = reordering threshold, time threshold).</p>"
    ]

    a = analyse_runs(runs)
    for m in a.machines:
        dot = to_dot(m.graph, title=f"{m.protocol} {m.label}, all cells")
        svg = to_svg(dot)
        # Graphviz numbers its elements from 1 in every SVG: keep ids unique in the page.
        fig = svg.replace(' id="', f' id="states-{m.key}-') if svg else f"<pre>{_e(dot)}</pre>"
        inv_text = "; ".join(_e(i) for i in m.invariants if "Init" not in (i.a, i.b))
        out.append(
            f"<h3>{_e(m.protocol)} state machine, {_e(m.label)}, {m.graph.n_traces} runs</h3>"
            + _source_note(m)
            + f'<div class="figure states-graph">{fig}</div>'
            f"<details><summary>invariants holding in all {m.graph.n_traces} runs "
            f"(Synoptic: AlwaysFollowedBy, NeverFollowedBy, AlwaysPrecedes)</summary>"
            f"<p>{inv_text}</p></details>"
        )

    by_cell: dict[str, list] = {}
    for r in runs:
        by_cell.setdefault(r.cell_id, []).append(r)
    out.append(
        "<h3>Loss-handling states and false losses per cell</h3>"
        + _table(
            [
                "cell",
                "protocol / server stack",
                "runs",
                "Recovery entries/run",
                "loss-state entries/run",
                "time in loss states",
                "declared lost/run",
                "spurious/run",
                "by packet threshold/run",
                "by time threshold/run",
                "dropped by link/run",
            ],
            _cell_rows(by_cell, labels),
        )
    )

    # Each impaired cell against its unimpaired twin (analyses.states.twins): what the impairment changes.
    diffs = [
        _diff_html(by_cell[twin], by_cell[cid], labels[cid], labels[twin], alpha)
        for cid, twin in twins(cells).items()
        if cid in by_cell and twin in by_cell
    ]
    if any(diffs):
        out.append(
            "<h3>What each impairment changes</h3><p>Per run counts of transitions, state "
            "entries and losses, impaired cell vs the same cell without the impairment. "
            "Presence: Fisher's exact test; per-run counts: Mann-Whitney U; Holm across "
            f"items; alpha {alpha:g}; n.s. = not significant, * = significant. Items: "
            "<code>a-&gt;b</code> transitions, <code>enter:X</code> state entries, "
            "<code>loss:...</code> loss accounting.</p>" + "".join(diffs)
        )

    # Fig. 5: cwnd of one QUIC and one TCP run from the cell with the most spurious losses.
    def spurious_of(cid: str) -> float:
        vals = [r.losses().spurious for r in by_cell[cid]]
        vals = [v for v in vals if v is not None]
        return float(np.mean(vals)) if vals else -1.0

    worst = max(by_cell, key=spurious_of)
    groups = cwnd_groups(type(a)(runs=by_cell[worst]))
    if groups:
        out.append(
            "<h3>Congestion window over time</h3>"
            f"<p>Per QUIC server stack, one of its runs beside one TCP run of the cell with the "
            f"most spurious losses, {_e(labels.get(worst, worst))} (median run by loss events). "
            f"Circles: loss events; strip: states.</p>"
        )
        for stack, logs in groups:
            fig = cwnd_figure(logs, f"cwnd, {stack}: {labels.get(worst, worst)}")
            out.append(fig_svg(fig, f"states-cwnd-{slug(stack)}"))
    return Section(id="states", title="Root cause: congestion-control states", html="".join(out))
