"""Report section: every run, one row each, with links to its files (qlog, client qlog,
pcap, key log, HAR, server logs, ...) where they exist, and what its capture took on disk
(`[capture]`, core.capture). The same for every kind: the links come from the run's
`artifacts`, which every kind records. Links are relative to the experiment directory,
where `longlook report` writes the report by default."""

from __future__ import annotations

import html
import math
from pathlib import Path
from typing import Any

import pandas as pd

from ...core.trace_phase import DETAIL as TRACE_PHASE
from ...render.html import Section


# artifact key -> link text, in the order shown; any other artifact follows by its own name
LABELS = {
    "qlog": "qlog",
    "client_qlog": "client qlog",
    "pcap": "pcap",
    "pcap_b": "pcap (segment B)",
    "keylog": "key log",
    "har": "HAR",
    "tcp_log": "server TCP log",
    "qlog_raw": "server qlog (raw)",
    "client_qlog_raw": "client qlog (raw)",
    "netlog": "net-log",
    "proxy_log": "proxy log",
    "flow_log": "flow log",
    "fetch": "fetch JSON",
    "linkem": "linkem",
}


def _e(x: Any) -> str:
    return html.escape(str(x))


def format_bytes(n: float) -> str:
    """938 -> "938 B", 104741 -> "104.7 kB" (decimal units, as max_mb)."""
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def artifact_links(artifacts: dict[str, str] | None, directory: Path) -> str:
    """The run's files as links (HTML), known kinds first, files that are gone left out."""
    arts = {k: v for k, v in (artifacts or {}).items() if v and (Path(directory) / v).is_file()}
    order = [k for k in LABELS if k in arts] + sorted(k for k in arts if k not in LABELS)
    return " ".join(f'<a href="{_e(arts[k])}">{_e(LABELS.get(k, k.replace("_", " ")))}</a>' for k in order)


def capture_text(capture: Any) -> str:
    """A run's capture sizes (details["capture"]) in words: "pcap 104.7 kB, key log 938 B"."""
    if not isinstance(capture, dict):
        return ""
    parts = [
        f"{name} {format_bytes(capture[key])}"
        for key, name in (("pcap_bytes", "pcap"), ("pcap_b_bytes", "pcap B"), ("keylog_bytes", "key log"))
        if key in capture
    ]
    if capture.get("pcap_capped"):
        parts.append("pcap cut at its max_mb")
    return ", ".join(parts)


def _value(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return f"{v:.4g}" if isinstance(v, float) else _e(v)


def section(store, analysis) -> Section | None:
    runs: pd.DataFrame = analysis.runs
    if runs.empty:
        return None
    metric = analysis.metric
    has_capture = "capture" in runs and runs["capture"].map(lambda c: isinstance(c, dict)).any()
    # where each run met its trace (core.trace_phase): the arms of a round share it
    has_phase = TRACE_PHASE in runs and runs[TRACE_PHASE].notna().any()
    head = ["run", "cell", "round", "arm", "status", "trace phase (ms)" if has_phase else ""]
    head += [_e(metric.label) if metric else "", "files"]
    head = [h for h in head if h] + (["capture"] if has_capture else [])
    rows = []
    for r in runs.sort_values(["cell_id", "round", "position", "attempt"]).itertuples():
        cells = [
            f'<td class="mono">{_e(r.run_id)}</td>',
            f'<td class="mono">{_e(r.cell_id)}</td>',
            f'<td class="num">{r.round}</td>',
            f"<td>{_e(r.arm)}</td>",
            f"<td>{_e(r.status)}</td>",
        ]
        if has_phase:
            cells.append(f'<td class="num">{_value(getattr(r, TRACE_PHASE, None))}</td>')
        if metric:
            cells.append(f'<td class="num">{_value(getattr(r, metric.name, None))}</td>')
        cells.append(f"<td>{artifact_links(r.artifacts, store.directory)}</td>")
        if has_capture:
            cells.append(f"<td>{_e(capture_text(getattr(r, 'capture', None)))}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    total = _capture_total(runs) if has_capture else ""
    body = (
        f"<p class='note'>Each run's files, relative to the experiment directory.{total}</p>"
        + _server_logs(Path(store.directory))
        + f"<details><summary>{len(rows)} run{'s' if len(rows) != 1 else ''}</summary>"
        "<table class='data'><thead><tr>"
        + "".join(f"<th>{h}</th>" for h in head)
        + "</tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table></details>"
    )
    return Section(id="runs", title="Runs and their files", html=body)


SERVER_LOG_FILES = {"server.stderr": "stderr", "keys.log": "key log", "connections.jsonl": "connections"}


def _server_logs(directory: Path) -> str:
    """The servers' own logs (stacks.servers: one folder per server under server-logs/),
    shared by the runs each served: what they printed, their key logs, their connections."""
    items = []
    for folder in sorted(p for p in (directory / "server-logs").glob("*") if p.is_dir()):
        links = [
            f'<a href="{_e(f"server-logs/{folder.name}/{name}")}">{label}</a>'
            for name, label in SERVER_LOG_FILES.items()
            if (folder / name).is_file()
        ]
        if links:
            items.append(f"{_e(folder.name)}: {' '.join(links)}")
    return f"<p class='note'>Server logs: {'; '.join(items)}.</p>" if items else ""


def _capture_total(runs: pd.DataFrame) -> str:
    caps = [c for c in runs["capture"] if isinstance(c, dict)]
    pcap = sum(c.get("pcap_bytes", 0) + c.get("pcap_b_bytes", 0) for c in caps)
    keys = sum(c.get("keylog_bytes", 0) for c in caps)
    capped = sum(bool(c.get("pcap_capped")) for c in caps)
    text = f" Captures: pcap {format_bytes(pcap)}, key logs {format_bytes(keys)} in all"
    return text + (f"; {capped} pcap{'s' if capped != 1 else ''} reached max_mb." if capped else ".")
