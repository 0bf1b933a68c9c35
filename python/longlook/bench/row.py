"""One measured row of the download benches (endpoint, stacks), its JSON, and how every
bench prints a table."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from .limit import physical_limit_ms

MEASURED = ("runs", "plt_ms_median", "goodput_mbit_median", "efficiency", "initial_window_bytes", "limit_ms")


@dataclass
class BenchRow:
    """The median of `runs` downloads of one stack and protocol against the physical limit of
    the path (limit.py)."""

    stack: str  # NAME@VERSION as asked, or ours
    version: str  # exact
    cc: str
    protocol: str  # h3, or h2 (our endpoint's TCP)
    runs: int
    plt_ms_median: float
    goodput_mbit_median: float
    efficiency: float  # payload / IP bytes downstream, median of the runs
    initial_window_bytes: int
    limit_ms: float
    share: float  # limit / measured median: 1.0 = at the physical limit

    @classmethod
    def of_runs(
        cls,
        *,
        stack: str,
        version: str,
        cc: str,
        protocol: str,
        plts: list[float],
        effs: list[float],
        size_bytes: int,
        initial_window: int,
        rate_mbit: float,
        rtt_ms: float,
    ) -> "BenchRow":
        eff, med = statistics.median(effs), statistics.median(plts)
        limit = physical_limit_ms(size_bytes, rate_mbit, rtt_ms, protocol, initial_window, eff)
        return cls(
            stack,
            version,
            cc,
            protocol,
            len(plts),
            med,
            size_bytes * 8 / med / 1e3,
            eff,
            initial_window,
            limit,
            limit / med,
        )

    def _measured(self) -> dict:
        return {k: getattr(self, k) for k in MEASURED}

    def endpoint_json(self) -> dict:
        """As `longlook bench endpoint --json` prints a row (the share named `ratio`)."""
        return {"protocol": self.protocol, **self._measured(), "ratio": self.share}

    def stacks_json(self) -> dict:
        """As `stacks-bench.json` holds a row (the report's stacks table reads it)."""
        return {"stack": self.stack, "version": self.version, "cc": self.cc, **self._measured(), "share": self.share}


def title(size: str, rate_mbit: float, rtt_ms: float, runs: int) -> str:
    return f"{size} over {rate_mbit:g} Mbit/s, {rtt_ms:g} ms RTT, median of {runs}"


def print_table(title: str, columns: list[str], rows: list[list]) -> None:
    """One table, every column right-aligned; floats with 3 decimals, anything else as is."""
    from rich.table import Table

    from ..render.console import make_console

    t = Table(title=title)
    for col in columns:
        t.add_column(col, justify="right")
    for r in rows:
        t.add_row(*[f"{x:.3f}" if isinstance(x, float) else str(x) for x in r])
    make_console().print(t)


def print_rows(rows: list[BenchRow], title: str, label: tuple[str, ...] = ("protocol",)) -> None:
    """Download-bench rows, named by the `label` fields."""
    print_table(
        title,
        [
            *label,
            "PLT ms",
            "goodput Mbit/s",
            "payload/IP bytes",
            "initial window B",
            "physical limit ms",
            "limit / measured",
        ],
        [
            [
                *(str(getattr(r, k)) for k in label),
                f"{r.plt_ms_median:.1f}",
                f"{r.goodput_mbit_median:.2f}",
                f"{r.efficiency:.4f}",
                str(r.initial_window_bytes),
                f"{r.limit_ms:.1f}",
                f"{r.share:.1%}",
            ]
            for r in rows
        ],
    )
