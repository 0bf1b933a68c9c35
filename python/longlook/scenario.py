"""Scenario: an experiment grid read from TOML, expanded into deterministic `Cell`s.

A scenario is links x workloads x options, each cell measured for `rounds` rounds; within a
cell the arms (by default one per protocol: h3, h2) are compared back to back. Protocols are
not a cell dimension because the comparison happens inside a cell.

Grids are short to write: any scalar link field may be a list (a sweep), workloads may be
given as "10x100k" strings or as a table of lists, and every option may be a list.
"""

from __future__ import annotations

import hashlib
import itertools
import random
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from .clients import KNOWN_CLIENTS
from .errors import LonglookError
from .linkprofile import Direction, LinkProfile

KNOWN_PROTOCOLS = ("h3", "h2")

# Link fields that may be given as a list to sweep over (Direction's scalar fields, plus the
# scenario-only shorthand rtt_ms = two equal one-way delays).
SWEEPABLE_LINK_FIELDS = tuple(
    f for f in Direction.model_fields if f not in ("gilbert_elliott", "reorder", "middlebox")
) + ("rtt_ms",)


# ---------------------------------------------------------------- sizes

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmMgG]?)\s*[bB]?\s*$")
_SIZE_UNITS = {"": 1, "k": 1000, "m": 1000**2, "g": 1000**3}
SIZE_HINT = "must be a size like 10k, 1m (k = 1,000 bytes, m = 1,000,000) or a number of bytes"


def parse_size(value: Any) -> int:
    """'10k' -> 10000 (decimal units, as the endpoint's /obj/<S> paths use)."""
    if isinstance(value, bool):
        raise ValueError(f"{SIZE_HINT}, got {value!r}")
    if isinstance(value, int):
        if value <= 0:
            raise ValueError(f"{SIZE_HINT}, got {value}")
        return value
    m = _SIZE_RE.match(str(value))
    if not m:
        raise ValueError(f'{SIZE_HINT}, got "{value}"')
    n = float(m.group(1)) * _SIZE_UNITS[m.group(2).lower()]
    if n <= 0 or n != int(n):
        raise ValueError(f'{SIZE_HINT} (a positive whole number of bytes), got "{value}"')
    return int(n)


def format_size(n: int) -> str:
    """10000 -> '10k', 1000000 -> '1m'; the endpoint accepts these forms (k and m only)."""
    for suffix, unit in (("m", 1000**2), ("k", 1000)):
        if n >= unit and n % unit == 0:
            return f"{n // unit}{suffix}"
    return str(n)


def _num(x: float) -> str:
    """Short, stable text for a number: 10.0 -> '10', 0.01 -> '0.01'."""
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


# ---------------------------------------------------------------- workloads

class Workload(BaseModel):
    """What one run fetches: a page of `object_count` objects of `object_size` bytes, or one
    bulk object."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    mode: Literal["page", "bulk"] = "page"
    object_count: int = Field(default=1, ge=1)
    object_size: int

    @field_validator("object_size", mode="before")
    @classmethod
    def _size(cls, v: Any) -> int:
        return parse_size(v)

    @model_validator(mode="after")
    def _bulk_is_one_object(self) -> "Workload":
        if self.mode == "bulk" and self.object_count != 1:
            raise ValueError("object_count: a bulk workload is one object (object_count = 1)")
        return self

    @property
    def label(self) -> str:
        size = format_size(self.object_size)
        return f"bulk-{size}" if self.mode == "bulk" else f"{self.object_count}x{size}"

    @property
    def total_bytes(self) -> int:
        return self.object_count * self.object_size

    def url_path(self) -> str:
        """The endpoint's synthetic content path (docs/interfaces.md)."""
        size = format_size(self.object_size)
        if self.mode == "bulk":
            return f"/bulk/{size}"
        return f"/page/{self.object_count}x{size}.html"


_WORKLOAD_STR_RE = re.compile(r"^\s*(?:(\d+)\s*[xX×]\s*)?(\S+)\s*$")


def _workload_from_string(s: str) -> dict:
    s = s.strip()
    for prefix in ("bulk:", "bulk-", "bulk "):
        if s.lower().startswith(prefix):
            return {"mode": "bulk", "object_size": s[len(prefix):]}
    m = _WORKLOAD_STR_RE.match(s)
    if not m:
        raise ValueError(f'must be like "10x100k" (count x size) or "bulk:10m", got "{s}"')
    return {"object_count": int(m.group(1) or 1), "object_size": m.group(2)}


# ---------------------------------------------------------------- options and arms

class CellOptions(BaseModel):
    """Stack settings of one cell. zero_rtt: keep session state between runs and attempt
    0-RTT where the protocol supports it (the paper kept it, Sec. 3.3)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    zero_rtt: bool = True
    quic_cc: Literal["cubic", "newreno", "bbr"] = "cubic"
    max_cwnd_packets: int | None = Field(default=None, gt=0)  # QUIC MACW; None = stack default
    tcp_cc: Literal["cubic", "bbr", "reno"] = "cubic"


def _on_off(v: Any) -> Any:
    if isinstance(v, str) and v.lower() in ("on", "off", "true", "false"):
        return v.lower() in ("on", "true")
    return v


class OptionGrid(BaseModel):
    """Each option as a list of values to sweep (a single value is a list of one)."""

    model_config = ConfigDict(extra="forbid")
    zero_rtt: list[bool] = [True]
    quic_cc: list[Literal["cubic", "newreno", "bbr"]] = ["cubic"]
    max_cwnd_packets: list[int] = []  # empty = stack default
    tcp_cc: list[Literal["cubic", "bbr", "reno"]] = ["cubic"]

    @field_validator("*", mode="before")
    @classmethod
    def _listify(cls, v: Any) -> Any:
        v = v if isinstance(v, list) else [v]
        return [_on_off(x) for x in v]

    @field_validator("max_cwnd_packets")
    @classmethod
    def _positive(cls, v: list[int]) -> list[int]:
        if any(x <= 0 for x in v):
            raise ValueError("must be a positive number of packets")
        return v

    def combinations(self) -> list[CellOptions]:
        macw: list[int | None] = list(self.max_cwnd_packets) or [None]
        # same nesting as the cell id (cc, tcpcc, macw, 0rtt): the last varies fastest
        return [CellOptions(zero_rtt=z, quic_cc=q, max_cwnd_packets=m, tcp_cc=t)
                for q, t, m, z in itertools.product(self.quic_cc, self.tcp_cc, macw, self.zero_rtt)]


def _check_protocol(p: str) -> str:
    if p not in KNOWN_PROTOCOLS:
        raise ValueError(f'unknown protocol "{p}"; known: {", ".join(KNOWN_PROTOCOLS)}')
    return p


def _check_client(c: str) -> str:
    if c not in KNOWN_CLIENTS:
        raise ValueError(f'unknown client "{c}"; known: {", ".join(KNOWN_CLIENTS)}')
    return c


class Arm(BaseModel):
    """One side of a comparison: a protocol plus option overrides, under a label. The default
    arms are one per protocol, labelled by it; Fig. 7 compares h3 with and without 0-RTT.
    `client` runs this arm with another client than the scenario's (native vs Chromium)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    label: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")
    protocol: str
    client: str | None = None
    zero_rtt: bool | None = None
    quic_cc: Literal["cubic", "newreno", "bbr"] | None = None
    max_cwnd_packets: int | None = Field(default=None, gt=0)
    tcp_cc: Literal["cubic", "bbr", "reno"] | None = None

    @field_validator("protocol")
    @classmethod
    def _protocol(cls, v: str) -> str:
        return _check_protocol(v)

    @field_validator("client")
    @classmethod
    def _client(cls, v: str | None) -> str | None:
        return None if v is None else _check_client(v)

    @field_validator("zero_rtt", mode="before")
    @classmethod
    def _zr(cls, v: Any) -> Any:
        return _on_off(v)

    def overrides(self) -> dict[str, Any]:
        """The cell options this arm overrides (the client is not a cell option)."""
        return {k: v for k, v in self.model_dump(exclude={"label", "protocol", "client"}).items()
                if v is not None}


class Statistics(BaseModel):
    model_config = ConfigDict(extra="forbid")
    alpha: float = Field(default=0.01, gt=0, lt=1)
    test: Literal["welch", "mannwhitney"] = "welch"
    holm: bool = False  # the paper did not correct for multiple comparisons
    confidence: float = Field(default=0.95, gt=0, lt=1)
    bootstrap_resamples: int = Field(default=9999, ge=100)


# ---------------------------------------------------------------- cells

@dataclass(frozen=True)
class RunOptions:
    """The effective settings of one run: cell options with the arm's overrides applied."""

    protocol: str
    zero_rtt: bool
    quic_cc: str
    max_cwnd_packets: int | None
    tcp_cc: str
    client: str = "native"  # which page-load client runs it (clients.fetcher)


@dataclass(frozen=True)
class Cell:
    """One point of the grid. Its `id` is deterministic for a scenario file, so a resumed
    experiment finds its earlier runs; it names the cell's settings (the link part names rate,
    RTT and loss, plus whatever else differs between the scenario's links)."""

    id: str
    index: int
    link: LinkProfile
    workload: Workload
    options: CellOptions
    link_label: str
    option_keys: tuple[str, ...]  # options that belong to the cell (not overridden per arm)
    client: str = "native"  # the scenario's client; an arm may name another

    def run_options(self, arm: Arm) -> RunOptions:
        merged = {**self.options.model_dump(), **arm.overrides()}
        return RunOptions(protocol=arm.protocol, client=arm.client or self.client, **merged)

    def dims(self) -> dict[str, Any]:
        """Flat values for analysis (heatmap axes, grouping)."""
        down = self.link.resolved("down")
        d: dict[str, Any] = {
            "link": self.link_label,
            "rate_mbit": down.rate_mbit,
            "trace": down.trace,
            "rtt_ms": self.link.rtt_ms(),
            "loss": self.link.expected_loss("down"),
            "workload": self.workload.label,
            "object_count": self.workload.object_count,
            "object_size": self.workload.object_size,
            "mode": self.workload.mode,
        }
        d.update({k: getattr(self.options, k) for k in self.option_keys})
        return d


_OPTION_ID = (("quic_cc", "cc"), ("tcp_cc", "tcpcc"), ("max_cwnd_packets", "macw"), ("zero_rtt", "0rtt"))


def _option_id(options: CellOptions, keys: tuple[str, ...]) -> list[str]:
    parts = []
    for key, short in _OPTION_ID:
        if key not in keys:
            continue
        v = getattr(options, key)
        text = ("on" if v else "off") if isinstance(v, bool) else ("default" if v is None else str(v))
        parts.append(f"{short}={text}")
    return parts


# ---------------------------------------------------------------- links

def _link_base_label(p: LinkProfile) -> str:
    up, down = p.resolved("up"), p.resolved("down")

    def rate(d: Direction) -> str:
        return f"trace:{Path(d.trace).stem}" if d.trace else f"{_num(d.rate_mbit)}mbit"

    r = rate(down) if rate(up) == rate(down) else f"down{rate(down)}-up{rate(up)}"
    lu, ld = p.expected_loss("up"), p.expected_loss("down")
    loss = _num(ld) if lu == ld else f"{_num(ld)}/{_num(lu)}"
    return f"{r}-{_num(p.rtt_ms())}ms,loss={loss}"


def _link_signature(p: LinkProfile) -> dict[str, Any]:
    """Every setting of a link, flattened per direction, for spotting what differs."""
    flat: dict[str, Any] = {}
    for which in ("up", "down"):
        for k, v in p.resolved(which).model_dump(exclude_none=True).items():
            if isinstance(v, dict):
                for kk, vv in v.items():
                    flat[f"{which}.{k}.{kk}"] = vv
            else:
                flat[f"{which}.{k}"] = v
    return flat


_SHORT_EXTRA = {"buffer_bytes": "buf", "buffer_packets": "bufpkts", "jitter_ms": "jitter",
                "jitter_distribution": "jitterdist"}


def _link_labels(profiles: list[LinkProfile]) -> list[str]:
    """Base label (rate, RTT, loss) plus every other setting that differs between the
    scenario's links, so labels are unique but short."""
    labels = _link_labels_with(profiles, covered=("rate_mbit", "trace", "delay_ms", "loss"))
    if len(set(labels)) < len(labels):  # e.g. same RTT split differently: spell out everything
        labels = _link_labels_with(profiles, covered=())
    return labels


def _link_labels_with(profiles: list[LinkProfile], covered: tuple[str, ...]) -> list[str]:
    sigs = [_link_signature(p) for p in profiles]
    keys = sorted({k for s in sigs for k in s})
    varying = [k for k in keys if len({repr(s.get(k)) for s in sigs}) > 1]
    labels = []
    for p, s in zip(profiles, sigs):
        extras: dict[str, str] = {}
        for k in varying:
            which, _, field = k.partition(".")
            if field.split(".")[0] in covered:
                continue
            name = _SHORT_EXTRA.get(field, field.replace(".", "-"))
            val = s.get(k)
            if val is None:  # not set on this link: its absence already tells it apart
                continue
            text = _num(val) if isinstance(val, (int, float)) and not isinstance(val, bool) else str(val)
            # one entry per field when both directions agree, else per direction
            other = s.get(("down" if which == "up" else "up") + "." + field)
            key = name if other == val else f"{which}-{name}"
            extras[key] = text
        labels.append(",".join([_link_base_label(p)] + [f"{k}={v}" for k, v in extras.items()]))
    return labels


def _expand_links(raw: Any) -> list[LinkProfile]:
    """Turn `[[links]]` entries with list-valued fields into one profile dict per combination.
    Errors name the entry and the list element: links[0].rate_mbit[2]: ..."""
    entries = raw if isinstance(raw, list) else [raw]
    where = (lambda i: "links") if not isinstance(raw, list) else (lambda i: f"links[{i}]")
    out: list[LinkProfile] = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ValueError(f"{where(i)}: must be a table of link settings")
        entry = dict(entry)
        for k in entry:
            if k not in LinkProfile.model_fields and (trap := _misplaced_key(where(i), k)):
                raise ValueError(trap)
        lists = {k: v for k, v in entry.items() if isinstance(v, list)}
        for k in lists:
            if k not in SWEEPABLE_LINK_FIELDS:
                raise ValueError(f"{where(i)}.{k}: cannot be a list; fields that sweep: "
                                 f"{', '.join(SWEEPABLE_LINK_FIELDS)}")
            if not lists[k]:
                raise ValueError(f"{where(i)}.{k}: empty list")
        keys = list(lists)
        for combo in itertools.product(*(list(enumerate(lists[k])) for k in keys)):
            d = dict(entry)
            pos = {}
            for k, (j, v) in zip(keys, combo):
                d[k] = v
                pos[k] = j
            if "rtt_ms" in d:
                if "delay_ms" in d:
                    raise ValueError(f"{where(i)}: set rtt_ms or delay_ms, not both")
                rtt = d.pop("rtt_ms")
                if not isinstance(rtt, (int, float)) or isinstance(rtt, bool) or rtt < 0:
                    loc = f"rtt_ms[{pos['rtt_ms']}]" if "rtt_ms" in pos else "rtt_ms"
                    raise ValueError(f"{where(i)}.{loc}: must be a number of ms >= 0, got {rtt!r}")
                d["delay_ms"] = rtt / 2
                if "rtt_ms" in pos:
                    pos["delay_ms"] = pos.pop("rtt_ms")
            try:
                profile = LinkProfile(**d)
            except ValidationError as e:
                raise ValueError("; ".join(
                    _at(where(i), _loc(err['loc'], pos), _msg(err)) for err in e.errors())) from None
            out.append(profile)
    return out


# ---------------------------------------------------------------- workloads (sugar)

def _expand_workloads(raw: Any) -> list[Workload]:
    entries = raw if isinstance(raw, list) else [raw]
    where = (lambda i: "workloads") if not isinstance(raw, list) else (lambda i: f"workloads[{i}]")
    out: list[Workload] = []
    for i, entry in enumerate(entries):
        try:
            if isinstance(entry, str):
                entry = _workload_from_string(entry)
        except ValueError as e:
            raise ValueError(f"{where(i)}: {e}") from None
        if not isinstance(entry, dict):
            raise ValueError(f'{where(i)}: must be "10x100k", "bulk:10m" or a table, got {entry!r}')
        for k in entry:
            if k not in Workload.model_fields and (trap := _misplaced_key(where(i), k)):
                raise ValueError(trap)
        lists = {k: v for k, v in entry.items() if isinstance(v, list)}
        keys = list(lists)
        for combo in itertools.product(*(list(enumerate(lists[k])) for k in keys)):
            d = dict(entry)
            pos = {}
            for k, (j, v) in zip(keys, combo):
                d[k] = v
                pos[k] = j
            try:
                out.append(Workload(**d))
            except ValidationError as e:
                raise ValueError("; ".join(
                    _at(where(i), _loc(err['loc'], pos), _msg(err)) for err in e.errors())) from None
    return out


def _misplaced_key(where: str, key: str) -> str | None:
    """TOML's trap: a top-level key written after a [table] header belongs to that table."""
    if key not in Scenario.model_fields:
        return None
    return (f"{where}.{key}: not a field here; in TOML every key after a [table] header belongs "
            f"to that table: move `{key} = ...` above the first [table]")


def _at(where: str, loc: str, msg: str) -> str:
    return f"{where}.{loc}: {msg}" if loc else f"{where}: {msg}"


def _loc(loc: tuple, positions: dict[str, int]) -> str:
    """pydantic loc -> 'field[j].sub'; loc () (a model-level check) names no field."""
    parts: list[str] = []
    for x in loc:
        if isinstance(x, int):
            parts[-1] += f"[{x}]"
        else:
            parts.append(str(x))
            if len(parts) == 1 and x in positions:
                parts[-1] += f"[{positions[x]}]"
    return ".".join(parts)


def _msg(err: dict) -> str:
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        return "unknown field"
    inp = err.get("input")
    # say what was given, unless the message already does or the input is a whole table
    if (err["type"] != "missing" and "got" not in msg and not isinstance(inp, (dict, list))
            and str(inp) not in msg):
        msg += f", got {inp!r}"
    return msg


# ---------------------------------------------------------------- scenario

class Scenario(BaseModel):
    """A validated experiment. Build with `load_scenario(path)` or `Scenario.from_toml(text)`."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    description: str = ""
    seed: int = 1
    rounds: int = Field(default=10, ge=1)
    client: str = "native"  # default for every arm; [[arms]] may set their own
    chromium_netlog: bool = False  # keep Chromium's net-log of each Chromium run
    protocols: list[str] = ["h3", "h2"]
    arms: list[Arm] = []
    baseline: str | None = None  # label of the arm others are compared against; default last
    timeout_s: float = Field(default=60.0, gt=0)  # per fetch
    retries: int = Field(default=2, ge=0)  # extra attempts after a failed run
    statistics: Statistics = Field(default_factory=Statistics)
    links: list[LinkProfile]
    workloads: list[Workload]
    options: OptionGrid = Field(default_factory=OptionGrid)

    _toml_text: str | None = PrivateAttr(default=None)
    _base_dir: Path | None = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _expand(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if "links" in data and not _already(data["links"], LinkProfile):
            data["links"] = _expand_links(data["links"])
        if "workloads" in data and not _already(data["workloads"], Workload):
            data["workloads"] = _expand_workloads(data["workloads"])
        return data

    @field_validator("client")
    @classmethod
    def _client(cls, v: str) -> str:
        return _check_client(v)

    @field_validator("protocols")
    @classmethod
    def _protocols(cls, v: list[str]) -> list[str]:
        for p in v:
            _check_protocol(p)
        if len(set(v)) != len(v):
            raise ValueError("each protocol once")
        return v

    @model_validator(mode="after")
    def _arms_and_grid(self) -> "Scenario":
        if not self.links:
            raise ValueError("links: give at least one link profile")
        if not self.workloads:
            raise ValueError("workloads: give at least one workload")
        if self.arms and "protocols" in self.model_fields_set:
            raise ValueError("set either protocols or [[arms]], not both")
        if not self.arms:
            self.arms = [Arm(label=p, protocol=p) for p in self.protocols]
        labels = [a.label for a in self.arms]
        if len(set(labels)) != len(labels):
            raise ValueError(f"arms: labels must be unique, got {labels}")
        if len(self.arms) < 2:
            raise ValueError("a comparison needs at least two arms (e.g. protocols = [\"h3\", \"h2\"])")
        if self.baseline is None:
            self.baseline = labels[-1]
        elif self.baseline not in labels:
            raise ValueError(f'baseline: "{self.baseline}" is not an arm; arms: {", ".join(labels)}')
        self._name_links()
        for key in self._arm_option_keys():
            if len(getattr(self.options, key)) > 1:
                raise ValueError(f"options.{key}: set per arm, so it cannot also be swept here")
        ids = [c.id for c in self.cells()]
        dup = {i for i in ids if ids.count(i) > 1}
        if dup:
            raise ValueError(f"the grid has duplicate cells: {sorted(dup)[0]} (repeated link or workload?)")
        return self

    def _name_links(self) -> None:
        """Each profile is named by its label (link self-checks are recorded by name); a name
        the user gave is kept when it is unique."""
        labels = _link_labels(self.links)
        given = [l.name for l in self.links]
        for i, (link, label) in enumerate(zip(self.links, labels)):
            if link.name == "link" or given.count(link.name) > 1:
                name = label if link.name == "link" else f"{link.name}:{label}"
                self.links[i] = link.model_copy(update={"name": name})

    # -- construction

    @classmethod
    def from_toml(cls, text: str, source: str = "<scenario>",
                  base_dir: Path | None = None) -> "Scenario":
        """Parse and validate. With `base_dir` (the scenario file's directory), trace files
        are looked up relative to it and must exist."""
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise LonglookError(f"{source}: not valid TOML: {e}") from None
        try:
            scenario = cls(**data)
        except ValidationError as e:
            raise LonglookError(f"{source}: {format_errors(e)}",
                                hint="see scenarios/quick.toml for a commented example") from None
        scenario._toml_text = text
        scenario._base_dir = base_dir
        if base_dir is not None:
            scenario._check_traces(source)
        return scenario

    def _check_traces(self, source: str) -> None:
        for link in self.links:
            for which in ("up", "down"):
                trace = link.resolved(which).trace
                if trace and not (self.base_dir / trace).is_file():
                    raise LonglookError(
                        f"{source}: link {link.name}: {which} trace: no such file {self.base_dir / trace}",
                        hint="trace paths are relative to the scenario file")

    @property
    def toml_text(self) -> str | None:
        """The file as written (stored with the results so the experiment can be re-run)."""
        return self._toml_text

    @property
    def base_dir(self) -> Path:
        """Where relative paths (traces) start: the scenario file's directory, else the
        working directory. Pass it to LinkProfile.to_linkem_toml(base_dir)."""
        return self._base_dir or Path.cwd()

    # -- the grid

    def _arm_option_keys(self) -> set[str]:
        return {k for a in self.arms for k in a.overrides()}

    def cells(self) -> list[Cell]:
        """links x workloads x options, in file order; deterministic."""
        overridden = self._arm_option_keys()
        keys = tuple(k for k, _ in _OPTION_ID if k not in overridden)
        labels = _link_labels(self.links)
        cells = []
        for (link, label), wl, opts in itertools.product(zip(self.links, labels), self.workloads,
                                                         self.options.combinations()):
            cid = "|".join([f"link={label}", f"wl={wl.label}", *_option_id(opts, keys)])
            cells.append(Cell(id=cid, index=len(cells), link=link, workload=wl, options=opts,
                              link_label=label, option_keys=keys, client=self.client))
        return cells

    def arm(self, label: str) -> Arm:
        return next(a for a in self.arms if a.label == label)

    def cell(self, cell_id: str) -> Cell:
        for c in self.cells():
            if c.id == cell_id:
                return c
        raise KeyError(cell_id)

    def comparisons(self) -> list[tuple[str, str]]:
        """(arm, baseline) label pairs; % difference = (baseline - arm) / baseline * 100."""
        return [(a.label, self.baseline) for a in self.arms if a.label != self.baseline]

    def round_order(self, cell: Cell, round_index: int) -> list[Arm]:
        """The arms in the order to run them in this round: shuffled, reproducibly from the
        seed, the cell and the round (so a resumed run repeats the same order)."""
        key = f"{self.seed}|{cell.id}|{round_index}".encode()
        rng = random.Random(int.from_bytes(hashlib.sha256(key).digest()[:8], "big"))
        arms = list(self.arms)
        rng.shuffle(arms)
        return arms

    def total_runs(self) -> int:
        return len(self.cells()) * self.rounds * len(self.arms)


def _already(v: Any, model: type) -> bool:
    return isinstance(v, list) and all(isinstance(x, model) for x in v)


def format_errors(e: ValidationError) -> str:
    """`field[i].sub: message; ...` - like linkprofile.format_validation_error, with list
    indices in brackets."""
    parts = []
    for err in e.errors():
        loc = _loc(err["loc"], {}) if err["loc"] else ""
        msg = _msg(err)
        if err["type"] == "extra_forbidden" and len(err["loc"]) > 1:
            trap = _misplaced_key(_loc(err["loc"][:-1], {}), str(err["loc"][-1]))
            if trap:
                parts.append(trap)
                continue
        parts.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(parts)


def load_scenario(path: str | Path) -> Scenario:
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise LonglookError(f"{path}: no such scenario file", hint="see scenarios/ for examples") from None
    return Scenario.from_toml(text, source=str(path), base_dir=path.resolve().parent)
