"""Congestion window over time from the server's logs (Kakhki Fig. 5): QUIC's qlog and the
TCP_INFO log share the `recovery:metrics_updated` event with `congestion_window` in bytes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ...qlog import read_qlog


def read_cwnd(log: Path) -> pd.DataFrame:
    """Columns `unix_s` (absolute time) and `cwnd_bytes`, in time order. Empty when the log
    has no metrics (e.g. qlog off)."""
    qlog = read_qlog(log)
    reference_ms = ((qlog.header.get("trace") or {}).get("common_fields") or {}).get("reference_time")
    rows = []
    if reference_ms is not None:
        for e in qlog.named("recovery:metrics_updated"):
            cwnd = (e.get("data") or {}).get("congestion_window")
            if cwnd is not None:
                rows.append(((reference_ms + e["time"]) / 1000.0, float(cwnd)))
    frame = pd.DataFrame(rows, columns=["unix_s", "cwnd_bytes"])
    return frame.sort_values("unix_s", kind="stable").reset_index(drop=True)


def downsample(frame: pd.DataFrame, step_s: float) -> pd.DataFrame:
    """The last value in each `step_s` bucket: a few thousand points per 100 s flow instead of
    one per ack, with every bucket's final state kept."""
    if frame.empty:
        return frame
    bucket = np.floor(frame["unix_s"].to_numpy() / step_s)
    keep = np.append(bucket[1:] != bucket[:-1], True)
    return frame[keep].reset_index(drop=True)
