"""TransitionGraph: the state machine inferred from many StateTraces (Kakhki Fig. 3).

Nodes are the states visited; an edge a -> b exists when some trace went from a straight to
b. Edge probability = count(a -> b) / count(a -> anything), the empirical chance of leaving a
for b. Dwell times and entries per run come from the same traces.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import pandas as pd

from .trace import StateTrace


@dataclass
class TransitionGraph:
    protocol: str
    group: str
    n_traces: int
    transitions: pd.DataFrame  # src, dst, count, probability, runs (traces containing it)
    states: pd.DataFrame  # state, entries, runs, dwell_total_ms, dwell_mean_ms, dwell_share
    entries_per_run: pd.DataFrame  # index run_id, one column per state: times entered
    transitions_per_run: pd.DataFrame  # index run_id, one column per "src->dst": count

    @classmethod
    def infer(cls, traces: list[StateTrace], group: str = "") -> "TransitionGraph":
        protocol = traces[0].protocol if traces else ""
        counts: Counter[tuple[str, str]] = Counter()
        runs_with: Counter[tuple[str, str]] = Counter()
        per_run_tr, per_run_entries = {}, {}
        for t in traces:
            tr = Counter(t.transitions())
            counts.update(tr)
            runs_with.update(set(tr))
            per_run_tr[t.run_id] = {f"{a}->{b}": n for (a, b), n in tr.items()}
            per_run_entries[t.run_id] = Counter(t.states)
        out_total = Counter()
        for (a, _), n in counts.items():
            out_total[a] += n
        transitions = pd.DataFrame(
            [
                {"src": a, "dst": b, "count": n, "probability": n / out_total[a], "runs": runs_with[(a, b)]}
                for (a, b), n in counts.items()
            ],
            columns=["src", "dst", "count", "probability", "runs"],
        ).sort_values(["src", "count"], ascending=[True, False], ignore_index=True)

        visits = (
            pd.concat([t.visits() for t in traces], ignore_index=True)
            if traces
            else pd.DataFrame(columns=["run_id", "state", "dwell_ms"])
        )
        if len(visits):
            states = (
                visits.groupby("state")
                .agg(
                    entries=("state", "size"),
                    runs=("run_id", "nunique"),
                    dwell_total_ms=("dwell_ms", "sum"),
                    dwell_mean_ms=("dwell_ms", "mean"),
                )
                .reset_index()
            )
            total = states["dwell_total_ms"].sum()
            states["dwell_share"] = states["dwell_total_ms"] / total if total > 0 else 0.0
            states = states.sort_values("dwell_total_ms", ascending=False, ignore_index=True)
        else:
            states = pd.DataFrame(
                columns=["state", "entries", "runs", "dwell_total_ms", "dwell_mean_ms", "dwell_share"]
            )
        run_ids = [t.run_id for t in traces]
        entries = pd.DataFrame.from_dict(per_run_entries, orient="index").reindex(run_ids).fillna(0).astype(int)
        per_tr = pd.DataFrame.from_dict(per_run_tr, orient="index").reindex(run_ids).fillna(0).astype(int)
        return cls(
            protocol=protocol,
            group=group,
            n_traces=len(traces),
            transitions=transitions,
            states=states,
            entries_per_run=entries,
            transitions_per_run=per_tr,
        )

    def probability(self, src: str, dst: str) -> float:
        row = self.transitions[(self.transitions.src == src) & (self.transitions.dst == dst)]
        return float(row["probability"].iloc[0]) if len(row) else 0.0

    def count(self, src: str, dst: str) -> int:
        row = self.transitions[(self.transitions.src == src) & (self.transitions.dst == dst)]
        return int(row["count"].iloc[0]) if len(row) else 0

    def entries(self, state: str) -> pd.Series:
        """Times each run entered `state` (0 for runs that never did)."""
        if state in self.entries_per_run.columns:
            return self.entries_per_run[state]
        return pd.Series(0, index=self.entries_per_run.index, dtype=int)
