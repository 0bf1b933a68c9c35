"""The QUIC matrix's performance grid: per client x server pair, link rate and workload (a bulk
download; a page of many small objects), the goodput, each party's CPU per MB, the regime the
runs were in, read from what each run recorded (its load time and bytes, the CPU of the
client, the servers and linkem per run: core.audit's cgroups), so a slow cell says why:

- **path**: the download reached PATH_SHARE of the link's rate;
- **CPU: server**, **CPU: client**, **CPU: emulator**: below that, with that party's processes
  keeping CPU_SHARE of a core or more busy over the run (the busiest party is named);
- **window**, **flow control**, **application**, **flow control or application**: below the
  path with no party's CPU saturated, what held the server back as its qlog tells
  (qlog.sender_limits: the congestion window full most of the time; BLOCKED frames sent; or
  neither), from one more run of the pair with server logs (limits.pair_regimes: the grid's
  own runs keep none, whose cost would count as the server's CPU);
- **other**: the same, where no such run says (msquic writes no qlog);
- **emulator-limited**: every completed run of the pair was flagged by its path audit (the
  emulator released packets late or the machine stalled): the path was not what the scenario
  said, so the pair has no number that counts, only the audit's reason;
- **failed**: no run of the pair completed (the first one's error).

And two verdicts per pair, from the load times of its counted runs (the two-sample test every
comparison of longlook uses, core.stats): against our client with the same server (the arm
`ours_<server>`: is this client faster or slower than ours there?) and against kernel TCP on
the same path (the arm TCP_ARM: HTTP/2 over TLS, our client and server). All comparisons of one
rate form one family, Holm-corrected: a grid of a hundred pairs would otherwise show a few
"faster" by chance alone. Over the runs that count (core.status); a pair with none says so."""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from ...core.stats import CellComparison, Verdict, compare_cells, holm_adjust
from ...core.status import counted_runs
from ...core.verdicts import verdict_producer
from . import pair_of

PATH_SHARE = 0.85
CPU_SHARE = 0.85
ALPHA = 0.01
METRIC = "plt_ms"
# our client and server over kernel TCP (h2): every pair's second reference
TCP_ARM = "tcp"
EMULATOR_LIMITED = "emulator-limited"


@dataclass(frozen=True)
class Against:
    """One verdict of a pair against a reference arm: `percent` > 0 when the pair loaded
    faster (its interval in `low`, `high`), over `n` and `n_reference` counted runs."""

    reference: str
    verdict: str  # "faster", "slower", "no difference shown", or why there is no test
    percent: float
    low: float
    high: float
    p_adjusted: float
    n: int
    n_reference: int
    outcome: str = ""  # the test's own outcome (core.stats.Verdict's value): what the mark says

    @classmethod
    def of(cls, c: CellComparison) -> "Against":
        if c.verdict.significant:
            word = "faster" if c.verdict == Verdict.A_FASTER else "slower"
        elif c.verdict in (Verdict.INCONCLUSIVE,):
            word = "no difference shown"
        else:
            word = c.reason or c.verdict.value
        numbers = (float(x) for x in (c.percent_difference, c.ci_low, c.ci_high, c.p_adjusted))
        return cls(c.b.label, word, *numbers, c.a.n, c.b.n, c.verdict.value)

    @property
    def mark(self) -> str:
        """The grid's short form: +12% (faster), -5% (slower), ≈ (no difference shown), n<2
        (too few counted runs), lost (the arms kept different shares of their rounds, and the
        lost or flagged ones could reverse the test: core.stats' survivorship), n/t (no test:
        no spread or no p-value). Each says a different thing about what is missing."""
        if self.verdict == "faster":
            return f"+{self.percent:.0f}%"
        if self.verdict == "slower":
            return f"{self.percent:.0f}%"
        if self.verdict == "no difference shown":
            return "≈"
        return {Verdict.SURVIVORSHIP.value: "lost", Verdict.NOT_TESTABLE.value: "n/t"}.get(self.outcome, "n<2")


@dataclass(frozen=True)
class Perf:
    runs: int  # counted
    flagged: int  # completed but flagged by the path audit
    goodput_mbit: float  # median over the counted runs
    plt_ms: float  # median
    client_cpu_s_per_mb: float
    server_cpu_s_per_mb: float
    regime: str
    vs_ours: Against | None = None
    vs_tcp: Against | None = None

    def as_dict(self) -> dict:
        return asdict(self)


def regime(goodput_mbit: float, rate_mbit: float, shares: dict[str, float], sender: str = "") -> str:
    """The regime of a run (or of a cell's medians): `shares` are each party's CPU cores busy
    over the run (client, server, emulator); `sender` what held the server back by its qlog
    (limits.sender_regimes), "" when it did not say."""
    if goodput_mbit >= PATH_SHARE * rate_mbit:
        return "path"
    party, share = max(((k, v) for k, v in shares.items() if not math.isnan(v)), key=lambda kv: kv[1], default=("", 0))
    return f"CPU: {party}" if share >= CPU_SHARE else sender or "other"


def most_common(words) -> str:
    """The most common non-empty word (the first of equals); "" when there is none."""
    found = Counter(w for w in words if w).most_common(1)
    return found[0][0] if found else ""


def slow_pairs(grid: dict[str, dict[tuple[str, str], Perf]]) -> set[tuple[str, str]]:
    """The pairs of a rate's grid whose download stayed below the path with no party's CPU
    saturated and no log to say why ("other"): the ones a run with server logs can explain."""
    return {
        pair
        for w, by_pair in grid.items()
        if w.startswith("bulk")
        for pair, p in by_pair.items()
        if p.regime == "other"
    }


def workload_of(cell_id: str) -> str:
    """The workload label of a page-load cell id (`...|wl=bulk-5m|...`)."""
    m = re.search(r"(?:^|\|)wl=([^|]+)", cell_id)
    return m.group(1) if m else cell_id


def _median(frame: pd.DataFrame, column: str) -> float:
    if column not in frame:
        return math.nan
    x = pd.to_numeric(frame[column], errors="coerce").dropna()
    return float(np.median(x)) if len(x) else math.nan


def _goodput_mbit(frame: pd.DataFrame, object_bytes: int | None) -> pd.Series:
    """Each run's goodput from the bytes it received (or the workload's size) over its load time."""
    plt_s = pd.to_numeric(frame[METRIC], errors="coerce") / 1e3
    got = pd.to_numeric(frame["bytes"], errors="coerce") if "bytes" in frame else pd.Series(np.nan, frame.index)
    if object_bytes is not None:
        got = got.where(got > 0, object_bytes)
    return got * 8 / plt_s / 1e6


def _first_reason(reasons) -> str:
    text = reasons[0] if isinstance(reasons, (list, tuple)) and len(reasons) else str(reasons or "")
    return text.split(";")[0].strip()


def _is_tcp(run: dict) -> bool:
    return run.get("arm") == TCP_ARM


@verdict_producer("matrix.perf", "a pair faster / slower than our client with its server, and than kernel TCP")
def pair_verdicts(runs: pd.DataFrame) -> dict[tuple[str, tuple[str, str]], tuple[Against | None, Against | None]]:
    """(workload, (client, server)) -> (against our client with that server, against kernel
    TCP), on the load times of the counted runs of one rate's experiment; every comparison of
    the experiment is one Holm family at ALPHA. Our own pair has no verdict against itself."""
    if runs.empty:
        return {}
    # arms are the scenario's, the same in every cell: one list of (pair, reference) for all
    records = runs.drop_duplicates("arm").to_dict("records")
    arms = {pair_of(r): r["arm"] for r in records if not _is_tcp(r)}
    has_tcp = bool((runs["arm"] == TCP_ARM).any())
    asked: list[tuple[tuple[str, str], int, str, str]] = []  # (pair, which verdict, arm, reference)
    for (client, server), arm in arms.items():
        ours = arms.get(("ours", server))
        if client != "ours" and ours is not None:
            asked.append(((client, server), 0, arm, ours))
        if has_tcp:
            asked.append(((client, server), 1, arm, TCP_ARM))
    cells = list(dict.fromkeys(runs["cell_id"]))
    # the project's comparison of each pair in each cell, then one Holm family over all of them
    comparisons = holm_adjust(
        compare_cells(runs, [(a, b) for *_, a, b in asked], cell_ids=cells, metric=METRIC, alpha=ALPHA)
    )
    out: dict[tuple[str, tuple[str, str]], list[Against | None]] = {}
    for i, c in enumerate(comparisons):
        pair, which, *_ = asked[i // len(cells)]
        out.setdefault((workload_of(c.cell_id), pair), [None, None])[which] = Against.of(c)
    return {k: (v[0], v[1]) for k, v in out.items()}


def perf_grid(
    runs: pd.DataFrame,
    rate_mbit: float,
    object_bytes: int | None = None,
    senders: dict[tuple[str, tuple[str, str]], str] | None = None,
) -> dict[str, dict[tuple[str, str], Perf]]:
    """workload -> (client, server) -> Perf over the counted runs of one rate's experiment,
    kernel TCP under ("kernel TCP", "kernel TCP"). A pair whose every completed run its path
    audit flagged is emulator-limited, with the first reason (a stack that keeps this 2-vCPU
    machine busy stalls linkem too: that is its regime, not a number). `senders`: (workload,
    pair) -> what held its server back (limits.pair_regimes, from a run with server logs)."""
    senders = senders or {}
    out: dict[str, dict[tuple[str, str], Perf]] = {}
    if runs.empty:
        return out
    verdicts = pair_verdicts(runs)
    flagged = runs["audit_flagged"].fillna(False).astype(bool) & (runs["status"] == "ok")
    counted = counted_runs(runs, METRIC)

    def key(run: dict) -> tuple[str, str]:
        return ("kernel TCP", "kernel TCP") if _is_tcp(run) else pair_of(run)

    for cell, in_cell in runs.groupby("cell_id", sort=False):
        grid = out.setdefault(workload_of(cell), {})
        cell_flagged = in_cell[flagged.loc[in_cell.index]]
        cell_counted = counted.loc[counted.index.intersection(in_cell.index)]
        n_flagged: dict[tuple[str, str], int] = {}
        first_reason: dict[tuple[str, str], str] = {}
        for run in cell_flagged.to_dict("records"):
            pair = key(run)
            n_flagged[pair] = n_flagged.get(pair, 0) + 1
            first_reason.setdefault(pair, _first_reason(run.get("audit_reasons")))
        failed: dict[tuple[str, str], str] = {}  # pairs none of whose runs completed: why the first failed
        for run in in_cell[in_cell["status"] != "ok"].to_dict("records"):
            failed.setdefault(key(run), str(run.get("error") or run.get("status")).splitlines()[0][:160])
        by_pair = {}
        if not cell_counted.empty:
            tagged = cell_counted.assign(
                _pair=[key(r) for r in cell_counted.to_dict("records")],
                _goodput=_goodput_mbit(cell_counted, object_bytes),
            )
            by_pair = dict(iter(tagged.groupby("_pair")))
        for pair in sorted(set(by_pair) | set(n_flagged) | set(failed)):
            vs = verdicts.get((workload_of(cell), pair), (None, None))
            g = by_pair.get(pair)
            if g is None and pair not in n_flagged:
                grid[pair] = Perf(0, 0, math.nan, math.nan, math.nan, math.nan, f"failed: {failed[pair]}", *vs)
                continue
            if g is None:
                grid[pair] = Perf(
                    0, n_flagged[pair], math.nan, math.nan, math.nan, math.nan,
                    f"{EMULATOR_LIMITED}: {first_reason[pair]}", *vs,
                )  # fmt: skip
                continue
            goodput = float(np.median(g["_goodput"]))
            shares = {
                "client": _median(g, "client_cpu_share"),
                "server": _median(g, "server_cpu_share"),
                "emulator": _median(g, "router_cpu_share"),
            }
            grid[pair] = Perf(
                runs=len(g),
                flagged=n_flagged.get(pair, 0),
                goodput_mbit=goodput,
                plt_ms=_median(g, METRIC),
                client_cpu_s_per_mb=_median(g, "client_cpu_s_per_mb"),
                server_cpu_s_per_mb=_median(g, "server_cpu_s_per_mb"),
                regime=regime(goodput, rate_mbit, shares, senders.get((workload_of(cell), pair), "")),
                vs_ours=vs[0],
                vs_tcp=vs[1],
            )
    return out


def _cell(p: Perf | None, page: bool = False) -> str:
    """A bulk cell by its goodput and regime, a page's by its load time (bound by round trips,
    not the rate); then the verdicts."""
    if p is None:
        return "·"
    if p.runs == 0:
        return f"{p.regime} ({p.flagged} flagged)" if p.flagged else p.regime
    head = f"{p.plt_ms:.0f} ms" if page else f"{p.goodput_mbit:.1f} {p.regime}"
    text = f"{head} (n={p.runs})"
    marks = [f"{name} {a.mark}" for name, a in (("ours", p.vs_ours), ("TCP", p.vs_tcp)) if a is not None]
    return text + (": " + ", ".join(marks) if marks else "")


def perf_markdown(
    grids: dict[float, dict[str, dict[tuple[str, str], Perf]]], clients: list[str], servers: list[str]
) -> str:
    """Per rate and workload, rows clients and columns servers: the median goodput in Mbit/s
    and its regime (a page: its load time), the counted runs, and the verdicts against our client with that server and
    against kernel TCP (+12%: faster, -5%: slower, Holm-corrected at ALPHA; ≈ no difference
    shown)."""
    out = [
        f"Each cell: median goodput (Mbit/s) and regime (a page of small objects: its load time), counted runs; "
        f"then the load time against our "
        f"client with the same server (ours) and against kernel TCP, HTTP/2 with our client and server "
        f"(TCP): +x% faster, -x% slower (Welch, Holm across the rate's grid, alpha {ALPHA:g}), ≈ no "
        f"difference shown, n<2 too few counted runs, lost: one side kept fewer of its rounds (failed or "
        f"flagged by the path audit) and the lost ones could reverse the test, n/t no test possible.",
        "",
    ]
    for rate, by_workload in sorted(grids.items()):
        for workload, grid in by_workload.items():
            page = not workload.startswith("bulk")
            what = "page load time" if page else "goodput (Mbit/s) and regime"
            out += [f"### {rate:g} Mbit/s, {workload}: {what}", ""]
            tcp = grid.get(("kernel TCP", "kernel TCP"))
            if tcp is not None:
                out += [f"Kernel TCP (h2, Cubic): {_cell(tcp, page)}", ""]
            out += ["| client \\ server | " + " | ".join(servers) + " |", "|---|" + "---|" * len(servers)]
            for c in clients:
                out.append(f"| {c} | " + " | ".join(_cell(grid.get((c, s)), page) for s in servers) + " |")
            out.append("")
    return "\n".join(out)
