"""Report section: each arm's ECN, read from the wire (analyses.ecn), where a link of the
experiment marks ECN-capable packets (an AQM with `ecn`, DualPI2) or fakes an ECN path fault
(a middlebox's `ecn`). One row per arm (a stack as server and client, kernel TCP), or per
stack where the cells are stacks (a conformance run: the ECN family of the conformance
kind, scenarios/conformance-ecn.toml), one column per entry the experiment's conditions can
answer, each with its evidence."""

from __future__ import annotations

from html import escape
from pathlib import Path

from ...analyses.ecn import condition_of, ecn_table
from ...render.html import Section, numbers_table

ENTRIES = (
    "sends ECT",
    "reacts to CE",
    "window on CE (its log)",
    "behind bleaching (validation)",
    "behind an ECT black hole",
)


def _row_of(cell, arm: str) -> str | None:
    """The row a run's sender belongs to: its arm; where the cells are the stacks (a
    conformance run: a cell is a stack on one link), the stack of an `alone` run and the
    kernel's algorithm of a `kernel` run. The other arms are left out: a shared run mixes two
    senders toward the client, a fingerprint run is no bulk transfer."""
    dims = cell.dims() if cell is not None and hasattr(cell, "dims") else {}
    if "stack" not in dims:
        return arm
    if arm == "alone":
        return str(dims["stack"])
    if arm == "kernel":
        return f"kernel TCP ({dims.get('kernel_cc')})"
    return None


def section(store, analysis) -> Section | None:
    sc = analysis.scenario
    runs = analysis.runs
    if sc is None or runs.empty or "details" not in runs:
        return None
    try:
        cells = {c.id: c for c in sc.cells()}
    except (AttributeError, ValueError):
        return None
    conditions = {cid: condition_of(c.link) for cid, c in cells.items() if getattr(c, "link", None) is not None}
    if not any(c.marks or c.fault for c in conditions.values()):
        return None
    switch = {
        cid: "ecn=on" if c.options.ecn else "ecn=off"
        for cid, c in cells.items()
        if getattr(getattr(c, "options", None), "ecn", None) is not None
    }
    experiment = getattr(store, "directory", None)
    rows_of = [_row_of(cells.get(c), a) for c, a in zip(runs["cell_id"], runs["arm"])]
    runs = runs.assign(arm=rows_of)[[r is not None for r in rows_of]]
    table = ecn_table(runs, conditions, switch, experiment=Path(experiment) if experiment else None)
    if not table:
        return None
    entries = [e for e in ENTRIES if any(e in row for row in table.values())]
    rows = [[escape(arm), *(escape(row.get(e, "–")) for e in entries)] for arm, row in table.items()]
    note = (
        "<p class='note'>Per arm, over every run of the cells whose link sets each condition, toward "
        "the client (the data's direction): linkem counts each arriving packet's ECN codepoint "
        "before its middlebox, so behind a bleaching or ECT-dropping box the counts are still what "
        "the sender marked. Sends ECT: on the marking path without a fault. Validation: RFC 9000 "
        "§13.4.2 has a QUIC sender stop marking when its ACKs report no ECT. Reacts to CE: the "
        "marks the queue gave and the delay they held it at. Window on CE: from the sender's own "
        "qlog, how often a CE signal was followed within two round trips by a cut of its congestion "
        "window, and by what factor (median), beside its cut on a loss (RFC 9002 §7.3.2: the same, "
        "once per round trip).</p>"
    )
    return Section(id="ecn", title="ECN per sender", html=note + numbers_table(["arm", *entries], rows))
