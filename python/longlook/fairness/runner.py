"""A fairness experiment: for every cell, `runs` runs of its flows sharing the bottleneck.

One testbed for the whole experiment. linkem is restarted before every run (a fresh flow
log whose clock starts with the run, and the cell's buffer); the server is restarted when the
cell's congestion-control settings change.
"""

from __future__ import annotations

import secrets
import shutil
import time
from pathlib import Path
from typing import Callable

from ..endpoint import EndpointServer, ServerOptions
from ..testbed import Testbed
from .flows import run_concurrent_flows
from .measure import measure_run
from .scenario import FairnessCell, FairnessScenario
from .store import FairnessStore

PORT = 4433
SETTLE_S = 0.5  # after the flows: linkem's last flow-log lines and the server's log flushes


def server_options(cell: FairnessCell) -> ServerOptions:
    return ServerOptions(quic_cc=cell.quic_cc or "cubic", n_conn=cell.n_conn,
                         tcp_cc=cell.tcp_cc or "cubic")


def run_fairness(scenario: FairnessScenario, out: Path, *, resume: bool = False,
                 progress: Callable[[str], None] = print) -> Path:
    """Run (or continue) the experiment into `out`; returns the store's directory."""
    out = Path(out)
    with FairnessStore.open(out) as store:
        store.start(scenario, resume=resume)
        done = store.completed_runs()
        cells = scenario.cells()
        todo = [(c, i) for c in cells for i in range(scenario.runs) if (c.id, i) not in done]
        progress(f"{scenario.name}: {len(cells)} cells x {scenario.runs} runs; {len(todo)} runs to do, "
                 f"about {len(todo) * (scenario.duration_s + 3) / 60:.0f} min")
        if not todo:
            store.finish()
            return out
        with Testbed(cells[0].link, workdir=out / "testbed", flow_log=True, seed=scenario.seed) as tb:
            server: EndpointServer | None = None
            try:
                for n, (cell, run_index) in enumerate(todo, 1):
                    if server is None or not server.alive() or server.options != server_options(cell):
                        if server is not None:
                            server.stop()
                        server = EndpointServer.start(tb, server_options(cell), port=PORT,
                                                      cert_dir=out / "cert",
                                                      log_dir=out / "server-logs")
                    run_id = run_one(tb, server, store, cell, run_index, scenario.bin_s)
                    progress(f"[{n}/{len(todo)}] {cell.id} run {run_index}: {_summary(store, run_id)}")
            finally:
                if server is not None:
                    server.stop()
        store.finish()
    return out


def run_one(tb: Testbed, server: EndpointServer, store: FairnessStore, cell: FairnessCell,
            run_index: int, bin_s: float) -> str:
    """One run of a cell: fresh linkem, the flows, their measurements, one stored record."""
    run_id = f"{cell.index:03d}-{run_index:02d}-{secrets.token_hex(2)}"
    run_dir = store.run_dir(run_id)
    tb.reconfigure(cell.link)
    linkem_t0_unix = time.time()
    launch_unix, outcomes = run_concurrent_flows(
        tb, port=PORT, cert_dir=store.directory / "cert", flows=cell.flows(), run_id=run_id,
        run_dir=run_dir, duration_s=cell.duration_s)
    time.sleep(SETTLE_S)
    flow_log = run_dir / "linkem-flows.jsonl"
    shutil.copyfile(tb.linkem.flow_log_path, flow_log)
    logs = {o.spec.label: [run_dir / "logs" / name for name in server.take_logs(o.run_id, run_dir / "logs")]
            for o in outcomes}
    m = measure_run(outcomes, flow_log=flow_log, launch_unix=launch_unix,
                    linkem_t0_unix=linkem_t0_unix, window=cell.shared_window(),
                    end_s=cell.duration_s, bin_s=bin_s, logs=logs)
    store.record_run(run_id, cell, run_index, launch_unix, m)
    return run_id


def _summary(store: FairnessStore, run_id: str) -> str:
    run = store.con.execute("SELECT status, error, jain FROM fairness_runs WHERE run_id = ?", [run_id]).fetchone()
    flows = store.con.execute("SELECT flow, router_mbit, share FROM fairness_flows WHERE run_id = ? "
                              "ORDER BY position", [run_id]).fetchall()
    if run[0] != "ok":
        return f"{run[0]}: {run[1]}"
    parts = ", ".join(f"{f} {mbit:.2f} Mbit/s ({share * 100:.0f}%)" for f, mbit, share in flows)
    return f"{parts}; Jain {run[2]:.3f}"
