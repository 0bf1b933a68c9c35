"""Find the runs of an experiment directory and their logs (what `longlook states` reads).

A source is `DIR`, `DIR:CELL_ID`, or `DIR:DIM=VALUE[,DIM=VALUE]`: every cell whose dimensions
match (e.g. `DIR:client_cpu=phone-2014` for one CPU budget across the grid). Runs with a QUIC
log (artifact `qlog`) give QUIC traces, runs with a TCP log (`tcp_log`) TCP traces, and a run
of several flows (fairness) one trace per flow, its arm `ARM.FLOW` (e.g. `flows.QUIC`); only
the runs that count (core.status) are read, as everywhere in longlook. Each run knows whose
congestion control its log shows (`stack`): the arm's server stack at its recorded version,
`ours` for our endpoint, `TCP` for the kernel's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import LonglookError
from ...core.status import counted_runs
from ...core.store import Store
from ...stacks.base import OURS
from .losses import LossAccounting, loss_accounting
from ...qlog import QlogFile, read_qlog
from .trace import StateTrace


@dataclass
class RunLogs:
    run_id: str
    cell_id: str
    arm: str
    round: int
    log: QlogFile
    linkem: dict | None
    server: str | None = None  # the arm's server stack as recorded (NAME@VERSION), None = ours
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def protocol(self) -> str:
        return self.log.protocol

    @property
    def stack(self) -> str:
        """Whose congestion control the log shows: `TCP` (the kernel's), the server stack and
        version (from the arm, else the normalised log's header), or `ours`."""
        if self.protocol == "TCP":
            return "TCP"
        meta = (self.log.header.get("trace") or {}).get("longlook") or {}
        return self.server or meta.get("version") or meta.get("stack") or OURS

    @property
    def states_source(self) -> str:
        """`emitted` (the stack's or our controller's congestion_state_updated, TCP's
        ca_state) or `derived` (from the metrics, qlog/dialects.py)."""
        meta = (self.log.header.get("trace") or {}).get("longlook") or {}
        return meta.get("states", "emitted")

    def trace(self, group: str | None = None) -> StateTrace:
        group = self.arm if group is None else group
        if ("trace", group) not in self._cache:  # the report asks many times per run
            self._cache[("trace", group)] = StateTrace.from_qlog(self.log, self.run_id, group=group)
        return self._cache[("trace", group)]

    def losses(self) -> LossAccounting:
        if "losses" not in self._cache:
            self._cache["losses"] = loss_accounting(self.log, self.run_id, self.linkem)
        return self._cache["losses"]


def parse_source(source: str) -> tuple[Path, str | None]:
    """'DIR' or 'DIR:CELL_ID' (a path that exists as a whole wins over the split)."""
    if Path(source).exists() or ":" not in source:
        return Path(source), None
    directory, cell = source.rsplit(":", 1)
    return Path(directory), cell or None


def select_cells(dims: dict[str, dict], selector: str, directory: Path | str = "") -> set[str]:
    """Cell ids a selector names: one cell id, or `DIM=VALUE[,DIM=VALUE]` over the cells'
    dimensions (values compared as written: `rate_mbit=10`, `client_cpu=phone-2014`)."""
    if selector in dims:
        return {selector}
    keys = sorted({k for d in dims.values() if isinstance(d, dict) for k in d})
    hint = f"dimensions: {', '.join(keys)}; cells: {', '.join(sorted(dims)[:10])}"
    wanted = []
    for part in selector.split(","):
        key, eq, value = part.partition("=")
        if not eq or key.strip() not in keys:
            raise LonglookError(
                f"{directory}: no cell {selector!r}, nor a DIM=VALUE selector of its dimensions", hint=hint
            )
        wanted.append((key.strip(), value.strip()))
    found = {cid for cid, d in dims.items() if all(_matches(d.get(k), v) for k, v in wanted)}
    if not found:
        raise LonglookError(f"{directory}: no cell has {selector}", hint=hint)
    return found


def _matches(actual, written: str) -> bool:
    if str(actual) == written:
        return True
    try:
        return float(actual) == float(written)
    except (TypeError, ValueError):
        return False


def load_runs(
    directory: str | Path, cell: str | None = None, arm: str | None = None, store: Store | None = None
) -> list[RunLogs]:
    directory = Path(directory)
    own = store is None
    store = store or Store.open(directory, read_only=True)
    try:
        runs = store.runs_frame()
        flow_labels = _flow_labels(store)
        frame = store.cells_frame()
        dims = dict(zip(frame["cell_id"], frame["dims"]))
        scenario = _stored_scenario(store)
        servers = arm_servers(store, scenario)
    finally:
        if own:
            store.close()
    selected = select_cells(dims, cell, directory) if cell is not None else set()
    fidelity = getattr(scenario, "fidelity", None)  # the experiment's [fidelity], as the report's
    ok = counted_runs(runs, exclude_flagged=fidelity.exclude_flagged if fidelity else True)
    if cell is not None:
        ok = ok[ok.cell_id.isin(selected)]
    out = []
    for r in ok.itertuples():
        arts = r.artifacts or {}
        logs = [
            (label, path)
            for label, path in _run_logs(directory, r, arts, flow_labels)
            if arm is None or arm in (r.arm, label)
        ]
        # linkem's counters are the run's: a run of one log has them, a flow of several does
        # not (every flow's drops together, no flow's own)
        linkem = _linkem_counters(directory, arts) if len(logs) == 1 and logs[0][0] == r.arm else None
        for label, path in logs:
            out.append(
                RunLogs(
                    run_id=r.run_id,
                    cell_id=r.cell_id,
                    arm=label,
                    round=int(r.round),
                    log=read_qlog(path),
                    linkem=linkem,
                    server=servers.get(r.arm),
                )
            )
    return out


def _linkem_counters(directory: Path, arts: dict) -> dict | None:
    rel = arts.get("linkem")
    return json.loads((directory / rel).read_text()) if rel and (directory / rel).exists() else None


def _run_logs(directory: Path, run, arts: dict, flow_labels: dict) -> list[tuple[str, Path]]:
    """(arm label, log) of one run: its one log (a page load's, a bulk's), or one per flow of
    a run of several flows (fairness: the server's logs under runs/<id>/logs/, named by the
    client's address, each labelled ARM.FLOW from the flows table)."""
    rel = arts.get("qlog") or arts.get("tcp_log")
    if rel:
        return [(run.arm, directory / rel)] if (directory / rel).exists() else []
    logs_dir = directory / "runs" / run.run_id / "logs"
    if not flow_labels or not logs_dir.is_dir():
        return []
    out = []
    for path in sorted(logs_dir.glob("*.sqlog")):
        flow = flow_labels.get((run.run_id, _client_address(path.name)))
        if flow is not None:
            out.append((f"{run.arm}.{flow}", path))
    return out


def _client_address(name: str) -> str:
    """`h3-000000-198.18.1.2_36394.sqlog` (or `.tcp.sqlog`) -> `198.18.1.2:36394`."""
    stem = name.split(".sqlog")[0].removesuffix(".tcp")
    return stem.rsplit("-", 1)[-1].replace("_", ":")


def _flow_labels(store: Store) -> dict[tuple[str, str], str]:
    """(run id, client address) -> flow label, for experiments whose runs hold several flows."""
    try:
        flows = store.table("flows")
    except LonglookError:
        return {}
    return {(f.run_id, f.local_addr): f.flow for f in flows.itertuples() if f.local_addr}


def _stored_scenario(store: Store):
    try:
        return store.scenario()
    except (LonglookError, ValueError):
        return None


def arm_servers(store: Store, scenario=None) -> dict[str, str]:
    """Arm label -> its server stack's exact version, for arms served by another stack."""
    scenario = scenario or _stored_scenario(store)
    versions = ((store.experiment() or {}).get("versions") or {}).get("stacks") or {}
    from ...stacks.registry import is_stack, resolve

    out = {}
    for arm in getattr(scenario, "arms", None) or []:
        server = getattr(arm, "server", None) or getattr(scenario, "server", None)
        if server and is_stack(server):
            spec = resolve(server).spec
            out[arm.label] = versions.get(spec, spec)
    return out
