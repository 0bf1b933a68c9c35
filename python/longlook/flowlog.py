"""linkem's per-flow log (`--flow-log`, docs/interfaces.md "Flow log line"): the one reader
of the format, on the ground floor (the fairness kind measures throughput at the router from
it, the video kind and the fallback analysis F(t), the conformance kind throughput and
queueing delay), independent of what the endpoints say.

Each line holds a flow's cumulative counters at `t` (s since linkem started); a flow gets a
line only in intervals where a counter changed, so the counters are a step function: the
value at time t is that of the last line at or before t. Each line also carries the
queueing delay (sojourn: arrival in linkem's buffer to the start of transmission) of the
packets the flow put in the buffer since its previous line: their count, mean and max
(`RouterQueue`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .errors import LonglookError

# per line, over the packets the flow enqueued since its previous line (NaN: none, or a log
# from a linkem before these fields)
SOJOURN_COLUMNS = ["sojourn_packets", "sojourn_ms_mean", "sojourn_ms_max"]
# cumulative: the flow's packets that arrived at the router ECT(0), ECT(1), CE (before its
# middlebox; not-ECT is the rest), and those whose codepoint the middlebox's `ecn` policy
# changed. The wire's evidence of what the sender marked, interval by interval.
ECN_COLUMNS = ["ect0_seen", "ect1_seen", "ce_seen", "ecn_rewritten"]
COLUMNS = [
    "t",
    "direction",
    "proto",
    "src",
    "dst",
    "packets",
    "bytes",
    "dropped_loss",
    "dropped_buffer",
    "dropped_aqm",
    "ce_marked",
    *ECN_COLUMNS,
    *SOJOURN_COLUMNS,
]
# counters a log from an older linkem lacks: none happened
_ZERO_IF_ABSENT = ("dropped_aqm", "ce_marked", *ECN_COLUMNS)


def read_flow_log(path: Path, from_byte: int = 0) -> pd.DataFrame:
    """All lines of a flow log (from byte `from_byte`: a run's lines of a log that grows across
    runs); a torn line (linkem killed mid-write, or cut at `from_byte`) is skipped."""
    rows = []
    with open(path, "rb") as f:
        f.seek(from_byte)
        text = f.read().decode(errors="replace")
    for line in text.splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    frame = pd.DataFrame(rows)
    for c in COLUMNS:
        if c in _ZERO_IF_ABSENT and c not in frame:
            frame[c] = 0
        elif c not in frame:
            frame[c] = pd.Series(dtype=float if c == "t" or c in SOJOURN_COLUMNS else object)
    for c in SOJOURN_COLUMNS:  # null when no packet was enqueued
        frame[c] = pd.to_numeric(frame[c], errors="coerce")
    return frame[COLUMNS]


@dataclass
class RouterQueue:
    """How long packets of some flows waited in linkem's buffer, measured by the router: the
    sojourn from a packet's arrival to the start of its transmission (no propagation delay,
    no serialization of its own), so the same figure whichever sender or RTT estimator.
    One entry per flow-log line time: the packets enqueued since the previous line (all the
    selected flows' lines of one write share their `t`)."""

    t: np.ndarray  # s since linkem started, increasing
    packets: np.ndarray  # packets enqueued in the interval ending at t
    sum_ms: np.ndarray  # their summed sojourn
    max_ms: np.ndarray  # the longest (NaN: none enqueued)

    @classmethod
    def of(cls, rows: pd.DataFrame) -> "RouterQueue":
        """From flow-log rows (any selection: one flow, a direction's flows)."""
        n = rows["sojourn_packets"].fillna(0).to_numpy(float)
        keep = n > 0
        r = pd.DataFrame(
            {
                "t": rows["t"].to_numpy(float)[keep],
                "n": n[keep],
                "sum": (rows["sojourn_ms_mean"].to_numpy(float) * n)[keep],
                "max": rows["sojourn_ms_max"].to_numpy(float)[keep],
            }
        )
        g = r.groupby("t", sort=True).agg(n=("n", "sum"), sum=("sum", "sum"), max=("max", "max"))
        return cls(
            t=g.index.to_numpy(float),
            packets=g["n"].to_numpy(float),
            sum_ms=g["sum"].to_numpy(float),
            max_ms=g["max"].to_numpy(float),
        )

    @property
    def mean_ms(self) -> float:
        """Over every packet enqueued (NaN: none)."""
        total = self.packets.sum()
        return float(self.sum_ms.sum() / total) if total > 0 else math.nan

    def timeline_ms(self, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(mean, max) sojourn of the packets enqueued in each bin between consecutive
        `edges` (s on linkem's clock); NaN where none was. A line covers the flow-log
        interval before its `t`, so a line exactly on an edge counts for the bin that ends
        there (as `FlowCounters.bytes_at` does); resolution: the flow-log interval."""
        bins = len(edges) - 1
        mean, peak = np.full(max(bins, 0), np.nan), np.full(max(bins, 0), np.nan)
        if bins <= 0 or not self.t.size:
            return mean, peak
        idx = np.searchsorted(edges, self.t, side="left") - 1
        ok = (idx >= 0) & (idx < bins)
        n = np.bincount(idx[ok], weights=self.packets[ok], minlength=bins)
        total = np.bincount(idx[ok], weights=self.sum_ms[ok], minlength=bins)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(n > 0, total / n, np.nan)
        np.fmax.at(peak, idx[ok], self.max_ms[ok])
        return mean, peak


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


def flow_counters(log: pd.DataFrame, *, client_addr: str, proto: str, direction: str = "down") -> FlowCounters:
    """The counters of the flow whose client end is `client_addr` ("ip:port", the fetch's
    `local_addr`): down = server -> client (dst is the client), up = client -> server."""
    end = "dst" if direction == "down" else "src"
    rows = log[(log["direction"] == direction) & (log["proto"] == proto) & (log[end] == client_addr)]
    rows = rows.sort_values("t", kind="stable")
    return FlowCounters(
        t=rows["t"].to_numpy(float),
        bytes=rows["bytes"].to_numpy(np.int64),
        packets=rows["packets"].to_numpy(np.int64),
        dropped_buffer=rows["dropped_buffer"].to_numpy(np.int64),
    )


def _split(endpoint: pd.Series) -> tuple[pd.Series, pd.Series]:
    host_port = endpoint.astype(str).str.rsplit(":", n=1, expand=True)
    return host_port[0].str.strip("[]"), pd.to_numeric(host_port[1], errors="coerce")


def bytes_per_second(
    flow_log: str | Path | pd.DataFrame,
    server: str,
    ports: set[int] | None = None,
    *,
    directions: tuple[str, ...] = ("down", "up"),
    start_s: float = 0.0,
    end_s: float | None = None,
    bin_s: float = 1.0,
) -> pd.DataFrame:
    """Columns `tcp` and `udp` (IP bytes forwarded by linkem per `bin_s` bin), index `t_s` =
    bin start in seconds since `start_s` on linkem's clock (the flow log's `t`; see
    `linkem_start_mono_ms`, or the testbed's `Linkem.started_unix` on the wall clock). Only
    flows with `server` (an IP address) as source or destination, with one of `ports` on
    the server's side if given, in `directions`. A flow's line carries cumulative counters
    and comes only in intervals where they changed, so its increase since its previous line
    happened within the last flow-log interval: it goes in the bin of the line's time
    (resolution: the interval, 100 ms by default). Bins run from `start_s` to `end_s`
    (default: the last line). `flow_log`: its path, or its lines as `read_flow_log` gave them
    (to bin one log at two widths without reading it twice)."""
    if isinstance(flow_log, pd.DataFrame):
        log = flow_log.copy()
    else:
        path = Path(flow_log)
        if not path.exists():
            raise LonglookError(f"{path}: no such flow log")
        log = read_flow_log(path)
    if log.empty:
        return pd.DataFrame({"tcp": [], "udp": []}, index=pd.Index([], name="t_s", dtype=float))
    flow = ["direction", "proto", "src", "dst"]
    log["delta"] = log.groupby(flow)["bytes"].diff().fillna(log["bytes"])
    src_host, src_port = _split(log["src"])
    dst_host, dst_port = _split(log["dst"])
    port = src_port.where(src_host == server, dst_port.where(dst_host == server))
    keep = log["proto"].isin(["tcp", "udp"]) & log["direction"].isin(directions) & port.notna()
    if ports is not None:
        keep &= port.isin(list(ports))
    t = log["t"].astype(float) - start_s
    keep &= t > 0
    if end_s is not None:
        keep &= t <= end_s - start_s
    sel = pd.DataFrame({"t": t[keep], "proto": log["proto"][keep], "bytes": log["delta"][keep]})
    n_bins = (
        math.ceil((end_s - start_s) / bin_s)
        if end_s is not None
        else int(((sel["t"].max() - 1e-9) // bin_s) + 1)
        if len(sel)
        else 0
    )
    # (t - tiny): a line exactly on a bin edge counts for the interval that just ended
    sel["bin"] = ((sel["t"] - 1e-9) // bin_s).astype(int)
    table = sel.pivot_table(index="bin", columns="proto", values="bytes", aggfunc="sum")
    table = table.reindex(index=range(n_bins), columns=["tcp", "udp"]).fillna(0.0).astype(float)
    table.index = pd.Index(table.index * bin_s, name="t_s", dtype=float)
    table.columns.name = None
    return table


def linkem_start_mono_ms(stats: dict) -> float:
    """linkem's start on CLOCK_MONOTONIC (ms), from any stats document: `mono_ms` is when it
    was written and `elapsed_s` how long linkem had run. A session that started at
    monotonic time M began at (M - this) / 1000 s on the flow log's clock (`start_s`)."""
    try:
        return float(stats["mono_ms"]) - float(stats["elapsed_s"]) * 1000.0
    except (KeyError, TypeError, ValueError):
        raise LonglookError("linkem stats: need mono_ms and elapsed_s") from None


def series_rows(per_second: pd.DataFrame) -> list[dict]:
    """`bytes_per_second` output as a kind's store series rows: `F` (bytes over TCP) and
    `F_udp` (bytes over UDP), one row per bin, `t_s` = bin start (the names the fallback
    analysis reads)."""
    return [
        {"name": name, "key": "", "t_s": float(t), "value": float(v)}
        for name, col in (("F", "tcp"), ("F_udp", "udp"))
        for t, v in per_second[col].items()
    ]


def longest_delivery_gap(
    log: pd.DataFrame,
    server: str,
    port: int | None = None,
    *,
    start_s: float,
    end_s: float,
    waiting: list[tuple[float, float]] | None = None,
) -> tuple[float, float] | None:
    """The stall a client met, as the router saw it: the longest time (ms) between two
    flow-log intervals in which linkem released packets of `server` (an IP address; from its
    `port` if given) toward the client, within [start_s, end_s] on linkem's clock, and when it
    began (ms from start_s). Any protocol and any client address: after a NAT rebinding or a
    handover the packets go to a new address, and are still the server's. None with fewer than
    two such intervals. Resolution: the flow log's interval (a release counts at the line of
    the interval it happened in, so a gap is within one interval of the true one).

    `waiting`: the spans (linkem's clock) in which the client waited for the server, e.g. a
    video player's requests; only the part of a gap inside one counts, so a player idle with
    a full buffer is no stall. Its start is then the first release's, or the span's."""
    if log.empty:
        return None
    flow = ["direction", "proto", "src", "dst"]
    delta = log.groupby(flow)["packets"].diff().fillna(log["packets"])
    src_host, src_port = _split(log["src"])
    keep = (log["direction"] == "down") & (src_host == server) & (delta > 0)
    if port is not None:
        keep &= src_port == port
    t = log["t"].astype(float)
    keep &= (t >= start_s) & (t <= end_s)
    times = np.unique(t[keep].to_numpy())
    if len(times) < 2:
        return None
    if waiting is None:
        gaps = np.diff(times)
        i = int(np.argmax(gaps))
        return round(float(gaps[i]) * 1000, 3), round(float(times[i] - start_s) * 1000, 3)
    best: tuple[float, float] | None = None
    for a, b in zip(times[:-1], times[1:]):
        for lo, hi in waiting:
            piece = (max(a, lo), min(b, hi))
            if piece[1] > piece[0] and (best is None or piece[1] - piece[0] > best[1] - best[0]):
                best = piece
    if best is None:
        return None
    return round(float(best[1] - best[0]) * 1000, 3), round(float(best[0] - start_s) * 1000, 3)


# linkem's flow log interval where a path changes under the runs: a delivery gap read from it
# is within one interval of the true one
GAP_LOG_INTERVAL_MS = 5


def changes_path(scenario) -> bool:
    """A link of the scenario changes the path under the runs (a NAT, a handover)."""
    return any(link.nat is not None or link.handover is not None for link in scenario.links)


def flow_log_size(testbed) -> int | None:
    """Where a run's lines of linkem's flow log will begin (its size now); None without one."""
    path = getattr(getattr(testbed, "linkem", None), "flow_log_path", None)
    try:
        return path.stat().st_size if path is not None else None
    except OSError:
        return 0
