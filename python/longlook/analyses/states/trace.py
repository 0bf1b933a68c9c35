"""StateTrace: one connection's congestion-control states over time.

Built from `recovery:congestion_state_updated` events (both protocols use one vocabulary,
docs/interfaces.md). Every trace starts in `Init` at t = 0; a state lasts until the next
transition, the last one until the end of the log.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from ...qlog import QlogFile

INITIAL = "Init"
QUIC_STATES = (
    "Init",
    "SlowStart",
    "CongestionAvoidance",
    "CongestionAvoidanceMaxed",
    "ApplicationLimited",
    "Recovery",
    "RetransmissionTimeout",
    "TailLossProbe",
)
TCP_STATES = ("Init", "Open", "Disorder", "CWR", "Recovery", "Loss")


@dataclass
class StateTrace:
    """Visits in time order: `states[i]` entered at `times_ms[i]` by `triggers[i]`."""

    run_id: str
    protocol: str  # "QUIC" | "TCP"
    states: list[str]
    times_ms: list[float]
    triggers: list[str | None]
    end_ms: float
    group: str = ""  # what the trace is analysed under (arm label, cell, ...)
    meta: dict = field(default_factory=dict)

    @classmethod
    def from_qlog(cls, log: QlogFile, run_id: str, group: str = "") -> "StateTrace":
        states, times, triggers = [INITIAL], [0.0], [None]
        # Tracepoint events reach TCP logs a few ms late: order by time, stably.
        updates = sorted(log.named("recovery:congestion_state_updated"), key=lambda e: e["time"])
        for e in updates:
            new = (e.get("data") or {}).get("new")
            if new is None or new == states[-1]:
                continue  # a repeated state is no transition (e.g. Loss -> Loss re-armed RTO)
            states.append(new)
            times.append(float(e["time"]))
            triggers.append((e.get("data") or {}).get("trigger"))
        end = max([float(e["time"]) for e in log.events] + [times[-1]])
        return cls(
            run_id=run_id,
            protocol=log.protocol,
            states=states,
            times_ms=times,
            triggers=triggers,
            end_ms=end,
            group=group,
        )

    def recorded(self) -> bool:
        """Whether the log recorded the state machine at all: every writer here (our
        controller, the TCP tracer, the dialects that derive states) enters a first state when
        the connection starts, so a trace of Init alone is a log without states, not a run
        that never changed state."""
        return len(self.states) > 1

    def transitions(self) -> list[tuple[str, str]]:
        return list(zip(self.states, self.states[1:]))

    def dwell_ms(self) -> list[float]:
        """Time spent in each visit (same length as `states`)."""
        ends = self.times_ms[1:] + [self.end_ms]
        return [max(0.0, b - a) for a, b in zip(self.times_ms, ends)]

    def visits(self) -> pd.DataFrame:
        """One row per visit: run_id, state, entered_ms, dwell_ms, trigger."""
        return pd.DataFrame(
            {
                "run_id": self.run_id,
                "group": self.group,
                "state": self.states,
                "entered_ms": self.times_ms,
                "dwell_ms": self.dwell_ms(),
                "trigger": self.triggers,
            }
        )
