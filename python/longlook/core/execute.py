"""The experiment loop: any kind's grid, cell by cell, round by round, through one testbed.

Per link profile: linkem reconfigured and the path self-checked (a failure stops the grid
with the measured error). Per round: every arm once, in the order drawn from (seed, cell,
round), recorded. Per run: the kind measures (`measure_run` returns a RunRecord and writes
only files in the run's directory), the run's path audit is taken around it, and the store,
the one writer, commits it the moment it ends. Failed runs, and runs whose path audit failed
(`[fidelity] retry_flagged`), are retried up to `retries`
times; Ctrl-C leaves a consistent store and `--resume` continues it.

An executor (core.executors) may run the same per-cell loop (`Runner.run_cells`) elsewhere:
`Ray` on the nodes of a cluster, one cell per task, with this process still the store's one
writer (docs/cluster.md); without one, this machine's testbed runs it.
"""

from __future__ import annotations

import json
import socket
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ContextManager, Protocol

from ..errors import LonglookError, Terminated, check_output
from ..testbed.queue_check import self_check
from ..testbed import Testbed
from ..testbed.cpu import check_fits
from ..testbed.host import linkem_datapath
from ..testbed.topology import RECORDED_SYSCTLS
from ..versions import binary_version
from .adaptive import needs_more_rounds, rule_metric
from .audit import RunAudit, StallWatch, cpu_figures, handover_detail, linkem_delta, queue_figures
from .capture import RunCapture
from .kind import Kind, RunContext
from .record import RunRecord, new_run_id
from .registry import get_kind
from .spec import ArmBase, CellBase, ScenarioBase
from .stats import MIN_N
from .status import completion, settles, shortfalls
from .store import DB_FILE, RUNS_DIR, Store, environment_versions
from .trace_phase import DETAIL as TRACE_PHASE_DETAIL
from .trace_phase import run_phase_ms


class LinkCheckFailed(LonglookError):
    pass


class Ledger(Protocol):
    """What the per-cell loop reads and writes (Store's methods of the same names)."""

    def settled(self, cell_id: str, retries: int, *, retry_flagged: bool = False) -> set[tuple[int, str]]: ...
    def attempt_counts(self, cell_id: str) -> dict[tuple[int, str], int]: ...
    def runs_frame(self) -> Any: ...
    def record_run(self, r: RunRecord) -> None: ...
    def record_round_order(self, cell_id: str, round: int, order: list[str]) -> None: ...
    def record_link_check(
        self, profile_name: str, configured: dict, measured: dict, passed: bool, detail: str | None = None
    ) -> None: ...


@dataclass
class Phases:
    """Where the measuring loop's time outside the runs goes: seconds per named phase, summed
    over the session (the run summary prints each per run, biggest first)."""

    totals: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def __call__(self, name: str):
        t = time.monotonic()
        try:
            yield
        finally:
            self.totals[name] = self.totals.get(name, 0.0) + time.monotonic() - t


@dataclass
class RunSummary:
    out_dir: Path
    runs: int = 0
    ok: int = 0
    failed: int = 0
    mismatched: int = 0
    flagged: int = 0  # ok runs whose path audit failed the scenario's [fidelity]
    skipped_done: int = 0
    # cells where an arm ended without the counted runs a comparison needs, in words
    short: list[str] = field(default_factory=list)
    signal: int | None = None  # the signal that interrupted the run, if any
    wall_s: float = 0.0
    in_runs_s: float = 0.0
    setup_s: float = 0.0  # testbed, link checks, server starts
    interrupted: bool = False
    phases: Phases = field(default_factory=Phases)  # the harness's time outside runs, by phase

    @property
    def harness_overhead(self) -> float:
        """Share of the measuring loop's wall time spent outside runs (set-up excluded)."""
        loop = self.wall_s - self.setup_s
        return max(0.0, (loop - self.in_runs_s) / loop) if loop > 0 else 0.0

    @property
    def harness_s_per_run(self) -> float:
        """The measuring loop's time outside runs, per run: the fixed cost each run pays."""
        loop = self.wall_s - self.setup_s
        return max(0.0, loop - self.in_runs_s) / self.runs if self.runs else 0.0

    def phases_per_run_ms(self, top: int = 5) -> list[tuple[str, float]]:
        """The biggest harness phases, ms per run."""
        per_run = [(k, 1e3 * v / self.runs) for k, v in self.phases.totals.items()] if self.runs else []
        return sorted(per_run, key=lambda kv: -kv[1])[:top]

    def count(self, record: RunRecord) -> None:
        self.runs += 1
        if record.status == "ok":
            self.ok += 1
            self.flagged += record.flagged
        elif record.status == "protocol_mismatch":
            self.mismatched += 1
        else:
            self.failed += 1


@dataclass
class Bench:
    """What every run of one experiment shares on one machine."""

    scenario: ScenarioBase
    kind: Kind
    state: dict[str, Any]
    out_dir: Path
    testbed: Testbed
    session: dict[str, Any]  # the kind's, for this testbed (Kind.session)
    stalls: StallWatch | None


def measure_run(
    bench: Bench,
    cell: CellBase,
    round_index: int,
    position: int,
    arm: ArmBase,
    attempt: int,
    phases: Phases | None = None,
) -> tuple[RunRecord, float]:
    """One run on a live testbed: the kind's measurement with its path audit, as a record
    (not stored) and the measurement's wall time. Files go to DIR/runs/<run_id>/ only.
    `phases` gets the time of each step around the measurement."""
    phase = phases or Phases()
    sc, tb = bench.scenario, bench.testbed
    with phase("run set-up"):
        run_id = new_run_id()
        run_dir = bench.out_dir / RUNS_DIR / run_id
        run_dir.mkdir(parents=True, exist_ok=True)
        link = sc.run_link(cell, arm, round_index)  # the cell's, or an intervention's
        relink = lambda: tb.reconfigure(link, base_dir=sc.base_dir)  # noqa: E731
        capture = RunCapture(sc.capture, tb, run_dir, relink)
    with phase("link restart"):
        if bench.kind.fresh_link_per_run and not capture.restarts_link:
            relink()
        capture.begin()  # a pcap: linkem restarted writing the run's file
    with phase("trace phase"):
        trace_phase = run_phase_ms(sc.trace_phase, link, sc.base_dir, sc.seed, round_index)
        if trace_phase is not None:
            tb.rephase_trace(trace_phase)
        elif link.handover is not None:  # a request also restarts the handover's clock
            tb.rephase_trace(0.0)
    with phase("client CPU group"):
        tb.set_client_cpu(cell.client_cpu)  # the cell's device: every client process joins it
    audit = RunAudit(tb, bench.stalls, sc.fidelity, client_cpu=cell.client_cpu)
    try:
        with phase("audit begin"):
            audit.begin()
        started = time.monotonic()
        m = bench.kind.measure(
            RunContext(
                testbed=tb,
                scenario=sc,
                cell=cell,
                arm=arm,
                round=round_index,
                run_id=run_id,
                run_dir=run_dir,
                experiment_dir=bench.out_dir,
                state=bench.state,
                session=bench.session,
                keylog=sc.capture.keylog_path(run_dir),
            )
        )
        wall = time.monotonic() - started
        with phase("audit end"):
            a = audit.end().with_reasons(m.audit_reasons)
    except BaseException:
        audit.abandon()  # its watch on the client stops polling
        capture.abandon()  # no restart while unwinding; no later linkem writes into this run's file
        raise
    with phase("capture end"):
        capture.end()  # after the audit read linkem's stats: linkem restarted, the run's pcap whole
        capture_files, capture_details = capture.record()
    with phase("record"):
        delta = linkem_delta(audit.before, audit.after)
        (run_dir / "linkem.json").write_text(json.dumps(delta, indent=1))
        rel = lambda name: str((run_dir / name).relative_to(bench.out_dir))  # noqa: E731
        artifacts = {k: rel(v) for k, v in {**m.artifacts, **capture_files}.items() if (run_dir / v).exists()}
        artifacts["linkem"] = rel("linkem.json")
        cpu_metrics, cpu_details = cpu_figures(a)
        m.metrics = {**m.metrics, **cpu_metrics}
        m.details = {**m.details, **cpu_details, **capture_details, "host_buffers": tb.host_buffers.as_dict()}
        m.details["receiver_drops"] = a.receiver_drops  # UDP datagrams the endpoints' sockets dropped
        if queue := queue_figures(delta):  # the bottleneck's queue: its delay, drops and marks
            m.details["queue"] = queue
        if trace_phase is not None:
            m.details[TRACE_PHASE_DETAIL] = trace_phase
        if "handover" in delta:  # when the run's first path went down, and what it lost
            m.details["handover"] = handover_detail(delta["handover"], audit.t0_ms)
        if "nat_rebindings" in delta:  # when each of the run's flows was rebound, from its start
            m.details["nat_rebindings"] = [
                {**e, "t_ms": round(e["mono_ms"] - audit.t0_ms, 3)} for e in delta["nat_rebindings"]
            ]
        if tb.cpus.as_dict():
            m.details["cpus"] = tb.cpus.as_dict()
            m.details["cpus_shared"] = tb.cpus.shared()
        record = RunRecord.of(
            m,
            run_id=run_id,
            cell_id=cell.id,
            round=round_index,
            position=position,
            arm=arm.label,
            attempt=attempt,
            duration_s=wall,
            artifacts=artifacts,
            audit=a.as_dict(),
        )
    return record, wall


def prepare_out_dir(out: Path, *, resume: bool, force: bool) -> None:
    """An experiment directory must be one longlook can write, and either new, empty, an
    experiment of its own (with --resume), or explicitly reused (--force)."""
    check_output(out, "--out", directory=True)
    if out.is_dir() and any(out.iterdir()) and not (out / DB_FILE).exists() and not force:
        raise LonglookError(
            f"--out {out}: holds other files and no experiment",
            hint="give a new or empty directory, or add --force to write into it",
        )
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".longlook-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise LonglookError(
            f"--out {out}: cannot write there ({e.strerror})", hint="give a directory you can write to"
        ) from None


class Executor(Protocol):
    """Runs a Runner's cells elsewhere than this machine's testbed (core.executors)."""

    def connected(self) -> ContextManager[Any]: ...

    def run_cells(self, runner: "Runner", store: Store, cells: list[CellBase]) -> None: ...


class Runner:
    """Runs one scenario of any kind into one experiment directory. `progress(event, **info)`
    is called as things happen, for a progress display; the library itself prints nothing."""

    def __init__(
        self,
        scenario: ScenarioBase,
        out_dir: Path,
        *,
        resume: bool = False,
        link_check: bool = True,
        link_check_duration_s: float = 2.0,
        progress: Callable[..., None] | None = None,
        force: bool = False,
        executor: "Executor | None" = None,
        allow_version_change: bool = False,
    ):
        self.scenario = scenario
        # resuming with other software than the experiment began with: recorded, not refused
        self.allow_version_change = allow_version_change
        self.executor = executor  # None: this machine's testbed (core.executors)
        self.node = socket.gethostname()  # recorded with every run (details["node"])
        self.force = force
        self.kind = get_kind(scenario.kind)
        self.out_dir = Path(out_dir)
        self.resume = resume
        self.link_check = link_check
        self.link_check_duration_s = link_check_duration_s
        self.progress = progress or (lambda *a, **k: None)
        self.summary = RunSummary(self.out_dir)
        # resolved now, so a missing client stops the experiment before its first run
        self.state = self.kind.prepare(scenario)
        linkem_datapath()  # a bad LONGLOOK_DATAPATH stops here, before a store is made
        for budget in scenario.client_cpu:  # and a device this machine cannot emulate
            check_fits(budget)

    def run(self) -> RunSummary:
        if self.executor is not None:  # before anything is written: no cluster, no experiment
            with self.executor.connected():
                return self._run()
        return self._run()

    def _run(self) -> RunSummary:
        started = time.monotonic()
        prepare_out_dir(self.out_dir, resume=self.resume, force=self.force)
        with Store.open(self.out_dir) as store:
            if store.experiment() is not None and not self.resume:
                raise LonglookError(
                    f"{self.out_dir} already holds an experiment",
                    hint="add --resume to continue it, or choose a new --out directory",
                )
            store.start_experiment(self.scenario, self._versions(), allow_version_change=self.allow_version_change)
            # once per experiment, like the testbed's set-up: not a cost each run pays
            self.summary.setup_s += time.monotonic() - started
            try:
                if self._run_grid(store):
                    ended = time.monotonic()
                    store.finish_experiment()
                    self.summary.short = self._shortfalls(store)
                    self.summary.setup_s += time.monotonic() - ended
                else:
                    self.summary.short = self._shortfalls(store)
            except (KeyboardInterrupt, Terminated) as e:
                self.summary.interrupted = True
                self.summary.signal = getattr(e, "signum", 2)
            finally:
                self.summary.wall_s = time.monotonic() - started
        return self.summary

    def _shortfalls(self, store: Store) -> list[str]:
        """Every cell's arms hold the counted runs a comparison needs (two per arm, or the
        rounds asked for when fewer), on the kind's primary metric."""
        sc = self.scenario
        metric = self.kind.primary_metric
        done = completion(
            store.runs_frame(),
            metric.name if metric else None,
            exclude_flagged=sc.fidelity.exclude_flagged,
            metric_free_arms=self.kind.metric_free_arms,
            failures_as_outcomes=sc.statistics.failures == "outcome" and metric is not None,
        )
        arms = [a.label for a in sc.arm_list()]
        return shortfalls(done, {c.id: arms for c in sc.cells()}, need=min(MIN_N, sc.rounds))

    def _versions(self) -> dict:
        return environment_versions(
            endpoint=binary_version("endpoint"),
            linkem=binary_version("linkem"),
            testbed={"sysctls": RECORDED_SYSCTLS, "datapath": linkem_datapath()},
            **self.kind.versions(self.scenario),
        )

    def _run_grid(self, store: Store) -> bool:
        """Run what is not settled yet; False when there was nothing to run (a resume of a
        finished experiment leaves it, its end time and its logs as they were)."""
        sc = self.scenario
        cells = sc.cells()
        per_cell = sc.rounds * len(sc.arm_list())
        settled = {c.id: len(store.settled(c.id, sc.retries, retry_flagged=sc.fidelity.retries_flagged)) for c in cells}
        todo = [c for c in cells if settled[c.id] < per_cell]
        self.summary.skipped_done = sum(settled.values())
        self.progress("start", total=sc.total_runs(), done=self.summary.skipped_done)
        if not todo:
            return False
        store.mark_running()
        if self.executor is not None:
            self.executor.run_cells(self, store, todo)
        else:
            self.run_cells(store, todo)
        return True

    def run_cells(self, ledger: "Ledger", cells: list[CellBase]) -> None:
        """The per-cell loop on this machine's testbed: link switch and self-check, rounds,
        alternation, retries, adaptive rounds. `ledger` is where it reads what is settled and
        writes what happened: the Store locally; on a Ray node (core.executors.ray_node) a scratch
        store that forwards every write to the driver, the one writer."""
        sc = self.scenario
        t0 = time.monotonic()
        with (
            Testbed(
                cells[0].link,
                id=None,
                workdir=self.out_dir / "testbed",
                base_dir=sc.base_dir,
                seed=sc.seed,
                cpus=sc.testbed.cpus,
                **self.kind.testbed_options_for(sc),
            ) as tb,
            self.kind.session(tb, self.out_dir) as session,
        ):
            stalls = StallWatch(tb)
            bench = Bench(sc, self.kind, self.state, self.out_dir, tb, session, stalls)
            current_link = None
            self.summary.setup_s += time.monotonic() - t0
            try:
                for cell in cells:
                    if cell.link != current_link:
                        self._switch_link(ledger, tb, cell, first=current_link is None)
                        current_link = cell.link
                    self._run_cell(ledger, bench, cell)
            finally:
                stalls.stop()
                teardown = time.monotonic()
        # the kind's session and the testbed taken down: set-up's counterpart, once
        self.summary.setup_s += time.monotonic() - teardown

    def _switch_link(self, store: "Ledger", tb: Testbed, cell: CellBase, first: bool) -> None:
        t0 = time.monotonic()
        if not first:
            tb.reconfigure(cell.link, base_dir=self.scenario.base_dir)
        if self.link_check:
            self.progress("link_check", link=cell.link_label)
            # the path without its NAT and AQM, then each AQM's signature; the runs with both
            result = self_check(
                tb,
                cell.link,
                duration_s=self.link_check_duration_s,
                base_dir=self.scenario.base_dir,
                depth=self.scenario.fidelity.link_check,
            )
            store.record_link_check(
                cell.link.name, cell.link.model_dump(exclude_none=True), result.to_dict(), result.ok, result.summary()
            )
            self.progress("link_checked", link=cell.link_label, ok=result.ok, summary=result.summary())
            if not result.ok:
                raise LinkCheckFailed(
                    result.summary(),
                    hint="the emulated path is not what the scenario says; "
                    "see `longlook link check` for the full table",
                )
        self.summary.setup_s += time.monotonic() - t0

    def _run_cell(self, store: "Ledger", bench: Bench, cell: CellBase) -> None:
        settled = store.settled(cell.id, self.scenario.retries, retry_flagged=self.scenario.fidelity.retries_flagged)
        phase = self.summary.phases
        with phase("store: attempts"):  # once a cell: each (round, arm) runs once in this loop
            tried = store.attempt_counts(cell.id)
        for round_index in range(self.scenario.rounds):
            order = self.scenario.round_order(cell, round_index)
            with phase("store: round order"):
                store.record_round_order(cell.id, round_index, [a.label for a in order])
            for position, arm in enumerate(order):
                if (round_index, arm.label) not in settled:
                    self._run_arm(
                        store, bench, cell, round_index, position, arm, tried.get((round_index, arm.label), 0)
                    )
            with phase("adaptive rounds"):
                more = self._needs_more_rounds(store, cell)
            if not more:
                break

    def _needs_more_rounds(self, store: "Ledger", cell: CellBase) -> bool:
        """`rounds = "adaptive"`: stop the cell once it has the rounds its pilot planned
        (core.adaptive); a fixed number of rounds always goes on to `rounds`."""
        sc = self.scenario
        rule = sc.adaptive_rounds
        if rule is None:
            return True
        runs = store.runs_frame()
        return needs_more_rounds(
            runs[runs["cell_id"] == cell.id],
            rule,
            sc.comparisons(),
            rule_metric(rule, self.kind),
            confidence=sc.statistics.confidence,
            exclude_flagged=sc.fidelity.exclude_flagged,
        )

    def _run_arm(
        self, store: "Ledger", bench: Bench, cell: CellBase, round_index: int, position: int, arm: ArmBase, tried: int
    ) -> None:
        """Attempts after the `tried` ones until one settles (or the retries run out)."""
        retries = self.scenario.retries
        retry_flagged = self.scenario.fidelity.retries_flagged
        phase = self.summary.phases
        for attempt in range(tried + 1, retries + 2):
            record, wall = measure_run(bench, cell, round_index, position, arm, attempt, phase)
            record.details.setdefault("node", self.node)
            done = settles(record.status, record.flagged, retry_flagged=retry_flagged)
            with phase("store: run"):
                store.record_run(record)
            self.summary.in_runs_s += wall
            self.summary.count(record)
            with phase("progress"):
                self.progress(
                    "run",
                    cell=cell.id,
                    arm=arm.label,
                    round=round_index,
                    status=record.status,
                    error=record.error,
                    flagged=record.flagged,
                    reasons=record.audit.get("reasons") or [],
                    text=self.kind.progress_text(record),
                    final=done or attempt > retries,
                )
            if done:
                return
