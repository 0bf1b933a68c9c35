"""The conformance section of the report: per stack and congestion control, how close its
envelope is to the kernel's (overlap with its interval across rounds), its share beside the
kernel (paired per run), and every parameter with the specification's value beside it."""

from __future__ import annotations

import math
from html import escape

import pandas as pd

from ...core.status import counted_runs
from ...render.html import Section
from .aggregate import diagnose, envelope_overlaps, overlap_summary, parameter_summary, share_comparisons

VERDICT_CLASS = {"conforms": "better", "deviates": "worse", "not measurable": "inconclusive"}


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
        out[cid] = (f"{d.get('stack')} {d.get('cc')} · {_n(d.get('rate_mbit'), '{:g}')} Mbit/s "
                    f"{_n(d.get('rtt_ms'), '{:g}')} ms · buffer {f'{buf / 1000:g} KB' if buf else 'link default'}")
    return out


def conformance_html(store, analysis) -> str:
    runs = analysis.runs
    if runs.empty:
        return ""
    labels = cell_labels(store)
    flagged_out = analysis.exclude_flagged
    overlaps = overlap_summary(envelope_overlaps(store, runs, flagged_out), analysis.statistics.confidence)
    shares = share_comparisons(runs, alpha=analysis.statistics.alpha, exclude_flagged=flagged_out)
    counted = counted_runs(runs, "share", exclude_flagged=flagged_out)
    share_mean = counted[counted["arm"] == "shared"].groupby("cell_id")["share"].mean()
    rows = []
    for cid in labels:
        o = overlaps[overlaps["cell_id"] == cid]
        c = shares.get(cid)
        ov = (f"{_n(o['overlap'].iloc[0], '{:.2f}')} [{_n(o['low'].iloc[0], '{:.2f}')}, "
              f"{_n(o['high'].iloc[0], '{:.2f}')}] (n={int(o['n'].iloc[0])})") if len(o) else "–"
        sh = _n(share_mean.get(cid), "{:.2f}")
        cmp = (f"{_n(c.percent_difference, '{:+.1f}')}% [{_n(c.ci_low, '{:+.1f}')}, {_n(c.ci_high, '{:+.1f}')}], "
               f"p={_n(c.p_value, '{:.2g}')}, {escape(str(c.verdict.value if hasattr(c.verdict, 'value') else c.verdict))}"
               ) if c else "–"
        rows.append([escape(labels[cid]), ov, sh, cmp])
    parts = ["<p>Each cell runs, per round, the stack alone, the Linux kernel's implementation of the "
             "same algorithm alone (our endpoint's HTTP/2 over kernel TCP), and both at once. "
             "<b>Envelope overlap</b> (Mishra et al., IMC'23): the area shared by the convex hulls of "
             "the two flows' (throughput at the router, queueing delay) points over the area of their "
             "union, 1 = the kernel's envelope; mean and 95% t-interval across rounds. "
             "Queueing delay is measured at the router: the time the flow's packets waited in "
             "the emulated buffer (arrival to start of transmission), the same measure for the "
             "kernel and every stack. <b>Share</b>: the stack's part "
             "of the bottleneck beside the kernel flow (0.5 = equal); the comparison is paired per run.</p>",
             _table(["cell", "envelope overlap [95% CI]", "share beside kernel",
                     "stack vs kernel throughput (shared, paired)"], rows)]
    try:
        table = store.table("conformance")
    except Exception:  # noqa: BLE001 - an experiment stopped before its first run
        table = pd.DataFrame()
    if not table.empty:
        summary = parameter_summary(table, runs, flagged_out)
        prow = []
        for r in summary.itertuples():
            cls = VERDICT_CLASS.get(r.verdict, "")
            prow.append([escape(labels.get(r.cell_id, r.cell_id)), escape(f"{r.stack} ({r.version})"), escape(r.cc),
                         escape(r.parameter), _n(r.measured), _n(r.reference), escape(r.unit),
                         f'<span class="{cls}">{escape(r.verdict)}</span>', escape(r.verdicts),
                         escape(r.tolerance), escape(str(r.note))])
        parts += ["<h3>Parameters against the specifications</h3>",
                  "<p>Per cell, the stack (alone runs) and the kernel reference (kernel runs): the median "
                  "measured value, the specification's, and the runs' verdicts (the cell's verdict is the "
                  "majority of the measurable ones). Initial window: RFC 9002 §7.2 (TCP: RFC 6928); "
                  "multiplicative decrease: RFC 9438 (Cubic 0.7), RFC 5681 (Reno 0.5); Cubic's C from a fit "
                  "of W(t) = C(t−K)³ + W_max (RFC 9438 §4.2); slow-start exit: the RTT rise at the exit "
                  "against HyStart++'s eta (RFC 9406); pacing: bursts against the initial window "
                  "(RFC 9002 §7.7); ACK frequency: RFC 9000 §13.2.2; datagram size: RFC 9000 §14.</p>",
                  _table(["cell", "who", "cc", "parameter", "measured", "reference", "unit", "verdict", "runs",
                          "tolerance", "last run's note"], prow)]
    parts += diagnosis_html(store, runs, labels, flagged_out) + fingerprint_html(store)
    return "\n".join(parts)


def diagnosis_html(store, runs: pd.DataFrame, labels: dict[str, str], exclude_flagged: bool = True) -> list[str]:
    cells = store.cells_frame()
    rows = []
    for cid, d in zip(cells["cell_id"], cells["dims"]):
        if not d.get("rate_mbit"):
            continue
        g = diagnose(runs[runs["cell_id"] == cid], float(d["rate_mbit"]), int(d.get("object_size") or 0),
                     exclude_flagged, d.get("buffer_bytes"))
        if g.get("slow") is None:
            continue
        rows.append([escape(labels.get(cid, cid)), _n(g.get("utilization"), "{:.0%}"),
                     ("<b>" if g["slow"] else "") + escape(g["reason"]) + ("</b>" if g["slow"] else ""),
                     escape(g["evidence"])])
    if not rows:
        return []
    return ["<h3>Why the slow ones are slow</h3>",
            "<p>Each stack alone against the link's configured rate (IP bytes at the router; headers "
            "cost 3-8%). Below 90%, the medians of its alone runs say what held it back, checked in this "
            "order: CPU-bound (its server's or client's CPU seconds over the transfer's duration reach "
            "0.85 of a core), processing-limited (its RTT rose by more than 1.5x the buffer's drain time: "
            "the delay is at the endpoints), stalled (idle for 2+ RTTs over 10%+ of the transfer), window-limited (median congestion window below the path's BDP), "
            "pacing-limited (it sends steadily, the 10th-percentile gap between its releases at least half "
            "the median, at a rate under 90% of the link's, while cwnd / srtt allows the link's rate and "
            "less than 90% of cwnd is in flight; a send loop that slow for want of CPU, under the CPU "
            "rule, looks the same), "
            "flow-control or application-limited (a window of a BDP or more, less than 60% of it in "
            "flight), loss-limited (2+ window cuts per second with the queue not filled); else not "
            "diagnosed, with the figures that were checked.</p>",
            _table(["cell", "of the link", "diagnosis", "evidence (medians of the alone runs)"], rows)]


FINGERPRINT_FIELDS = [("server", "initial_max_data"), ("server", "initial_max_stream_data_bidi_local"),
                      ("client", "initial_max_data"), ("client", "initial_max_stream_data_bidi_local"),
                      ("client", "max_data_updates"), ("client", "max_data_growth"),
                      ("client", "max_stream_data_updates"), ("client", "max_stream_data_growth"),
                      ("server", "max_udp_payload_size"), ("server", "max_datagram_sent"),
                      ("server", "max_ack_delay"), ("client", "max_ack_delay"), ("client", "ack_delay_median")]
# categorical dimensions from the fingerprint runs: (side, field) -> heading
FINGERPRINT_LABELS = {("server", "stream_scheduling"): "stream scheduling (concurrency)",
                      ("server", "zero_rtt"): "0-RTT, server (our client resuming)",
                      ("client", "zero_rtt"): "0-RTT, its client resuming"}


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
            seen = labelled[(labelled["stack"] == stack) & (labelled["version"] == version)
                            & (labelled["side"] == side) & (labelled["field"] == field)]
            v = med.get((stack, version, side, field))
            cells.append("–" if seen.empty else escape(", ".join(
                f"{k} ({n})" for k, n in seen["label"].value_counts().items()))
                + (f" · {_n(v, '{:.2g}')}" if field == "stream_scheduling" else ""))
        for side, field in FINGERPRINT_FIELDS:
            v = med.get((stack, version, side, field))
            cells.append(_n(v, "{:,.0f}" if v is not None and v == v and abs(v) >= 10 else "{:.3g}"))
        rows.append(cells)
    heads = (["stack", "version"] + list(FINGERPRINT_LABELS.values())
             + [f"{side} {field}" for side, field in FINGERPRINT_FIELDS])
    return ["<h3>Fingerprint of each stack (Marx et al., EPIQ'20)</h3>",
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
            _table(heads, rows)]


def conformance_section(store, analysis) -> Section | None:
    html = conformance_html(store, analysis)
    return Section(id="conformance", title="Congestion-control conformance (Mishra IMC'23)", html=html) if html else None
