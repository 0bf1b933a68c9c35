"""Find the runs of an experiment directory and their logs (what `longlook states` reads).

A source is `DIR` or `DIR:CELL_ID`. Runs with a QUIC log (artifact `qlog`) give QUIC
traces, runs with a TCP log (`tcp_log`) TCP traces; only the runs that count
(core.status) are read, as everywhere in longlook.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import LonglookError
from ...core.status import counted_runs
from ...core.store import Store
from .losses import LossAccounting, loss_accounting
from ..qlog import QlogFile, read_qlog
from .trace import StateTrace


@dataclass
class RunLogs:
    run_id: str
    cell_id: str
    arm: str
    round: int
    log: QlogFile
    linkem: dict | None
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def protocol(self) -> str:
        return self.log.protocol

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


def load_runs(directory: str | Path, cell: str | None = None, arm: str | None = None,
              store: Store | None = None) -> list[RunLogs]:
    directory = Path(directory)
    own = store is None
    store = store or Store.open(directory, read_only=True)
    try:
        runs = store.runs_frame()
        cells = set(store.cells_frame()["cell_id"])
    finally:
        if own:
            store.close()
    if cell is not None and cell not in cells:
        raise LonglookError(f"{directory}: no cell {cell!r}",
                            hint="cells: " + ", ".join(sorted(cells)[:20]))
    ok = counted_runs(runs)
    if cell is not None:
        ok = ok[ok.cell_id == cell]
    if arm is not None:
        ok = ok[ok.arm == arm]
    out = []
    for r in ok.itertuples():
        arts = r.artifacts or {}
        rel = arts.get("qlog") or arts.get("tcp_log")
        if not rel or not (directory / rel).exists():
            continue
        linkem = None
        if arts.get("linkem") and (directory / arts["linkem"]).exists():
            linkem = json.loads((directory / arts["linkem"]).read_text())
        out.append(RunLogs(run_id=r.run_id, cell_id=r.cell_id, arm=r.arm, round=int(r.round),
                           log=read_qlog(directory / rel), linkem=linkem))
    return out
