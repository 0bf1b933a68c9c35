"""The runner: a scenario's grid, cell by cell, round by round, through the real testbed.

Per link profile: linkem reconfigured and the path self-checked (a failure stops the grid
with the measured error). Per round: every arm once, in the order `Scenario.round_order`
draws from (seed, cell, round), recorded. Per run: a fresh `endpoint fetch` process (no
cache, no connection reuse), committed to the store the moment it ends, its artifacts (the
fetch JSON, the server's qlog / TCP logs, linkem's counters) beside the database.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from .clients import fetcher
from .endpoint import SERVER_ADDR, EndpointServer, FetchResult, ServerOptions
from .errors import LonglookError
from .linkcheck import check_link
from .scenario import Arm, Cell, RunOptions, Scenario
from .store import RunRecord, Store, environment_versions
from .testbed import Testbed
from .testbed.tracefs import tcp_tracefs
from .versions import binary_version

FIRST_PORT = 4433


class LinkCheckFailed(LonglookError):
    pass


@dataclass
class RunSummary:
    out_dir: Path
    runs: int = 0
    ok: int = 0
    failed: int = 0
    mismatched: int = 0
    skipped_done: int = 0
    wall_s: float = 0.0
    in_runs_s: float = 0.0
    setup_s: float = 0.0  # testbed, link checks, server starts
    interrupted: bool = False

    @property
    def harness_overhead(self) -> float:
        """Share of the measuring loop's wall time spent outside runs (set-up excluded)."""
        loop = self.wall_s - self.setup_s
        return max(0.0, (loop - self.in_runs_s) / loop) if loop > 0 else 0.0


@dataclass
class _Servers:
    """One endpoint server per distinct server configuration, each on its own port, kept
    for the whole experiment (arms may differ in server-side options, e.g. QUIC CC)."""

    testbed: Testbed
    cert_dir: Path
    log_root: Path
    tracefs: Path | None = None  # exact TCP transitions when the kernel has the tracepoint
    by_options: dict[ServerOptions, tuple[int, EndpointServer]] = field(default_factory=dict)

    def get(self, options: ServerOptions) -> tuple[int, EndpointServer]:
        entry = self.by_options.get(options)
        if entry is not None and entry[1].alive():
            return entry
        port = entry[0] if entry else FIRST_PORT + len(self.by_options)
        server = EndpointServer.start(self.testbed, options, port=port, cert_dir=self.cert_dir,
                                      log_dir=self.log_root / f"port-{port}")
        self.by_options[options] = (port, server)
        return port, server

    def stop_all(self) -> None:
        for _, server in self.by_options.values():
            server.stop()


def server_options(opts: RunOptions, tracefs: Path | None) -> ServerOptions:
    return ServerOptions(quic_cc=opts.quic_cc, max_cwnd_packets=opts.max_cwnd_packets,
                         tcp_cc=opts.tcp_cc, tcp_tracefs=str(tracefs) if tracefs else None)


class Runner:
    """Runs one scenario into one experiment directory. `progress(event, **info)` is called
    as runs end, for a progress display; the library itself prints nothing."""

    def __init__(self, scenario: Scenario, out_dir: Path, *, resume: bool = False,
                 link_check: bool = True, link_check_duration_s: float = 2.0,
                 progress: Callable[..., None] | None = None):
        self.scenario = scenario
        self.out_dir = Path(out_dir)
        self.resume = resume
        self.link_check = link_check
        self.link_check_duration_s = link_check_duration_s
        self.progress = progress or (lambda *a, **k: None)
        self.summary = RunSummary(self.out_dir)
        # one fetch function per client the arms use; resolved now, so a missing Chromium
        # stops the experiment before its first run
        self.fetchers = {c: fetcher(c, chromium_netlog=scenario.chromium_netlog)
                         for c in dict.fromkeys(a.client or scenario.client for a in scenario.arms)}

    def run(self) -> RunSummary:
        started = time.monotonic()
        self.out_dir.mkdir(parents=True, exist_ok=True)
        with Store.open(self.out_dir) as store:
            if store.experiment() is not None and not self.resume:
                raise LonglookError(f"{self.out_dir} already holds an experiment",
                                    hint="add --resume to continue it, or choose a new --out directory")
            store.start_experiment(self.scenario, self._versions())
            try:
                self._run_grid(store)
                store.finish_experiment()
            except KeyboardInterrupt:
                self.summary.interrupted = True
            finally:
                self.summary.wall_s = time.monotonic() - started
        return self.summary

    def _versions(self) -> dict:
        return environment_versions(endpoint=binary_version("endpoint"),
                                    linkem=binary_version("linkem"))

    # ---- the grid ----------------------------------------------------------------------

    def _run_grid(self, store: Store) -> None:
        cells = self.scenario.cells()
        per_cell = self.scenario.rounds * len(self.scenario.arms)
        settled = {c.id: len(self._settled(store, c)) for c in cells}
        todo = [c for c in cells if settled[c.id] < per_cell]
        self.summary.skipped_done = sum(settled.values())
        self.progress("start", total=self.scenario.total_runs(), done=self.summary.skipped_done)
        if not todo:
            return
        t0 = time.monotonic()
        cert_dir = self.out_dir / "cert"
        with Testbed(todo[0].link, id=None, workdir=self.out_dir / "testbed",
                     base_dir=self.scenario.base_dir, seed=self.scenario.seed) as tb:
            servers = _Servers(tb, cert_dir, self.out_dir / "server-logs", tcp_tracefs())
            current_link = None
            self.summary.setup_s += time.monotonic() - t0
            try:
                for cell in todo:
                    if cell.link != current_link:
                        self._switch_link(store, tb, cell, first=current_link is None)
                        current_link = cell.link
                    self._run_cell(store, tb, servers, cell)
            finally:
                servers.stop_all()

    def _switch_link(self, store: Store, tb: Testbed, cell: Cell, first: bool) -> None:
        t0 = time.monotonic()
        if not first:
            tb.reconfigure(cell.link, base_dir=self.scenario.base_dir)
        if self.link_check:
            self.progress("link_check", link=cell.link_label)
            result = check_link(tb, cell.link, duration_s=self.link_check_duration_s,
                                base_dir=self.scenario.base_dir)
            store.record_link_check(cell.link.name, cell.link.model_dump(exclude_none=True),
                                    result.to_dict(), result.ok, result.summary())
            self.progress("link_checked", link=cell.link_label, ok=result.ok, summary=result.summary())
            if not result.ok:
                raise LinkCheckFailed(result.summary(),
                                      hint="the emulated path is not what the scenario says; "
                                           "see `longlook link check` for the full table")
        self.summary.setup_s += time.monotonic() - t0

    def _settled(self, store: Store, cell: Cell) -> set[tuple[int, str]]:
        """(round, arm) pairs that need no more runs: an ok run, a protocol mismatch (the
        network decided; retrying will not change it), or every attempt used."""
        rows = store.sql("SELECT round, arm, status, count(*) OVER (PARTITION BY round, arm) AS n "
                         "FROM runs WHERE cell_id = ?", [cell.id])
        settled = set()
        for r in rows.itertuples():
            if r.status in ("ok", "protocol_mismatch") or r.n > self.scenario.retries:
                settled.add((int(r.round), r.arm))
        return settled

    def _run_cell(self, store: Store, tb: Testbed, servers: _Servers, cell: Cell) -> None:
        settled = self._settled(store, cell)
        for round_index in range(self.scenario.rounds):
            order = self.scenario.round_order(cell, round_index)
            store.record_round_order(cell.id, round_index, [a.label for a in order])
            for position, arm in enumerate(order):
                if (round_index, arm.label) in settled:
                    continue
                self._run_arm(store, tb, servers, cell, round_index, position, arm)

    def _run_arm(self, store, tb, servers, cell, round_index, position, arm: Arm) -> None:
        first_attempt = store.attempts(cell.id, round_index, arm.label) + 1
        for attempt in range(first_attempt, self.scenario.retries + 2):
            record = self._one_run(store, tb, servers, cell, round_index, position, arm, attempt)
            self.progress("run", cell=cell.id, arm=arm.label, round=round_index,
                          status=record.status, plt_ms=record.plt_ms, error=record.error,
                          final=record.status in ("ok", "protocol_mismatch")
                          or attempt > self.scenario.retries)
            if record.status in ("ok", "protocol_mismatch"):
                return

    def _one_run(self, store, tb, servers, cell, round_index, position, arm, attempt) -> RunRecord:
        opts = cell.run_options(arm)
        port, server = servers.get(server_options(opts, servers.tracefs))
        run_id = store.new_run_id()
        run_dir = store.run_dir(run_id)
        url = f"https://{SERVER_ADDR}:{port}{cell.workload.url_path()}"
        before = tb.linkem_stats()
        fetch = self.fetchers[opts.client]
        result = fetch(tb, url=url, protocol=opts.protocol, run_id=run_id,
                       cert_dir=servers.cert_dir, out=run_dir / "fetch.json",
                       timeout_s=self.scenario.timeout_s, mode=cell.workload.mode,
                       zero_rtt=opts.zero_rtt)
        self.summary.in_runs_s += result.wall_s
        artifacts = self._collect_artifacts(tb, server, run_id, run_dir, before, result.document)
        if not server.alive():
            result = FetchResult("failed", result.document,
                                 f"the endpoint server died during the run (see {server.log_dir}/server.stderr)",
                                 result.wall_s)
        record = RunRecord.from_fetch(
            result.document, run_id=run_id, cell_id=cell.id, round=round_index, position=position,
            arm=arm.label, attempt=attempt, timed_out=result.status == "timeout",
            status=result.status, error=result.error, protocol_requested=opts.protocol,
            duration_s=result.wall_s, options=asdict(opts), artifacts=artifacts)
        store.record_run(record)
        self._count(record.status)
        return record

    def _count(self, status: str) -> None:
        self.summary.runs += 1
        if status == "ok":
            self.summary.ok += 1
        elif status == "protocol_mismatch":
            self.summary.mismatched += 1
        else:
            self.summary.failed += 1

    def _collect_artifacts(self, tb, server, run_id, run_dir, before: dict,
                           document: dict) -> dict[str, str]:
        """fetch.json, the files the client names in it (Chromium: har, netlog), the
        server's logs of this run, linkem's counters over the run."""
        rel = lambda p: str(Path(p).relative_to(self.out_dir))  # noqa: E731
        artifacts = {}
        if (run_dir / "fetch.json").exists():
            artifacts["fetch"] = rel(run_dir / "fetch.json")
        for name, file in (document.get("artifacts") or {}).items():
            if (run_dir / file).is_file():
                artifacts[name] = rel(run_dir / file)
        for name in server.take_logs(run_id, run_dir):
            key = "tcp_log" if name.endswith(".tcp.sqlog") else "qlog" if name.endswith(".sqlog") else name
            artifacts[key] = rel(run_dir / name)
        after = tb.linkem_stats()
        (run_dir / "linkem.json").write_text(json.dumps(linkem_delta(before, after), indent=1))
        artifacts["linkem"] = rel(run_dir / "linkem.json")
        return artifacts


def linkem_delta(before: dict, after: dict) -> dict:
    """linkem's direction counters over one run (after - before); flows as they stand after."""
    out = {"elapsed_s": after.get("elapsed_s", 0) - before.get("elapsed_s", 0), "directions": {}}
    for which, counters in (after.get("directions") or {}).items():
        prev = (before.get("directions") or {}).get(which, {})
        out["directions"][which] = {k: v - prev.get(k, 0) for k, v in counters.items()
                                    if isinstance(v, (int, float))}
    return out
