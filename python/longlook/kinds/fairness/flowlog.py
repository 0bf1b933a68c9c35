"""linkem's per-flow log (`--flow-log`, docs/interfaces.md) as throughput measured at the
router, independent of what the endpoints say.

Each line holds a flow's cumulative counters at `t` (s since linkem started); a flow gets a
line only in intervals where a counter changed, so the counters are a step function: the
value at time t is that of the last line at or before t.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

COLUMNS = ["t", "direction", "proto", "src", "dst", "packets", "bytes", "dropped_loss",
           "dropped_buffer"]


def read_flow_log(path: Path) -> pd.DataFrame:
    """All lines of a flow log; a torn last line (linkem killed mid-write) is skipped."""
    rows = []
    for line in Path(path).read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    frame = pd.DataFrame(rows)
    for c in COLUMNS:
        if c not in frame:
            frame[c] = pd.Series(dtype=float if c == "t" else object)
    return frame[COLUMNS]


@dataclass
class FlowCounters:
    """One flow's cumulative forwarded IP bytes over time in one direction, as the router
    counted them."""

    t: np.ndarray  # s since linkem started, increasing
    bytes: np.ndarray  # cumulative IP bytes forwarded
    packets: np.ndarray
    dropped_buffer: np.ndarray

    @classmethod
    def empty(cls) -> "FlowCounters":
        """A flow the router never saw."""
        return cls(*(np.array([], dtype=np.int64),) * 4)

    @property
    def total_bytes(self) -> int:
        return int(self.bytes[-1]) if self.bytes.size else 0

    @property
    def total_packets(self) -> int:
        return int(self.packets[-1]) if self.packets.size else 0

    @property
    def first_seen(self) -> float:
        return float(self.t[0]) if self.t.size else float("nan")

    def bytes_at(self, t: float | np.ndarray) -> np.ndarray:
        """Cumulative bytes at time(s) t (step function; 0 before the first line)."""
        idx = np.searchsorted(self.t, np.asarray(t, dtype=float), side="right") - 1
        padded = np.concatenate([[0], self.bytes])  # index 0 = before the first line
        values = padded[idx + 1]
        return values if np.ndim(t) else values.item()

    def mean_mbit(self, t0: float, t1: float) -> float:
        """Average rate over [t0, t1] in Mbit/s of IP bytes."""
        if t1 <= t0:
            return float("nan")
        return (self.bytes_at(t1) - self.bytes_at(t0)) * 8 / (t1 - t0) / 1e6

    def timeline_mbit(self, edges: np.ndarray) -> np.ndarray:
        """Rate in each bin between consecutive `edges` (Mbit/s)."""
        cum = self.bytes_at(edges).astype(float)
        return np.diff(cum) * 8 / np.diff(edges) / 1e6


def flow_counters(log: pd.DataFrame, *, client_addr: str, proto: str,
                  direction: str = "down") -> FlowCounters:
    """The counters of the flow whose client end is `client_addr` ("ip:port", the fetch's
    `local_addr`): down = server -> client (dst is the client), up = client -> server."""
    end = "dst" if direction == "down" else "src"
    rows = log[(log["direction"] == direction) & (log["proto"] == proto) & (log[end] == client_addr)]
    rows = rows.sort_values("t", kind="stable")
    return FlowCounters(t=rows["t"].to_numpy(float), bytes=rows["bytes"].to_numpy(np.int64),
                        packets=rows["packets"].to_numpy(np.int64),
                        dropped_buffer=rows["dropped_buffer"].to_numpy(np.int64))
