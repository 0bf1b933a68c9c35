"""The conformance section of the report: per stack and congestion control, how close its
envelope is to the kernel's (overlap with its interval across rounds) beside how close the
kernel's is to itself, with the verdict from the difference; its share beside the kernel
(paired per run); and every parameter with the kernel's values, the specification's bound
and the verdict across runs beside it."""

from __future__ import annotations

import math
from html import escape

import pandas as pd

from ...core.status import counted_runs
from ...render.html import Section
from .aggregate import (
    diagnose,
    envelope_overlaps,
    envelope_verdicts,
    overlap_summary,
    parameter_summary,
    share_comparisons,
)

VERDICT_CLASS = {
    "conforms": "better",
    "deviates": "worse",
    "not measurable": "inconclusive",
    "inconclusive": "inconclusive",
    "outside the bound": "worse",
    "differs": "worse",
}


def _n(x, fmt: str = "{:.3g}") -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    return fmt.format(x)


def _table(headers: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def cell_labels(store) -> dict[str, str]:
    cells = store.cells_frame()
    out = {}
    for cid, d in zip(cells["cell_id"], cells["dims"]):
        buf = d.get("buffer_bytes")
        out[cid] = (
            f"{d.get('stack')} {d.get('cc')} · {_n(d.get('rate_mbit'), '{:g}')} Mbit/s "
            f"{_n(d.get('rtt_ms'), '{:g}')} ms · buffer {f'{buf / 1000:g} KB' if buf else 'link default'}"
        )
    return out


def _verdict(text: str, detail: str = "") -> str:
    cls = VERDICT_CLASS.get(text, "")
    return f'<span class="{cls}">{escape(text)}</span>' + (f" ({escape(detail)})" if detail else "")


def conformance_html(store, analysis) -> str:
    runs = analysis.runs
    if runs.empty:
        return ""
    labels = cell_labels(store)
    flagged_out = analysis.exclude_flagged
    st = analysis.statistics
    overlaps = overlap_summary(envelope_overlaps(store, runs, flagged_out), st.confidence)
    envelopes = envelope_verdicts(store, runs, alpha=st.alpha, holm_cells=st.holm, exclude_flagged=flagged_out)
    shares = share_comparisons(
        runs, alpha=st.alpha, exclude_flagged=flagged_out, holm_cells=st.holm, survivorship_alpha=st.survivorship_alpha
    )
    counted = counted_runs(runs, "share", exclude_flagged=flagged_out)
    share_mean = counted[counted["arm"] == "shared"].groupby("cell_id")["share"].mean()
    rows = []
    for cid in labels:
        o = overlaps[overlaps["cell_id"] == cid]
        e = envelopes[envelopes["cell_id"] == cid]
        c = shares.get(cid)
        ov = (
            (
                f"{_n(o['overlap'].iloc[0], '{:.2f}')} [{_n(o['low'].iloc[0], '{:.2f}')}, "
                f"{_n(o['high'].iloc[0], '{:.2f}')}] (n={int(o['n'].iloc[0])})"
            )
            if len(o)
            else "–"
        )
        own = ev = "–"
        if len(e):
            r = e.iloc[0]
            own = f"{_n(r['within'], '{:.2f}')} (n={int(r['n_kernel'])})"
            detail = ", ".join(
                x
                for x in (
                    f"difference {_n(r['between'] - r['within'], '{:+.2f}')}" if r["between"] == r["between"] else "",
                    f"p={_n(r['p_adjusted'], '{:.2g}')}" if r["p_value"] == r["p_value"] else "",
                    str(r["reason"] or ""),
                )
                if x
            )
            ev = _verdict(r["verdict"], detail)
        sh = _n(share_mean.get(cid), "{:.2f}")
        cmp = (
            (
                f"{_n(c.percent_difference, '{:+.1f}')}% [{_n(c.ci_low, '{:+.1f}')}, {_n(c.ci_high, '{:+.1f}')}], "
                f"p={_n(c.p_adjusted, '{:.2g}')}{' (Holm)' if c.holm else ''}, {escape(c.verdict_text)}"
            )
            if c
            else "–"
        )
        rows.append([escape(labels[cid]), ov, own, ev, sh, cmp])
    holm_note = " p values are Holm-adjusted across the cells (the scenario's <code>holm</code>)." if st.holm else ""
    parts = [
        "<p>Each cell runs, per round, the stack alone, the Linux kernel's implementation of the "
        "same algorithm alone (our endpoint's HTTP/2 over kernel TCP), and both at once. "
        "<b>Envelope overlap</b> (Mishra et al., IMC'23): the area shared by the convex hulls of "
        "the two flows' (throughput at the router, queueing delay) points over the area of their "
        "union, 1 = the same envelope; mean and 95% t-interval across rounds. Two runs of one sender "
        "never overlap fully (how much depends on the number of bins), so beside it is the "
        "<b>kernel's overlap with itself</b>: the mean over pairs of its runs in different rounds, what "
        "an identical stack scores here. The <b>envelope verdict</b> comes from the difference between "
        "the stack's overlap with the kernel (every pair of runs) and the kernel's with itself: "
        "<i>differs</i> when a permutation test over which runs are the kernel's puts it below what "
        f"relabelling gives, at p &lt; {st.alpha:g} (3 rounds a side cannot reach p below 0.05: "
        "inconclusive). Queueing delay is measured at the router: the time the flow's packets waited in "
        "the emulated buffer (arrival to start of transmission), the same measure for the "
        "kernel and every stack. <b>Share</b>: the stack's part "
        "of the bottleneck beside the kernel flow (0.5 = equal); the comparison is paired per run."
        + holm_note
        + "</p>",
        _table(
            [
                "cell",
                "envelope overlap with the kernel [95% CI]",
                "kernel with itself",
                "envelope verdict",
                "share beside kernel",
                "stack vs kernel throughput (shared, paired)",
            ],
            rows,
        ),
    ]
    try:
        table = store.table("conformance")
    except Exception:  # noqa: BLE001 - an experiment stopped before its first run
        table = pd.DataFrame()
    if not table.empty:
        summary = parameter_summary(
            table,
            runs,
            flagged_out,
            alpha=st.alpha,
            test=st.test,
            holm_cells=st.holm,
            survivorship_alpha=st.survivorship_alpha,
        )
        prow = []
        for r in summary.itertuples():
            detail = ", ".join(
                x
                for x in (
                    f"p={_n(r.p_adjusted, '{:.2g}')}" if r.p_adjusted == r.p_adjusted else "",
                    str(r.reason or ""),
                )
                if x
            )
            prow.append(
                [
                    escape(labels.get(r.cell_id, r.cell_id)),
                    escape(f"{r.stack} ({r.version})"),
                    escape(r.cc),
                    escape(r.parameter),
                    escape(r.values),
                    escape(r.kernel_values or ""),
                    escape(r.bound),
                    _verdict(r.verdict, detail),
                    escape(r.outside),
                    escape(r.self or ""),
                    escape(str(r.note)),
                ]
            )
        parts += [
            "<h3>Parameters against the specifications</h3>",
            "<p>Per cell, the stack (alone runs) and the kernel reference (kernel runs): the per-run values "
            "(median [range] (n)), the kernel's values in the stack's specification beside the stack's, "
            "and the specification's bound. One run's value against the bound says little (the kernel, "
            "the reference, falls outside it in some runs), so the verdict is drawn across runs: "
            "<b>deviates</b> only when the scenario's test of the stack's values against the kernel's says "
            f"they differ at p &lt; {st.alpha:g} after Holm over the stack's parameters"
            + (" and the cells" if st.holm else "")
            + ", on the side that takes the stack out of the bound "
            "(where the kernel's log has no values, the stack's centre against the bound with its own "
            f"spread); <b>conforms</b> only when the {1 - 2 * st.alpha:.0%} interval of the stack's centre "
            "(the mean on the log scale) lies within the bound; else inconclusive. The kernel's own row: "
            "conforms, outside the bound, or inconclusive by the same interval, and how often its runs, "
            "split in two, call it deviant from itself. <i>Runs outside</i>: each run's own value against "
            "the bound. Initial window: RFC 9002 §7.2 (TCP: RFC 6928); "
            "multiplicative decrease: RFC 9438 (Cubic 0.7), RFC 5681 (Reno 0.5); Cubic's C from a fit "
            "of W(t) = C(t−K)³ + W_max (RFC 9438 §4.2); slow-start exit: the RTT rise at the exit "
            "against HyStart++'s eta (RFC 9406); pacing: bursts against the initial window "
            "(RFC 9002 §7.7); ACK frequency: RFC 9000 §13.2.2; datagram size: RFC 9000 §14.</p>",
            _table(
                [
                    "cell",
                    "who",
                    "cc",
                    "parameter",
                    "runs' values",
                    "kernel's values",
                    "bound",
                    "verdict",
                    "runs outside",
                    "kernel against itself",
                    "last run's note",
                ],
                prow,
            ),
        ]
    parts += diagnosis_html(store, runs, labels, flagged_out) + fingerprint_html(store)
    return "\n".join(parts)


def diagnosis_html(store, runs: pd.DataFrame, labels: dict[str, str], exclude_flagged: bool = True) -> list[str]:
    cells = store.cells_frame()
    rows = []
    for cid, d in zip(cells["cell_id"], cells["dims"]):
        if not d.get("rate_mbit"):
            continue
        g = diagnose(
            runs[runs["cell_id"] == cid],
            float(d["rate_mbit"]),
            int(d.get("object_size") or 0),
            exclude_flagged,
            d.get("buffer_bytes"),
        )
        if g.get("slow") is None:
            continue
        rows.append(
            [
                escape(labels.get(cid, cid)),
                _n(g.get("utilization"), "{:.0%}"),
                ("<b>" if g["slow"] else "") + escape(g["reason"]) + ("</b>" if g["slow"] else ""),
                escape(g["evidence"]),
            ]
        )
    if not rows:
        return []
    return [
        "<h3>Why the slow ones are slow</h3>",
        "<p>Each stack alone against the link's configured rate (IP bytes at the router; headers "
        "cost 3-8%). Below 90%, the medians of its alone runs say what held it back, checked in this "
        "order: CPU-bound (its server's or client's CPU seconds over the transfer's duration reach "
        "0.85 of a core), processing-limited (its RTT rose by more than 1.5x the buffer's drain time: "
        "the delay is at the endpoints), stalled (idle for 2+ RTTs over 10%+ of the transfer), "
        "window-limited (median congestion window below the path's BDP), "
        "pacing-limited (it sends steadily, the 10th-percentile gap between its releases at least half "
        "the median, at a rate under 90% of the link's, while cwnd / srtt allows the link's rate and "
        "less than 90% of cwnd is in flight; a send loop that slow for want of CPU, under the CPU "
        "rule, looks the same), "
        "flow-control or application-limited (a window of a BDP or more, less than 60% of it in "
        "flight), loss-limited (2+ window cuts per second with the queue not filled); else not "
        "diagnosed, with the figures that were checked.</p>",
        _table(["cell", "of the link", "diagnosis", "evidence (medians of the alone runs)"], rows),
    ]


FINGERPRINT_FIELDS = [
    ("server", "initial_max_data"),
    ("server", "initial_max_stream_data_bidi_local"),
    ("client", "initial_max_data"),
    ("client", "initial_max_stream_data_bidi_local"),
    ("client", "max_data_updates"),
    ("client", "max_data_growth"),
    ("client", "max_stream_data_updates"),
    ("client", "max_stream_data_growth"),
    ("server", "max_udp_payload_size"),
    ("server", "max_datagram_sent"),
    ("server", "max_ack_delay"),
    ("client", "max_ack_delay"),
    ("client", "ack_delay_median"),
]
# categorical dimensions from the fingerprint runs: (side, field) -> heading
FINGERPRINT_LABELS = {
    ("server", "stream_scheduling"): "stream scheduling (concurrency)",
    ("server", "zero_rtt"): "0-RTT, server (our client resuming)",
    ("client", "zero_rtt"): "0-RTT, its client resuming",
}


def fingerprint_html(store) -> list[str]:
    try:
        fp = store.table("fingerprint")
    except Exception:  # noqa: BLE001 - an experiment from before the table existed
        return []
    if fp.empty:
        return []
    med = fp.groupby(["stack", "version", "side", "field"])["value"].median()
    labelled = fp[fp["label"].notna()] if "label" in fp else fp.iloc[0:0]
    rows = []
    for (stack, version), _ in fp.groupby(["stack", "version"], sort=False):
        cells = [escape(f"{stack}"), escape(str(version))]
        for side, field in FINGERPRINT_LABELS:
            seen = labelled[
                (labelled["stack"] == stack)
                & (labelled["version"] == version)
                & (labelled["side"] == side)
                & (labelled["field"] == field)
            ]
            v = med.get((stack, version, side, field))
            cells.append(
                "–"
                if seen.empty
                else escape(", ".join(f"{k} ({n})" for k, n in seen["label"].value_counts().items()))
                + (f" · {_n(v, '{:.2g}')}" if field == "stream_scheduling" else "")
            )
        for side, field in FINGERPRINT_FIELDS:
            v = med.get((stack, version, side, field))
            cells.append(_n(v, "{:,.0f}" if v is not None and v == v and abs(v) >= 10 else "{:.3g}"))
        rows.append(cells)
    heads = (
        ["stack", "version"]
        + list(FINGERPRINT_LABELS.values())
        + [f"{side} {field}" for side, field in FINGERPRINT_FIELDS]
    )
    return [
        "<h3>Fingerprint of each stack (Marx et al., EPIQ'20)</h3>",
        "<p>Stream scheduling and 0-RTT come from the fingerprint runs (outcomes counted over runs): "
        "a page of 8 objects of 100 KB requested together over one connection, where concurrency is "
        "the sum of the responses' first-to-last-byte intervals over their span (1 = one after "
        "another: sequential; the number of objects = all side by side: round-robin), from the "
        "server's STREAM frames, else the client's per-object timings; and a resumed connection "
        "sending its request as 0-RTT: our client against every stack's server (the server's side: "
        "accepts, rejects, or sends no session ticket), and the stack's own client where it can "
        "resume in longlook (the client's side). The rest "
        "from the stack's server log of its alone runs (medians): the flow-control windows each "
        "side announced in its transport parameters (bytes; our endpoint's client side from its "
        "client's log, since quinn exposes no peer parameters), how often the client raised the "
        "connection and stream windows (MAX_DATA, MAX_STREAM_DATA) and the last value over the "
        "announced one (growth, x), the datagram size announced and sent, the ACK delay announced "
        "(ms) and the client's measured ack_delay (ms). A dash: the stack's log does not show it.</p>",
        _table(heads, rows),
    ]


def conformance_section(store, analysis) -> Section | None:
    html = conformance_html(store, analysis)
    return (
        Section(id="conformance", title="Congestion-control conformance (Mishra IMC'23)", html=html) if html else None
    )
