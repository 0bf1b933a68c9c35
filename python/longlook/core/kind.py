"""What a kind of experiment declares, and what it hands back from one run.

A kind is data plus one function that measures: its scenario model (the kind's part of the
file, on top of core.spec), its metrics, the tables it adds to the store, how to measure one
run (a `Measurement`; it never touches the store, so any executor can ship it back to the
one writer), and its report sections. Register it in `longlook/kinds/__init__.py`.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, ContextManager, Literal

if TYPE_CHECKING:
    from ..testbed import Testbed
    from .spec import ArmBase, CellBase, ScenarioBase


@dataclass(frozen=True)
class Metric:
    """A number a run yields, for the statistics: lower or higher is better."""

    name: str
    unit: str
    better: Literal["lower", "higher"] = "lower"
    title: str = ""
    # what a failed run is worth where the scenario counts failures as outcomes
    # ([statistics] failures = "outcome"): "timeout" (a time that never ended: the run's
    # timeout, censored) or "zero" (nothing delivered); None: no such value, failures stay out
    on_failure: Literal["timeout", "zero"] | None = None

    @property
    def lower_is_better(self) -> bool:
        return self.better == "lower"

    def failure_value(self, timeout_s: float) -> float | None:
        if self.on_failure == "zero":
            return 0.0
        if self.on_failure == "timeout":
            return timeout_s * {"ms": 1000.0, "s": 1.0}[self.unit]
        return None

    @property
    def label(self) -> str:
        return f"{self.title or self.name} ({self.unit})" if self.unit else (self.title or self.name)


_SQL_TYPES = {str: "VARCHAR", int: "BIGINT", float: "DOUBLE", bool: "BOOLEAN"}


def table_columns(row: type, rename: dict[str, str] | None = None, **extra: type) -> dict[str, str]:
    """A kind table's columns from the dataclass its rows come from (fields renamed by
    `rename`, plus `extra`)."""
    import typing

    hints = typing.get_type_hints(row)
    out = {}
    for f in fields(row):
        t = hints[f.name]
        base = next((a for a in typing.get_args(t) if a is not type(None)), t)  # X | None -> X
        out[(rename or {}).get(f.name, f.name)] = _SQL_TYPES[base]
    out.update({k: _SQL_TYPES[t] for k, t in extra.items()})
    return out


@dataclass
class Measurement:
    """One run's outcome as a kind reports it.

    status: ok | failed | timeout | protocol_mismatch (core.status). `metrics` are numbers
    for the statistics (None = not measured); `details` any other per-run values (JSON);
    `series` time series as rows {name, key, t_s, value}; `rows` rows of the kind's tables;
    `artifacts` name -> path relative to the run directory. `audit_reasons`: what the kind
    itself saw go wrong with the conditions (e.g. a CPU-starved client): they flag the run
    like a bad path does (core.audit)."""

    status: str
    error: str | None = None
    protocol_requested: str | None = None
    protocol_negotiated: str | None = None
    started_unix_ms: float | None = None
    metrics: dict[str, float | None] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    series: list[dict[str, Any]] = field(default_factory=list)
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    artifacts: dict[str, str] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    audit_reasons: list[str] = field(default_factory=list)


@dataclass
class RunContext:
    """What a kind's `measure` gets for one run: the live testbed, where to put files, the
    run's place in the grid, and what the kind keeps for the experiment (`state`, from its
    `prepare`) and for this testbed (`session`, from its `session`: its servers)."""

    testbed: "Testbed"
    scenario: "ScenarioBase"
    cell: "CellBase"
    arm: "ArmBase"
    round: int
    run_id: str
    run_dir: Path
    experiment_dir: Path  # what the runs of the experiment share: certificates, server logs
    state: dict[str, Any]  # what the kind's `prepare` returned, shared by all runs
    session: dict[str, Any] = field(default_factory=dict)  # what the kind's `session` yielded
    # where the run's client writes its TLS key log ([capture] keylog), None: no key log
    keylog: Path | None = None


class Kind:
    """Base of every kind; subclass and set the class attributes, implement `measure`."""

    name: ClassVar[str]
    scenario_model: ClassVar[type]  # a core.spec.ScenarioBase subclass
    metrics: ClassVar[tuple[Metric, ...]] = ()
    # arms whose runs measure something else than `metrics` (a stack's fingerprint): they
    # count by status and audit, never "short of rounds" for lacking the primary metric
    metric_free_arms: ClassVar[frozenset[str]] = frozenset()
    # extra store tables: name -> column definitions after `run_id VARCHAR` (DuckDB DDL)
    tables: ClassVar[dict[str, str]] = {}
    # linkem restarted before each run (a fresh flow log whose clock starts with the run)
    fresh_link_per_run: ClassVar[bool] = False
    testbed_options: ClassVar[dict[str, Any]] = {}
    # report sections: functions (store, analysis) -> Section | None, in order
    sections: ClassVar[tuple[Callable[..., Any], ...]] = ()

    def testbed_options_for(self, scenario: "ScenarioBase") -> dict[str, Any]:
        """The testbed's options for this scenario (Testbed's keywords): the kind's
        `testbed_options`, or more where a scenario needs them."""
        return dict(self.testbed_options)

    def prepare(self, scenario: "ScenarioBase") -> dict[str, Any]:
        """Before the grid, outside the testbed: resolve clients and check what is needed,
        so a missing piece stops the experiment before its first run."""
        return {}

    def session(self, testbed: "Testbed", experiment_dir: Path) -> ContextManager[dict[str, Any]]:
        """While a testbed lives (one per machine and batch of cells): what the kind's runs
        share on it, e.g. its servers (stacks.servers.serving), ended when the testbed is."""
        return contextlib.nullcontext({})

    def measure(self, ctx: RunContext) -> Measurement:
        raise NotImplementedError

    def versions(self, scenario: "ScenarioBase") -> dict[str, Any]:
        """Versions of whatever this kind runs beyond the core's (browsers, stacks)."""
        return {}

    def metric(self, name: str) -> Metric:
        for m in self.metrics:
            if m.name == name:
                return m
        raise KeyError(name)

    @property
    def primary_metric(self) -> Metric | None:
        return self.metrics[0] if self.metrics else None

    def progress_text(self, m: Any) -> str:
        """A few words about a finished run (its RunRecord) for the progress line."""
        metric = self.primary_metric
        if metric is None or m.metrics.get(metric.name) is None:
            return ""
        return f"{m.metrics[metric.name]:.0f} {metric.unit}"
