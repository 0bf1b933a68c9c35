"""StatesAnalysis: everything `longlook states DIR` shows, for one set of runs.

Runs are grouped by protocol of their log (QUIC / TCP) and arm label; each group gets its
inferred machine, its invariants and the per-run loss accounting, labelled by whose
congestion control it is (the arm's server stack and version, `ours`, or `TCP`) and whether
its states were emitted by that stack or derived from its metrics.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pandas as pd

from .invariants import Invariant, mine_invariants
from .machine import TransitionGraph
from .runs import RunLogs


@dataclass
class MachineReport:
    protocol: str
    arm: str
    graph: TransitionGraph
    invariants: list[Invariant]
    losses: pd.DataFrame  # one row per run (LossAccounting.as_dict())
    stack: str = ""  # whose congestion control: NAME@VERSION, ours, TCP
    states_source: str = "emitted"  # or "derived" (qlog/dialects.py)

    @property
    def label(self) -> str:
        """`server STACK, arm ARM`; TCP's `arm ARM`."""
        return f"arm {self.arm}" if self.stack in ("", self.protocol) else f"server {self.stack}, arm {self.arm}"

    @property
    def key(self) -> str:
        return f"{self.protocol}-{self.arm}" if self.arm not in ("h3", "h2") else self.protocol


@dataclass
class StatesAnalysis:
    machines: list[MachineReport] = field(default_factory=list)
    runs: list[RunLogs] = field(default_factory=list)

    def machine(self, protocol: str) -> MachineReport | None:
        return next((m for m in self.machines if m.protocol == protocol), None)


def analyse_runs(runs: list[RunLogs]) -> StatesAnalysis:
    groups: dict[tuple[str, str], list[RunLogs]] = {}
    for r in runs:
        groups.setdefault((r.protocol, r.arm), []).append(r)
    machines = []
    for (protocol, arm), rs in sorted(groups.items(), key=lambda kv: (kv[0][0] != "QUIC", kv[0])):
        traces = [r.trace() for r in rs]
        graph = TransitionGraph.infer(traces, group=arm)
        invariants = mine_invariants([t.states for t in traces])
        losses = pd.DataFrame([r.losses().as_dict() for r in rs])
        stacks = Counter(r.stack for r in rs)
        sources = Counter(r.states_source for r in rs)
        machines.append(
            MachineReport(
                protocol,
                arm,
                graph,
                invariants,
                losses,
                stack=stacks.most_common(1)[0][0],
                states_source=sources.most_common(1)[0][0],
            )
        )
    return StatesAnalysis(machines=machines, runs=runs)
