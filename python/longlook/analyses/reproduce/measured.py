"""What a claim reads of one experiment: its cells (with their dimensions), the runs (one
column per metric), the scenario's statistics. Built from a store, or from frames (tests).

Fairness experiments measure several flows per run; `flow_runs()` turns the `flows` table
into the same shape as page-load runs (one row per flow, `arm` = the flow's label), plus one
`TCP (mean)` row per run averaging its TCP flows, so every rule reads arms the same way. The
flows of one run share a bottleneck (one's gain is the other's loss): rules compare them
paired by run, never as independent samples.

Each cell's dimensions carry `middlebox` (what its link's middlebox sets, "none" without
one, "unknown" when the stored scenario cannot be gridded today): a link's label names only
the settings that differ between a scenario's links, so a budget whose links all block UDP
labels them as if nothing did, and a claim must not read such cells for a comparison the
middlebox decides (registry: `Claim.breaks_quic`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...core.spec import ScenarioBase, Statistics
from ...core.store import Store
from ...errors import LonglookError
from ...linkprofile import LinkProfile

TCP_MEAN = "TCP (mean)"  # the per-run mean of a fairness run's TCP flows
# a video session's series the rules read: its temporal QoE (session pairs are compared on
# it) and its bytes over TCP and over UDP per second at the router (its share over TCP)
SESSION_SERIES = ("qoe_t", "F", "F_udp")


@dataclass
class Measured:
    cells: pd.DataFrame  # cell_id, dims (dict), link_name
    runs: pd.DataFrame  # Store.runs_frame(): cell_id, arm, round, status, protocols, audit, metrics
    statistics: Statistics = field(default_factory=Statistics)
    seed: int = 1
    exclude_flagged: bool = True
    rounds: int | None = None  # rounds the scenario asked for
    directory: Path | None = None
    flows: pd.DataFrame | None = None  # fairness: one row per (run, flow)
    # each session's SESSION_SERIES, when recorded
    series: pd.DataFrame | None = None
    # metric -> what a failed run is worth where [statistics] failures = "outcome"
    failure_values: dict[str, float] = field(default_factory=dict)
    # rounds planned per cell from its own first rounds (core.adaptive): a plan made for
    # difference tests, which favours "the same" (see core/adaptive.py)
    adaptive: bool = False

    @classmethod
    def from_store(cls, directory: str | Path) -> "Measured":
        directory = Path(directory)
        with Store.open(directory, read_only=True) as store:
            scenario = store.scenario()
            kind = store.kind()
            flows = store.table("flows") if store.kind_name() == "fairness" else None
            if flows is not None:
                flows = with_mean_cwnd(flows, store.series(name="cwnd_bytes"))
            series = pd.concat([store.series(name=n) for n in SESSION_SERIES], ignore_index=True)
            metrics = kind.metrics if kind and scenario.statistics.failures == "outcome" else ()
            failures = {m.name: v for m in metrics if (v := m.failure_value(scenario.timeout_s)) is not None}
            cells = store.cells_frame()
            try:
                boxes = {
                    c.id: (middlebox_text(c.link), nat_text(c.link), handover_text(c.link)) for c in scenario.cells()
                }
            except (AttributeError, ValueError, LonglookError):  # a stored scenario today's code cannot grid
                boxes = {}
            cells = cells.assign(
                dims=[
                    {**(d or {}), **dict(zip(("middlebox", "nat", "handover"), boxes.get(c, ("unknown",) * 3)))}
                    for c, d in zip(cells["cell_id"], cells["dims"])
                ]
            )
            return cls(
                cells=cells,
                runs=store.runs_frame(),
                statistics=scenario.statistics,
                seed=scenario.seed,
                exclude_flagged=scenario.fidelity.exclude_flagged,
                rounds=scenario.rounds,
                directory=directory,
                flows=flows,
                series=series,
                failure_values=failures,
                adaptive=scenario.adaptive_rounds is not None,
            )

    def select(self, where: dict[str, Any]) -> list[str]:
        """Cell ids whose dimensions match `where` (dim -> value, list of values, or a
        predicate on the value)."""

        def match(dims: dict) -> bool:
            for k, want in where.items():
                if callable(want):
                    if not want(dims.get(k)):
                        return False
                    continue
                allowed = want if isinstance(want, (list, tuple, set)) else [want]
                if dims.get(k) not in allowed:
                    return False
            return True

        return [c for c, d in zip(self.cells["cell_id"], self.cells["dims"]) if match(d or {})]

    def dims(self, cell_id: str) -> dict:
        row = self.cells[self.cells["cell_id"] == cell_id]
        return dict(row.iloc[0]["dims"]) if len(row) else {}

    def flow_runs(self) -> pd.DataFrame:
        """The flows table as runs: one row per flow of each run with the run's status and
        audit (so core.status counts it like the run), `arm` = flow label; plus TCP_MEAN."""
        if self.flows is None or self.flows.empty:
            return pd.DataFrame(
                columns=[
                    "run_id",
                    "cell_id",
                    "arm",
                    "status",
                    "protocol_requested",
                    "protocol_negotiated",
                    "audit_flagged",
                ]
            )
        run_cols = ["run_id", "cell_id", "status", "audit_flagged", "round"]
        f = self.flows.drop(columns=[c for c in ("status", "round", "cell_id") if c in self.flows]).merge(
            self.runs[run_cols], on="run_id"
        )
        f = f.assign(arm=f["flow"], protocol_requested=None, protocol_negotiated=None)
        tcp = f[f["flow"].str.startswith("TCP")]
        mean = (
            tcp.groupby(["run_id", "cell_id", "status", "audit_flagged", "round"], as_index=False, dropna=False)
            .mean(numeric_only=True)
            .assign(arm=TCP_MEAN, protocol_requested=None, protocol_negotiated=None)
        )
        return pd.concat([f, mean], ignore_index=True)


def with_mean_cwnd(flows: pd.DataFrame, cwnd: pd.DataFrame) -> pd.DataFrame:
    """Each flow's time-averaged congestion window in KB (`cwnd_mean_kb`), from the run's
    cwnd series (sampled on a fixed step, so the mean of the samples is the mean over time):
    Kakhki's Fig. 5 compares the windows the flows of one bottleneck reach. NaN for a flow
    whose server log gave no window."""
    if flows.empty or cwnd.empty or "flow" not in flows:
        return flows.assign(cwnd_mean_kb=np.nan)
    means = (
        cwnd.groupby(["run_id", "key"], as_index=False)["value"]
        .mean()
        .rename(columns={"key": "flow", "value": "cwnd_mean_kb"})
    )
    means["cwnd_mean_kb"] /= 1000.0
    return flows.drop(columns=["cwnd_mean_kb"], errors="ignore").merge(means, on=["run_id", "flow"], how="left")


def middlebox_text(link: LinkProfile) -> str:
    """What a link's middlebox sets, both directions ("none": no middlebox)."""
    parts: dict[str, Any] = {}
    for which in ("up", "down"):
        box = link.resolved(which).middlebox
        if box is not None:
            parts.update(box.model_dump(exclude_defaults=True))
    return ",".join(f"{k}={v}" for k, v in sorted(parts.items())) or "none"


def nat_text(link: LinkProfile) -> str:
    """Whether a link has a NAT and what it does: "none", "nat" (no scheduled rebinding), or
    "rebinding" (its bindings move while their flows live)."""
    if link.nat is None:
        return "none"
    return "rebinding" if link.nat.first_rebinding_s() is not None else "nat"


def handover_text(link: LinkProfile) -> str:
    """Whether a link's client moves to a second path during a run: "none", "handover" (a
    TCP connection stays, and dies with its path) or "handover+tcp-reconnect" (the TCP client
    reconnects and resumes)."""
    if link.handover is None:
        return "none"
    return "handover+tcp-reconnect" if link.handover.tcp_reconnect else "handover"


def grid(scenario: ScenarioBase) -> pd.DataFrame:
    """A scenario's cells as a Measured's `cells` (their dimensions with `middlebox`), and
    `link_settings`: every setting of the cell's link, flattened (a link's label names only
    what differs between the grid's links, so it does not tell a cell across grids)."""
    rows = []
    for c in scenario.cells():
        rows.append(
            {
                "cell_id": c.id,
                "dims": {
                    **c.dims(),
                    "middlebox": middlebox_text(c.link),
                    "nat": nat_text(c.link),
                    "handover": handover_text(c.link),
                },
                "link_settings": _flat(c.link.model_dump(mode="json", exclude={"name"})),
            }
        )
    return pd.DataFrame(rows, columns=["cell_id", "dims", "link_settings"])


def _flat(d: dict, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = json.dumps(v, sort_keys=True, default=str) if isinstance(v, list) else v
    return out
