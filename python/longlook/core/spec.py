"""The part of a scenario every kind shares, and how a scenario file becomes a kind's model.

    kind = "pageload"        # which kind runs it (core.registry); default pageload
    name, description, seed
    rounds = 10              # (alias: runs) each cell measured this many times, arms back to back;
                             # or "adaptive" / {min, max, target_halfwidth_pct}: AdaptiveRounds
    retries, timeout_s
    [[links]]                # a sweep: any scalar field may be a list; rtt_ms = two equal delays
                             # ([link] = one link)
    [statistics]             # the test, alpha, Holm, survivorship, failures (core.stats)
    [fidelity]               # when a run's path was not what the scenario said (core.audit)
    [capture]                # per run: pcap at the router, TLS key log (core.capture)
    client_cpu = "phone-2014"  # the client's CPU budget (testbed/cpu.py): a device profile, a
                             # custom {quota = 0.2, cores = 1}, or a list of them swept as a
                             # cell dimension; every kind's grid is crossed with it here

A kind's model subclasses `ScenarioBase` with its own fields and returns its cells; errors
name the field (`links[0].rate_mbit[2]: ...`) whatever part of the file it is in.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import hashlib
import json
import random
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from ..errors import LonglookError, read_user_text
from .grid import check_size
from ..linkprofile import LinkProfile, linkem_refusal
from ..testbed.cpu import CpuBudget, CpuPinning
from ..traces import load_mahimahi
from .capture import Capture
from .links import expand_links, link_labels
from .validation import format_errors

DEFAULT_KIND = "pageload"
MAX_NAME = 128  # a scenario name is a directory name (255 bytes), and a label a table column
ALIASES = (("runs", "rounds"), ("link", "links"))  # (as a file may write it, the field)


class Statistics(BaseModel):
    """How every comparison of the experiment is made (core.stats)."""

    model_config = ConfigDict(extra="forbid")
    alpha: float = Field(default=0.01, gt=0, lt=1)
    test: Literal["welch", "mannwhitney"] = "welch"
    holm: bool = False  # the paper did not correct for multiple comparisons
    confidence: float = Field(default=0.95, gt=0, lt=1)
    # accepted so that older files still load; intervals are t-based now (core.effects)
    bootstrap_resamples: int = Field(default=9999, ge=100, le=1_000_000)
    # arms whose completions (counted / tried rounds) differ at this level (Fisher's exact
    # test) are "inconclusive: survivorship"
    survivorship_alpha: float = Field(default=0.05, gt=0, lt=1)
    # "outcome": a failed or timed-out run counts with the value its metric declares for a
    # failure (a page load as the timeout, censored) instead of being left out
    failures: Literal["excluded", "outcome"] = "excluded"


class Fidelity(BaseModel):
    """When a run's path was not what the scenario said. Each run's audit (core.audit) is
    held against these; a run over any of them is flagged and, with `exclude_flagged`, kept
    out of the statistics (shown with its reason in the report)."""

    model_config = ConfigDict(extra="forbid")
    exclude_flagged: bool = True
    # measure a flagged run's (round, arm) again, within `retries`, so the cell keeps its rounds
    retry_flagged: bool = True
    # linkem released a packet this much later than its due time (the path's delay was off)
    max_release_late_ms: float = Field(default=5.0, gt=0)
    # share of the run's released packets that were more than 1 ms late
    max_late_release_share: float = Field(default=0.01, ge=0, le=1)
    # packets the kernel dropped because linkem's queue was full (not the emulated buffer)
    max_kernel_queue_drops: int = Field(default=0, ge=0)
    # the machine could not run anything this long (hypervisor stall) while the run went on
    max_stall_ms: float = Field(default=5.0, gt=0)
    # UDP datagrams the client's and server's sockets dropped (a full receive buffer): a
    # loss the link did not make, which a QUIC sender takes for the path's
    max_receiver_drops: int = Field(default=0, ge=0)
    # a client with no CPU budget that kept this many cores busy on average over its run (its
    # cgroup's CPU time / the run's wall time) left the server and linkem too little of this
    # 2-vCPU machine: flagged. Chromium's start-up alone keeps about one core busy.
    max_client_cpu_cores: float = Field(default=1.6, gt=0)
    # how thoroughly each link profile is self-checked before its runs (testbed.linkcheck.DEPTHS):
    # "quick" leaves out iperf3 and three quarters of the RTT probes, for a session that only
    # shows its scenarios run; every run is audited all the same
    link_check: Literal["full", "quick"] = "full"

    @property
    def retries_flagged(self) -> bool:
        """A flagged run is measured again only when it would not count."""
        return self.exclude_flagged and self.retry_flagged


class TestbedOptions(BaseModel):
    """`[testbed]`: how the testbed itself runs. `cpus` pins parties to CPUs
    (testbed/cpu.py: CpuPinning)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    __test__ = False  # not a pytest test class
    cpus: CpuPinning = Field(default_factory=CpuPinning)


class AdaptiveRounds(BaseModel):
    """`rounds = "adaptive"` or `rounds = {min = 6, max = 40, target_halfwidth_pct = 5}`: a
    cell's first `min` rounds are a pilot; from their spread alone (each comparison, on
    `metric`, default the kind's first; each arm's own spread plus three times the part due
    to the arms' difference, arm labels ignored) the number of rounds is fixed once, between
    min and max, as the fewest that would bring the confidence interval of the % difference
    within +-target_halfwidth_pct, and the cell runs exactly that many. No later round and
    never the p-value is looked at, so the final test keeps its alpha when the arms differ
    in spread, and adds nothing to Welch's own excess when one is skewed (core.adaptive,
    with the simulated rates). The interval is planned, not guaranteed: a cell can end
    wider than the target. The scenario plans for `max` (`rounds` == max)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    min: int = Field(default=6, ge=2)  # a variance needs two runs per side
    max: int = Field(default=40, ge=2, le=10_000)  # as `rounds`
    target_halfwidth_pct: float = Field(default=5.0, gt=0)
    metric: str | None = None

    @model_validator(mode="after")
    def _min_le_max(self) -> "AdaptiveRounds":
        if self.min > self.max:
            raise ValueError(f"min ({self.min}) must not exceed max ({self.max})")
        return self


@dataclass(frozen=True)
class CellBase:
    """One point of a kind's grid. `id` is deterministic for a scenario file, so a resumed
    experiment finds its earlier runs. Kinds subclass it with their own fields."""

    id: str
    index: int
    link: LinkProfile
    link_label: str
    # the client's CPU budget (the scenario's client_cpu); None = none asked: unlimited
    client_cpu: CpuBudget | None = dataclasses.field(default=None, kw_only=True)

    def link_dims(self) -> dict[str, Any]:
        """The conditions every kind shares: the link, and the client's CPU when budgeted."""
        down = self.link.resolved("down")
        d = {
            "link": self.link_label,
            "rate_mbit": down.rate_mbit,
            "trace": down.trace,
            "rtt_ms": self.link.rtt_ms(),
            "loss": self.link.expected_loss("down"),
        }
        if self.client_cpu is not None:
            d["client_cpu"] = self.client_cpu.label
        return d

    def dims(self) -> dict[str, Any]:
        """Flat values for analysis (heatmap axes, grouping, matching cells across runs)."""
        return self.link_dims()

    def settings(self) -> dict[str, Any]:
        """The kind's own settings of this cell, stored as JSON beside it."""
        return {}

    def shown(self) -> dict[str, Any]:
        """What `longlook scenario show` prints of the cell beyond its link."""
        link = self.link_dims()
        return {k: v for k, v in self.dims().items() if k not in link}


class ArmBase(BaseModel):
    """One side of a comparison within a cell; a kind with a single arm still has one."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    label: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$", max_length=MAX_NAME)
    protocol: str | None = None  # what the run must verify it used (None: the kind checks)


class ScenarioBase(BaseModel):
    """A validated experiment of some kind. Build with `load_scenario(path)` or
    `parse_scenario(text)`; kinds subclass it."""

    model_config = ConfigDict(extra="forbid")
    kind: str = DEFAULT_KIND
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=MAX_NAME)
    description: str = ""
    # ranges where the model is defined: a seed the RNGs and the store take (64 bits), no
    # more rounds than a year of runs would hold, a run's timeout within a day
    seed: int = Field(default=1, ge=0, lt=2**63)
    rounds: int = Field(default=10, ge=1, le=10_000)  # adaptive: its max, the rule in adaptive_rounds
    retries: int = Field(default=2, ge=0, le=100)  # extra attempts after a failed run
    timeout_s: float = Field(default=60.0, gt=0, le=86_400)  # per run (a kind may derive its own)
    statistics: Statistics = Field(default_factory=Statistics)
    fidelity: Fidelity = Field(default_factory=Fidelity)
    testbed: TestbedOptions = Field(default_factory=TestbedOptions)
    capture: Capture = Field(default_factory=Capture)  # pcap and key log per run (core.capture)
    links: list[LinkProfile]
    # where a run over a trace meets it: every run at its start, or a phase per round shared
    # by the round's arms (core.trace_phase)
    trace_phase: Literal["start", "random"] = "start"
    # the client's CPU budgets (testbed/cpu.py); each kind cell runs once per budget
    client_cpu: list[CpuBudget] = []

    # the example file a kind points to in its errors
    example: ClassVar[str] = "scenarios/quick.toml"
    # a kind's own [fidelity] limits where the scenario's table is silent (a limit suited to
    # how long its runs last); the scenario's own values win
    fidelity_defaults: ClassVar[dict[str, Any]] = {}

    _toml_text: str | None = PrivateAttr(default=None)
    _base_dir: Path | None = PrivateAttr(default=None)
    _adaptive_rounds: AdaptiveRounds | None = PrivateAttr(default=None)

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        """A kind's `cells()` is crossed with the client CPU budgets here, so every kind
        gets the dimension without a line of its own."""
        super().__pydantic_init_subclass__(**kwargs)
        own = cls.__dict__.get("cells")
        if own is not None and not getattr(own, "crossed_with_client_cpu", False):

            @functools.wraps(own)
            def cells(self):
                check_size(self)  # before the product: a huge or empty grid is an error
                return self.with_client_cpu(own(self))

            cells.crossed_with_client_cpu = True
            cls.cells = cells

    def with_client_cpu(self, cells: list[CellBase]) -> list[CellBase]:
        """Each cell once per budget (innermost, so a link stays while its budgets run);
        the budget joins the cell id as `cpu=<label>`."""
        if not self.client_cpu:
            return cells
        out: list[CellBase] = []
        for c in cells:
            for b in self.client_cpu:
                out.append(dataclasses.replace(c, id=f"{c.id}|cpu={b.label}", index=len(out), client_cpu=b))
        return out

    @model_validator(mode="before")
    @classmethod
    def _kind_fidelity_defaults(cls, data: Any) -> Any:
        if isinstance(data, dict) and cls.fidelity_defaults:
            own = data.get("fidelity")
            if own is None or isinstance(own, dict):
                data = {**data, "fidelity": {**cls.fidelity_defaults, **(own or {})}}
        return data

    @field_validator("client_cpu", mode="before")
    @classmethod
    def _client_cpu_list(cls, v: Any) -> Any:
        return v if isinstance(v, list) else [v]

    @field_validator("client_cpu")
    @classmethod
    def _client_cpu_unique(cls, v: list[CpuBudget]) -> list[CpuBudget]:
        labels = [b.label for b in v]
        if len(set(labels)) != len(labels):
            raise ValueError(f"each budget once, got {labels}")
        return v

    @field_validator("rounds", mode="wrap")
    @classmethod
    def _rounds_adaptive(cls, v: Any, handler: Any) -> Any:
        if not (v == "adaptive" or isinstance(v, (dict, AdaptiveRounds))):
            return handler(v)
        try:
            return AdaptiveRounds.model_validate({} if v == "adaptive" else v)
        except ValidationError as e:
            raise ValueError(f"adaptive: {format_errors(e)}") from None

    @model_validator(mode="after")
    def _plan_adaptive_for_max(self) -> "ScenarioBase":
        # every other use of `rounds` (planning, progress, report) sees the budget: max
        if isinstance(self.rounds, AdaptiveRounds):
            rule = self.rounds
            self.rounds = rule.max
            self._adaptive_rounds = rule
        return self

    @property
    def adaptive_rounds(self) -> AdaptiveRounds | None:
        """The stopping rule when `rounds` is adaptive (then `rounds` is its max)."""
        return self._adaptive_rounds

    @model_validator(mode="before")
    @classmethod
    def _common_sugar(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for alias, field in ALIASES:
            if alias in data:
                if field in data:
                    raise ValueError(f"set {field} or {alias}, not both")
                data[field] = data.pop(alias)
        if "links" in data and not _already(data["links"], LinkProfile):
            data["links"] = expand_links(data["links"], top_fields=set(cls.model_fields) | {"runs", "link"})
        return data

    @model_validator(mode="after")
    def _links_named(self) -> "ScenarioBase":
        if not self.links:
            raise ValueError("links: give at least one link profile")
        labels = link_labels(self.links)
        given = [link.name for link in self.links]
        for i, (link, label) in enumerate(zip(self.links, labels)):
            # each profile is named by its label (link self-checks are recorded by name); a
            # name the user gave is kept when it is unique
            if link.name == "link" or given.count(link.name) > 1:
                name = label if link.name == "link" else f"{link.name}:{label}"
                self.links[i] = link.model_copy(update={"name": name})
        return self

    @model_validator(mode="after")
    def _nat_rebinding_within_a_run(self) -> "ScenarioBase":
        # a binding moves on its own clock, from its flow's first packet: a move later than
        # a run may last is one no run meets
        for i, link in enumerate(self.links):
            first = link.nat.first_rebinding_s() if link.nat is not None else None
            if first is not None and first >= self.timeout_s:
                raise ValueError(
                    f"links[{i}].nat: the first rebinding, {first:g} s after a flow starts, is past the "
                    f"run's timeout_s = {self.timeout_s:g}: no run would meet it; move it earlier"
                )
            if link.handover is not None and link.handover.at_s >= self.timeout_s:
                raise ValueError(
                    f"links[{i}].handover: at_s = {link.handover.at_s:g} s after the first packet is past the "
                    f"run's timeout_s = {self.timeout_s:g}: no run would meet it; move it earlier"
                )
        return self

    def _check_unique_cells(self) -> None:
        counts = collections.Counter(c.id for c in self.cells())
        dup = {i for i, n in counts.items() if n > 1}
        if dup:
            raise ValueError(f"the grid has duplicate cells: {sorted(dup)[0]} (a repeated entry?)")

    # -- what a kind provides

    def cells(self) -> list[CellBase]:
        raise NotImplementedError

    def grid_axes(self) -> dict[str, int]:
        """The length of each list `cells()` crosses (core.grid); kinds add theirs."""
        return {"links": len(self.links)}

    def arm_list(self) -> list[ArmBase]:
        """The arms run in every round, in scenario order."""
        raise NotImplementedError

    def comparisons(self) -> list[tuple[str, str]]:
        """(arm, baseline) label pairs the statistics compare; none for a single-arm kind."""
        return []

    # -- the grid, shared

    def link_labels(self) -> list[str]:
        return link_labels(self.links)

    def cell(self, cell_id: str) -> CellBase:
        for c in self.cells():
            if c.id == cell_id:
                return c
        raise KeyError(cell_id)

    def arm(self, label: str) -> ArmBase:
        return next(a for a in self.arm_list() if a.label == label)

    def round_order(self, cell: CellBase, round_index: int) -> list[ArmBase]:
        """The arms in the order to run them in this round: shuffled, reproducibly from the
        seed, the cell and the round (so a resumed run repeats the same order)."""
        key = f"{self.seed}|{cell.id}|{round_index}".encode()
        rng = random.Random(int.from_bytes(hashlib.sha256(key).digest()[:8], "big"))
        arms = list(self.arm_list())
        rng.shuffle(arms)
        return arms

    def run_link(self, cell: CellBase, arm: ArmBase, round_index: int) -> LinkProfile:
        """The link one run gets (restarted per run where the kind asks): the cell's, unless
        the scenario intervenes per run (a video scenario's [intervention])."""
        return cell.link

    def total_runs(self) -> int:
        return len(self.cells()) * self.rounds * len(self.arm_list())

    @property
    def toml_text(self) -> str | None:
        """The file as written (stored with the results so the experiment can be re-run)."""
        return self._toml_text

    @property
    def base_dir(self) -> Path:
        """Where relative paths (traces) start: the scenario file's directory, else the
        working directory."""
        return self._base_dir or Path.cwd()

    def check_files(self, source: str) -> None:
        """Traces exist and parse, and linkem accepts every link as it will run it (one
        validation for Python and linkem: linkprofile.linkem_refusal), before the first run."""
        seen: set[str] = set()
        for link in self.links:
            for part in link.segments or (link,):
                for which in ("up", "down"):
                    trace = part.resolved(which).trace
                    if trace and not (self.base_dir / trace).is_file():
                        raise LonglookError(
                            f"{source}: link {link.name}: {which} trace: no such file {self.base_dir / trace}",
                            hint="trace paths are relative to the scenario file",
                        )
                    if trace and trace not in seen:
                        seen.add(trace)
                        load_mahimahi(self.base_dir / trace)
            refusal = linkem_refusal(link, self.base_dir)
            if refusal:
                raise LonglookError(f"{source}: {refusal}", hint="linkem's ranges: crates/linkem/README.md")

    @classmethod
    def from_toml(cls, text: str, source: str = "<scenario>", base_dir: Path | None = None) -> "ScenarioBase":
        """Parse and validate as this model (a kind's model: its `kind` may be omitted)."""
        data = _parse_toml(text, source)
        return _validate(cls, data, text, source, base_dir)


def _already(v: Any, model: type) -> bool:
    return isinstance(v, list) and all(isinstance(x, model) for x in v)


def _parse_toml(text: str, source: str) -> dict:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise LonglookError(f"{source}: not valid TOML: {e}") from None


def _validate(model: type[ScenarioBase], data: dict, text: str, source: str, base_dir: Path | None) -> ScenarioBase:
    try:
        scenario = model(**data)
    except ValidationError as e:
        # name a field as the file wrote it (runs = ..., [link])
        written = {field: alias for alias, field in ALIASES if alias in data}
        raise LonglookError(
            f"{source}: {format_errors(e, set(model.model_fields), written, data)}",
            hint=f"see {model.example} for a commented example",
        ) from None
    scenario._toml_text = text
    scenario._base_dir = base_dir
    if base_dir is not None:
        scenario.check_files(source)
    return scenario


def parse_scenario(text: str, source: str = "<scenario>", base_dir: Path | None = None) -> ScenarioBase:
    """Any kind's scenario: `kind` picks the model (core.registry)."""
    from .registry import get_kind

    data = _parse_toml(text, source)
    name = data.get("kind", DEFAULT_KIND)
    if not isinstance(name, str):
        raise LonglookError(
            f"{source}: kind: must be one kind's name, got {name!r}",
            hint='one experiment has one kind, e.g. kind = "pageload"; a file per kind',
        )
    try:
        kind = get_kind(name)
    except LonglookError as e:
        raise LonglookError(f"{source}: kind: {e.message}", hint=e.hint) from None
    scenario = _validate(kind.scenario_model, data, text, source, base_dir)
    rule = scenario.adaptive_rounds
    names = [m.name for m in kind.metrics]
    if rule is not None and rule.metric is not None and rule.metric not in names:
        # the rule would never find its metric and always run to max
        raise LonglookError(
            f"{source}: rounds.metric: {rule.metric!r} is not a metric of kind {name!r}",
            hint=f"its metrics: {', '.join(names)}",
        )
    return scenario


def scenario_differences(a: ScenarioBase, b: ScenarioBase) -> list[str]:
    """What differs between two scenarios as parsed (comments and layout do not count), as
    "field: old -> new" lines."""

    def flat(v: Any, key: str = "") -> dict[str, Any]:
        if isinstance(v, dict):
            return {k: x for name, item in v.items() for k, x in flat(item, f"{key}.{name}" if key else name).items()}
        if isinstance(v, list):
            return {k: x for i, item in enumerate(v) for k, x in flat(item, f"{key}[{i}]").items()} or {key: []}
        return {key: v}

    fa, fb = flat(a.model_dump(mode="json")), flat(b.model_dump(mode="json"))
    return [
        f"{k}: {fa.get(k, '(unset)')!r} -> {fb.get(k, '(unset)')!r}"
        for k in sorted(set(fa) | set(fb))
        if fa.get(k) != fb.get(k)
    ]


def arms_added(stored: ScenarioBase, now: ScenarioBase) -> list[str] | None:
    """The labels of the arms `now` adds to `stored`, when that is all that differs: an
    experiment grown by arms, such as a matrix given one more stack. Its description (prose)
    and its baseline (which the arms give when not named, and which the analysis reads, not
    the measurement) may follow. None when anything else differs, or an arm of `stored`
    changed or is gone."""
    a, b = stored.model_dump(mode="json"), now.model_dump(mode="json")
    had = {arm["label"]: arm for arm in a.pop("arms", None) or []}
    has = {arm["label"]: arm for arm in b.pop("arms", None) or []}
    for field in ("description", "baseline"):
        a.pop(field, None)
        b.pop(field, None)
    if not had or a != b or any(has.get(label) != arm for label, arm in had.items()):
        return None
    return [label for label in has if label not in had]


def apply_overrides(data: dict, overrides: dict) -> dict:
    """The parsed file with `overrides` laid over it, before validation (a reduced budget of a
    shipped scenario: fewer rounds, a subset of the grid). Tables merge key by key; any other
    value (a list, a scalar) replaces the file's; `"links[*]" = {...}` is laid over every
    entry of the links list. An override of a field the file wrote by its alias (`runs`,
    `[link]`) replaces that alias."""
    out = dict(data)
    for key, value in overrides.items():
        each = key.endswith("[*]")
        key = key.removesuffix("[*]")
        alias = next((a for a, f in ALIASES if f == key and a in out), None)
        if alias is not None:
            out[key] = out.pop(alias)
        current = out.get(key)
        if each:
            items = current if isinstance(current, list) else [current] if isinstance(current, dict) else None
            if items is None or not isinstance(value, dict):
                raise LonglookError(f"override {key}[*]: {key} is not a list of tables")
            out[key] = [apply_overrides(item, value) for item in items]
        elif isinstance(value, dict) and isinstance(current, dict):
            out[key] = apply_overrides(current, value)
        else:
            out[key] = value
    return out


def load_scenario(path: str | Path, overrides: dict | None = None) -> ScenarioBase:
    """A scenario file; with `overrides` (apply_overrides), the scenario as overridden, whose
    stored text is that scenario written out (so a resume or a report sees what ran)."""
    path = Path(path)
    text = read_user_text(path, "scenario file", "scenarios/quick.toml")
    if overrides:
        import tomli_w

        data = apply_overrides(_parse_toml(text, str(path)), overrides)
        text = f"# {path.name} with overrides {json.dumps(overrides, sort_keys=True)}\n" + tomli_w.dumps(data)
    return parse_scenario(text, source=str(path), base_dir=path.resolve().parent)
