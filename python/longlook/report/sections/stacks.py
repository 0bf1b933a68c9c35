"""Report section: the QUIC stacks of an experiment. Shown when an arm runs another
stack's server or client.

Per arm: its server and client (exact versions, as recorded), the server's congestion
control, the counted runs and their median PLT over all cells, and which Table-3 states its
server's qlog shows (emitted by the stack, or derived from its metrics: see
qlog/dialects.py). Then, when `stacks-bench.json` lies beside the store
(`longlook bench stacks --out DIR/stacks-bench.json`), each stack's 10 MB at
100 Mbit/s, 36 ms as a share of the physical limit.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

STATE_SAMPLE_RUNS = 3  # qlogs read per arm for the states column


def _e(x: Any) -> str:
    return html.escape(str(x))


def _arm_rows(store, analysis) -> list[dict]:
    from ...qlog import read_qlog
    from ...analyses.states.trace import StateTrace
    from ...core.status import counted_runs
    from ...stacks.base import OURS
    from ...stacks.registry import is_stack, resolve

    sc = analysis.scenario
    versions = ((store.experiment() or {}).get("versions") or {}).get("stacks") or {}
    good = counted_runs(analysis.runs, "plt_ms")
    rows = []
    for a in sc.arms:
        server = a.server or getattr(sc, "server", OURS)
        client = a.client or sc.client
        s_spec = resolve(server).spec if server != OURS else OURS
        c_spec = resolve(client).spec if is_stack(client) else client
        cc = resolve(server).cc(a.server_cc) if server != OURS else (a.quic_cc or sc.options.quic_cc[0])
        runs = good[good["arm"] == a.label]
        states, how = set(), set()
        for r in runs.head(STATE_SAMPLE_RUNS).itertuples():
            rel = (r.artifacts or {}).get("qlog")
            if not rel or not (Path(store.directory) / rel).is_file():
                continue
            log = read_qlog(Path(store.directory) / rel)
            how.add(((log.header.get("trace") or {}).get("longlook") or {}).get("states", "emitted"))
            states.update(StateTrace.from_qlog(log, r.run_id).states[1:])
        rows.append(
            {
                "arm": a.label,
                "protocol": a.protocol,
                "server": versions.get(s_spec, s_spec),
                "client": versions.get(c_spec, c_spec),
                "cc": cc if a.protocol == "h3" else "(TCP)",
                "n": len(runs),
                "plt": float(runs["plt_ms"].median()) if len(runs) else None,
                "states": ", ".join(sorted(states)) or "–",
                "how": "/".join(sorted(how)) or "–",
            }
        )
    return rows


def _plt(v: float | None) -> str:
    return "–" if v is None else f"{v:.0f}"


def _bench_table(directory: Path) -> str:
    path = directory / "stacks-bench.json"
    if not path.is_file():
        return (
            "<p>No per-stack benchmark beside this experiment: run "
            "<code>longlook bench stacks --out DIR/stacks-bench.json</code>.</p>"
        )
    doc = json.loads(path.read_text())
    head = (
        f"<h3>{_e(doc.get('size'))} at {_e(doc.get('rate_mbit'))} Mbit/s, {_e(doc.get('rtt_ms'))} ms RTT: "
        "share of the physical limit</h3><table><tr><th>stack</th><th>version</th><th>CC</th><th>runs</th>"
        "<th>median PLT (ms)</th><th>goodput (Mbit/s)</th><th>limit (ms)</th><th>share</th></tr>"
    )
    body = "".join(
        f"<tr><td>{_e(r['stack'])}</td><td>{_e(r['version'])}</td><td>{_e(r['cc'])}</td><td>{r['runs']}</td>"
        f"<td>{r['plt_ms_median']:.0f}</td><td>{r['goodput_mbit_median']:.1f}</td><td>{r['limit_ms']:.0f}</td>"
        f"<td>{r['share']:.0%}</td></tr>"
        for r in doc.get("rows") or []
    )
    return head + body + "</table>"


def section(store, analysis):
    from ...stacks.base import OURS
    from ...stacks.registry import is_stack
    from ...render.html import Section

    sc = analysis.scenario
    if sc is None or not hasattr(sc, "arms") or getattr(sc, "kind", "") != "pageload":
        return None
    if not any((a.server or getattr(sc, "server", OURS)) != OURS or is_stack(a.client or sc.client) for a in sc.arms):
        return None
    rows = _arm_rows(store, analysis)
    table = (
        "<table><tr><th>arm</th><th>protocol</th><th>server</th><th>client</th><th>server CC</th>"
        "<th>counted runs</th><th>median PLT (ms)</th><th>server states seen</th><th>states</th></tr>"
        + "".join(
            f"<tr><td>{_e(r['arm'])}</td><td>{_e(r['protocol'])}</td><td>{_e(r['server'])}</td>"
            f"<td>{_e(r['client'])}</td><td>{_e(r['cc'])}</td><td>{r['n']}</td>"
            f"<td>{_plt(r['plt'])}</td>"
            f"<td>{_e(r['states'])}</td><td>{_e(r['how'])}</td></tr>"
            for r in rows
        )
        + "</table>"
    )
    intro = (
        '<p>Arms running other QUIC stacks (docs/interfaces.md, "Other QUIC stacks"). Versions are '
        "exact as recorded with the experiment. States: <em>emitted</em> by the stack's qlog, or "
        "<em>derived</em> from its window and ssthresh where it emits none.</p>"
    )
    return Section(id="stacks", title="QUIC stacks", html=intro + table + _bench_table(Path(store.directory)))
