"""Which grid dimensions become heatmap rows, columns and separate heatmaps (facets).

Kakhki Fig. 6: rows = rate limit, columns = object size (6a) or object count (6b). We pick
the same from whatever varies in the grid: a link dimension for rows, a workload dimension
for columns, and one heatmap per combination of everything else that varies.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from ..units import format_size

LINK_DIMS = ("rate_mbit", "rtt_ms", "loss", "trace")
WORKLOAD_DIMS = ("object_size", "object_count", "mode")
OPTION_DIMS = ("quic_cc", "tcp_cc", "max_cwnd_packets", "zero_rtt")

DIM_TITLES = {
    "rate_mbit": "rate",
    "rtt_ms": "RTT",
    "loss": "loss",
    "trace": "trace",
    "link": "link",
    "object_size": "object size",
    "object_count": "object count",
    "mode": "mode",
    "workload": "workload (count x size)",
    "quic_cc": "QUIC CC",
    "tcp_cc": "TCP CC",
    "max_cwnd_packets": "QUIC MACW (packets)",
    "zero_rtt": "0-RTT",
    "client_cpu": "client CPU",
}


def format_dim(dim: str | None, value: Any) -> str:
    """Human text for one value of a dimension."""
    if dim is None:
        return ""
    if value is None:
        return "default" if dim == "max_cwnd_packets" else "-"
    if dim == "rate_mbit":
        return f"{value:g} Mbit/s"
    if dim == "rtt_ms":
        return f"{value:g} ms"
    if dim == "loss":
        return f"{value * 100:g}%"
    if dim == "object_size":
        return format_size(int(value)).upper() + ("B" if int(value) >= 1000 else " B")
    if dim == "zero_rtt":
        return "on" if value else "off"
    return str(value)


@dataclass
class Layout:
    row: str | None
    col: str | None
    facets: list[str] = field(default_factory=list)


def _distinct(values: Sequence[Any]) -> list[Any]:
    return list(dict.fromkeys(repr(v) for v in values))


def choose_layout(dims: Sequence[dict[str, Any]]) -> Layout:
    """Pick row/column/facet dimensions from the cells' `dims` (Cell.dims())."""
    if not dims:
        return Layout(None, None)
    keys = [k for k in dims[0] if k not in ("link", "workload")]
    varying = [k for k in keys if len(_distinct([d.get(k) for d in dims])) > 1]

    # A link difference not visible in rate/RTT/loss/trace (e.g. buffer) needs the whole label.
    n_links = len(_distinct([d.get("link") for d in dims]))
    n_link_tuples = len(_distinct([tuple(d.get(k) for k in LINK_DIMS) for d in dims]))
    link_varying = [k for k in LINK_DIMS if k in varying]
    if n_links > n_link_tuples:
        link_varying = ["link"]
        varying = [k for k in varying if k not in LINK_DIMS] + ["link"]

    wl_varying = [k for k in WORKLOAD_DIMS if k in varying]
    if len(wl_varying) > 1:  # e.g. Fig. 6b: count and size change together
        wl_varying = ["workload"]
        varying = [k for k in varying if k not in WORKLOAD_DIMS] + ["workload"]

    row = link_varying[0] if link_varying else None
    col = wl_varying[0] if wl_varying else None
    rest = [k for k in varying if k not in (row, col)]
    if row is None and rest:
        row = rest.pop(0)
    if col is None and rest:
        col = rest.pop(0)
    return Layout(row=row, col=col, facets=rest)


def sort_values(dim: str | None, values: Sequence[Any]) -> list[Any]:
    """Numbers ascending; labels (link, workload) in scenario order."""
    uniq: list[Any] = []
    for v in values:
        if v not in uniq:
            uniq.append(v)
    if dim in ("link", "workload", "client_cpu", None):
        return uniq
    try:
        return sorted(uniq, key=lambda v: (v is None, v))
    except TypeError:
        return uniq
