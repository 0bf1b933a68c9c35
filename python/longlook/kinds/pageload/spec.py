"""The page-load kind's part of a scenario: workloads x options per link, arms compared
within each cell (by default one per protocol: h3, h2).

Grids are short to write: workloads may be "10x100k" strings or tables of lists, and every
option may be a list. Protocols are not a cell dimension: the comparison happens inside a
cell, back to back.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from ...core.spec import ArmBase, CellBase, ScenarioBase
from ...errors import LonglookError
from ...units import format_size, parse_size
from ...core.validation import expand_sweep
from ...stacks.base import CLIENT_CASES, OURS, SERVER_CASES
from ...stacks.clients import KNOWN_CLIENTS
from ...stacks.endpoint import NATIVE_CASE_ARGV
from ...stacks.race import RaceSettings
from ...stacks.builds.release_arms import release_arms
from ...stacks.registry import is_stack, resolve
from ...stacks.builds.specs import check_spec
from ...stacks.congestion import QuicCC, TcpCC

# "race": the QUIC-enabled racing client (stacks/race.py); counted as itself, never as h3
KNOWN_PROTOCOLS = ("h3", "h2", "race")
# Split-connection proxy of a cell (Kakhki §5; testbed/proxies.py): "tcp" relays the h2 arms'
# TCP, "quic" terminates the h3 arms' QUIC; the other protocol's arm goes straight through.
ProxyMode = Literal["none", "tcp", "quic"]


class Workload(BaseModel):
    """What one run fetches: a page of `object_count` objects of `object_size` bytes, or one
    bulk object."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    mode: Literal["page", "bulk"] = "page"
    # what `endpoint serve` will generate (crates/endpoint/src/content.rs MAX_OBJECTS,
    # MAX_SIZE): beyond it every run would fail with a 404
    object_count: int = Field(default=1, ge=1, le=1000)
    object_size: int = Field(ge=1, le=10_000_000_000)

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


def _workload_entry(entry: Any) -> Any:
    if not isinstance(entry, str):
        if not isinstance(entry, dict):
            raise ValueError(f'must be "10x100k", "bulk:10m" or a table, got {entry!r}')
        return entry
    s = entry.strip()
    for prefix in ("bulk:", "bulk-", "bulk "):
        if s.lower().startswith(prefix):
            return {"mode": "bulk", "object_size": s[len(prefix) :]}
    m = _WORKLOAD_STR_RE.match(s)
    if not m:
        raise ValueError(f'must be like "10x100k" (count x size) or "bulk:10m", got "{s}"')
    return {"object_count": int(m.group(1) or 1), "object_size": m.group(2)}


class CellOptions(BaseModel):
    """Stack settings of one cell. zero_rtt: keep session state between runs and attempt
    0-RTT where the protocol supports it (the paper kept it, Sec. 3.3)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    zero_rtt: bool = True
    quic_cc: QuicCC = "cubic"
    max_cwnd_packets: int | None = Field(default=None, gt=0)  # QUIC MACW; None = stack default
    tcp_cc: TcpCC = "cubic"
    initial_window_packets: int | None = Field(default=None, gt=0)  # QUIC initial window; None = quinn's
    n_conn: int | None = Field(default=None, gt=0)  # Cubic's N-connection emulation; None = 1
    # ECN on (QUIC ECT(0), TCP asks for it) or off (not-ECT both); None = each side's default:
    # quinn marks ECT(0), the kernel's TCP answers ECN but never asks (net.ipv4.tcp_ecn = 2)
    ecn: bool | None = None


def _on_off(v: Any) -> Any:
    if isinstance(v, str) and v.lower() in ("on", "off", "true", "false"):
        return v.lower() in ("on", "true")
    return v


class OptionGrid(BaseModel):
    """Each option as a list of values to sweep (a single value is a list of one)."""

    model_config = ConfigDict(extra="forbid")
    zero_rtt: list[bool] = [True]
    quic_cc: list[QuicCC] = ["cubic"]
    max_cwnd_packets: list[int] = []  # empty = stack default
    tcp_cc: list[TcpCC] = ["cubic"]
    initial_window_packets: list[int] = []  # empty = quinn's default
    n_conn: list[int] = []  # empty = one connection's Cubic
    ecn: list[bool] = []  # empty = each side's default (CellOptions.ecn)

    @field_validator("*", mode="before")
    @classmethod
    def _listify(cls, v: Any) -> Any:
        v = v if isinstance(v, list) else [v]
        return [_on_off(x) for x in v]

    @field_validator("max_cwnd_packets", "initial_window_packets", "n_conn")
    @classmethod
    def _positive(cls, v: list[int]) -> list[int]:
        if any(x <= 0 for x in v):
            raise ValueError("must be a positive number")
        return v

    def combinations(self) -> list[CellOptions]:
        macw: list[int | None] = list(self.max_cwnd_packets) or [None]
        iw: list[int | None] = list(self.initial_window_packets) or [None]
        nconn: list[int | None] = list(self.n_conn) or [None]
        ecn: list[bool | None] = list(self.ecn) or [None]
        # same nesting as the cell id (cc, tcpcc, macw, iw, nconn, 0rtt, ecn): the last varies fastest
        return [
            CellOptions(zero_rtt=z, quic_cc=q, max_cwnd_packets=m, tcp_cc=t, initial_window_packets=i, n_conn=n, ecn=e)
            for q, t, m, i, n, z, e in itertools.product(self.quic_cc, self.tcp_cc, macw, iw, nconn, self.zero_rtt, ecn)
        ]


def _check_protocol(p: str) -> str:
    if p not in KNOWN_PROTOCOLS:
        raise ValueError(f'unknown protocol "{p}"; known: {", ".join(KNOWN_PROTOCOLS)}')
    return p


def _check_client(c: str) -> str:
    if is_stack(c):  # another QUIC stack's client (stacks/registry.py), "NAME" or "NAME@VERSION"
        return check_spec(c)
    if c not in KNOWN_CLIENTS:
        raise ValueError(f'unknown client "{c}"; known: {", ".join(KNOWN_CLIENTS)} or a stack (longlook stacks list)')
    return c


def _check_server(s: str) -> str:
    return s if s == OURS else check_spec(s)


ClientName = Annotated[str, AfterValidator(_check_client)]
ServerName = Annotated[str, AfterValidator(_check_server)]
ProtocolName = Annotated[str, AfterValidator(_check_protocol)]


class Arm(ArmBase):
    """One side of a comparison: a protocol plus option overrides, under a label. The default
    arms are one per protocol, labelled by it; Fig. 7 compares h3 with and without 0-RTT.
    `client` runs this arm with another client than the scenario's (native vs Chromium), or
    another QUIC stack's; `server` with another stack's server (`server_cc`: its congestion
    control, default the stack's own; `quic_cc` is our endpoint's)."""

    protocol: ProtocolName
    client: ClientName | None = None
    server: ServerName | None = None
    server_cc: str | None = None
    zero_rtt: bool | None = None
    quic_cc: QuicCC | None = None
    max_cwnd_packets: int | None = Field(default=None, gt=0)
    tcp_cc: TcpCC | None = None
    initial_window_packets: int | None = Field(default=None, gt=0)
    n_conn: int | None = Field(default=None, gt=0)
    ecn: bool | None = None
    # an interop case to ask a stack's client for (stacks.base.CLIENT_CASES; the matrix's arms)
    client_case: str | None = None
    # an interop case the server is started for (stacks.base.SERVER_CASES: Retry)
    server_case: str | None = None

    @field_validator("zero_rtt", "ecn", mode="before")
    @classmethod
    def _zr(cls, v: Any) -> Any:
        return _on_off(v)

    @model_validator(mode="after")
    def _stacks_speak_h3(self) -> "Arm":
        if (self.server not in (None, OURS) or (self.client and is_stack(self.client))) and self.protocol != "h3":
            raise ValueError(f'arm "{self.label}": another QUIC stack\'s server or client runs h3 only')
        if self.server_cc is not None and self.server in (None, OURS):
            raise ValueError(f'arm "{self.label}": server_cc is for a stack\'s server; our endpoint uses quic_cc')
        if self.client_case is not None:
            self._check_client_case()
        if self.server_case is not None:
            self._check_server_case()
        if self.server_cc is not None:  # one the stack offers, checked now rather than at its first run
            try:
                resolve(self.server).cc(self.server_cc)
            except LonglookError as e:
                raise ValueError(f'arm "{self.label}": {e.message}; {e.hint}') from None
        return self

    def _check_client_case(self) -> None:
        """client_case: one of CLIENT_CASES that the named client (the native one, or a QUIC
        stack's) can be asked for."""
        case = self.client_case
        if case not in CLIENT_CASES:
            raise ValueError(f'arm "{self.label}": client_case must be one of {", ".join(CLIENT_CASES)}')
        if self.client == "native":
            if case not in NATIVE_CASE_ARGV or self.protocol != "h3":
                can = ", ".join(NATIVE_CASE_ARGV)
                raise ValueError(
                    f'arm "{self.label}": the native client can be asked for {can} over h3 (resumption and '
                    f"0-RTT are zero_rtt = true), not {case} over {self.protocol}"
                )
            return
        if not (self.client and is_stack(self.client)):
            raise ValueError(
                f'arm "{self.label}": client_case asks the native client or a QUIC stack\'s client; '
                'name it in client (client = "native" for ours)'
            )
        stack = resolve(self.client)
        if case not in stack.client_cases:
            can = ", ".join(stack.client_cases) or "none"
            raise ValueError(f'arm "{self.label}": {stack.name}\'s client cannot be asked for {case} (it can: {can})')

    def _check_server_case(self) -> None:
        """server_case: one of SERVER_CASES that the named server (ours when none) can be
        started for, over h3."""
        case = self.server_case
        if case not in SERVER_CASES:
            raise ValueError(f'arm "{self.label}": server_case must be one of {", ".join(SERVER_CASES)}')
        if self.protocol != "h3":
            raise ValueError(f'arm "{self.label}": server_case is a QUIC case: it needs protocol = "h3"')
        stack = resolve(self.server or OURS)
        if case not in stack.server_cases:
            can = ", ".join(stack.server_cases) or "none"
            raise ValueError(f'arm "{self.label}": {stack.name}\'s server cannot be started for {case} (it can: {can})')

    def overrides(self) -> dict[str, Any]:
        """The cell options this arm overrides (client and server are not cell options)."""
        return {
            k: v
            for k, v in self.model_dump(
                exclude={"label", "protocol", "client", "server", "server_cc", "client_case", "server_case"}
            ).items()
            if v is not None
        }


@dataclass(frozen=True)
class RunOptions:
    """The effective settings of one run: cell options with the arm's overrides applied."""

    protocol: str
    zero_rtt: bool
    quic_cc: str
    max_cwnd_packets: int | None
    tcp_cc: str
    client: str = "native"  # which page-load client runs it (stacks.clients.fetcher, or a stack)
    server: str = OURS  # which server: our endpoint or a stack (stacks/registry.py)
    server_cc: str | None = None  # the stack server's congestion control (None: its default)
    proxy: str = "none"  # the cell's proxy mode (ProxyMode); the run is proxied if it applies
    initial_window_packets: int | None = None  # our endpoint's QUIC initial window (None: quinn's)
    n_conn: int | None = None  # our endpoint's Cubic N-connection emulation (None: 1)
    ecn: bool | None = None  # CellOptions.ecn
    client_case: str | None = None  # an interop case the stack's client is asked for (Arm.client_case)
    server_case: str | None = None  # an interop case the server is started for (Arm.server_case)


# who reads each option (Scenario._check_options_used)
_QUIC_SERVER_OPTIONS = ("quic_cc", "max_cwnd_packets", "initial_window_packets", "n_conn")
_READ_BY = {
    **{k: "our endpoint's QUIC server (h3 and race arms it serves)" for k in _QUIC_SERVER_OPTIONS},
    "tcp_cc": "our endpoint's TCP server (h2 and race arms)",
    "zero_rtt": "the native client's h3 and h2 arms",
    "ecn": "our endpoint's QUIC with the native client (h3, race) and the kernel's TCP against our server (h2, race)",
}

_OPTION_ID = (
    ("quic_cc", "cc"),
    ("tcp_cc", "tcpcc"),
    ("max_cwnd_packets", "macw"),
    ("initial_window_packets", "iw"),
    ("n_conn", "nconn"),
    ("zero_rtt", "0rtt"),
    ("ecn", "ecn"),
)
# options that are in cell ids and dims only when a scenario sets them (added later: the ids
# of scenarios that do not use them stay as they were)
_ID_WHEN_SET = ("initial_window_packets", "n_conn", "ecn")


def _option_id(options: CellOptions, keys: tuple[str, ...]) -> list[str]:
    parts = []
    for key, short in _OPTION_ID:
        if key not in keys:
            continue
        v = getattr(options, key)
        text = ("on" if v else "off") if isinstance(v, bool) else ("default" if v is None else str(v))
        parts.append(f"{short}={text}")
    return parts


@dataclass(frozen=True)
class Cell(CellBase):
    """A link x workload x options point; its id names the cell's settings."""

    workload: Workload = None  # type: ignore[assignment]
    options: CellOptions = None  # type: ignore[assignment]
    option_keys: tuple[str, ...] = ()  # options that belong to the cell (not overridden per arm)
    client: str = "native"  # the scenario's client; an arm may name another
    server: str = OURS  # the scenario's server; an arm may name another
    proxy: str = "none"  # ProxyMode
    proxy_dim: bool = False  # the scenario uses the proxy topology: proxy is a dimension

    def run_options(self, arm: Arm) -> RunOptions:
        merged = {**self.options.model_dump(), **arm.overrides()}
        return RunOptions(
            protocol=arm.protocol,
            client=arm.client or self.client,
            server=arm.server or self.server,
            server_cc=arm.server_cc,
            client_case=arm.client_case,
            server_case=arm.server_case,
            proxy=self.proxy,
            **merged,
        )

    def dims(self) -> dict[str, Any]:
        d = self.link_dims()
        d.update(
            {
                "workload": self.workload.label,
                "object_count": self.workload.object_count,
                "object_size": self.workload.object_size,
                "mode": self.workload.mode,
            }
        )
        d.update({k: getattr(self.options, k) for k in self.option_keys})
        if self.proxy_dim:
            d["proxy"] = self.proxy
        return d

    def settings(self) -> dict[str, Any]:
        extra = {"proxy": self.proxy} if self.proxy_dim else {}
        return {"workload": self.workload.model_dump(), "options": self.options.model_dump(), **extra}

    def shown(self) -> dict[str, Any]:
        extra = {"proxy": self.proxy} if self.proxy_dim else {}
        return {"workload": self.workload.label, "URL path": self.workload.url_path(), **extra}


class Scenario(ScenarioBase):
    """A page-load experiment (`kind = "pageload"`, the default)."""

    example: ClassVar[str] = "scenarios/quick.toml"
    kind: Literal["pageload"] = "pageload"
    client: ClientName = "native"  # default for every arm; [[arms]] may set their own
    server: ServerName = OURS  # likewise: our endpoint, or a QUIC stack's server
    chromium_netlog: bool = False  # keep Chromium's net-log of each Chromium run
    # the servers' per-connection logs (our endpoint's QUIC qlog and TCP_INFO samples, a
    # stack's qlog): what the state machines and the host-buffer audit read, and a cost: at
    # 100 Mbit/s they took 35-45% of our QUIC server's CPU per MB (23.3 vs 17.2 ms) and
    # doubled TCP's (1.7 vs 0.9). Off for CPU measurements, which the papers made without such
    # logging, and for comparing stacks (a stack's server would pay for its log alone).
    server_logs: bool = True
    # the clients' qlogs (ours and each stack's), likewise a cost counted as the client's CPU
    # and time; a client whose run is read from its qlog keeps it (Stack.fetch_from_qlog)
    client_logs: bool = True
    protocols: list[str] = ["h3", "h2"]
    arms: list[Arm] = []
    baseline: str | None = None  # label of the arm others are compared against; default last
    workloads: list[Workload]
    options: OptionGrid = Field(default_factory=OptionGrid)
    # a cell dimension: "none", "tcp", "quic" or a list; needs links with segments
    proxy: list[ProxyMode] = ["none"]
    race: RaceSettings = Field(default_factory=RaceSettings)  # constants of "race" arms
    # releases as arms: `versions = "quic-go@v0.52.0..v0.65.0"` (every release of
    # the range on its registry, stacks/builds/releases.py) or a list of them; each arm that runs
    # that stack (its server or client) becomes one arm per release, labelled
    # `<label>-<version>`, so the releases of a cell alternate within each round like arms
    versions: list[str] = []

    @field_validator("versions", mode="before")
    @classmethod
    def _versions_list(cls, v: Any) -> Any:
        return v if isinstance(v, list) else [v]

    @field_validator("proxy", mode="before")
    @classmethod
    def _proxy_list(cls, v: Any) -> Any:
        v = v if isinstance(v, list) else [v]
        if len(set(map(str, v))) != len(v):
            raise ValueError("each proxy mode once")
        return v

    @model_validator(mode="before")
    @classmethod
    def _expand_workloads(cls, data: Any) -> Any:
        if (
            isinstance(data, dict)
            and "workloads" in data
            and not (isinstance(data["workloads"], list) and all(isinstance(w, Workload) for w in data["workloads"]))
        ):
            data = dict(data)
            data["workloads"] = expand_sweep(
                data["workloads"], "workloads", Workload, top_fields=cls.model_fields, prepare=_workload_entry
            )
        return data

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
        if not self.workloads:
            raise ValueError("workloads: give at least one workload")
        if self.arms and "protocols" in self.model_fields_set:
            raise ValueError("set either protocols or [[arms]], not both")
        if not self.arms:
            self.arms = [Arm(label=p, protocol=p) for p in self.protocols]
        if self.versions:  # each arm running a swept stack, once per release (stacks/builds/release_arms.py)
            self.arms = release_arms(self.arms, self.versions, server=self.server, client=self.client)
        labels = [a.label for a in self.arms]
        if len(set(labels)) != len(labels):
            raise ValueError(f"arms: labels must be unique, got {labels}")
        for a in self.arms:  # the scenario's stack server or client applies to arms naming none
            stack = (a.server or self.server) != OURS or is_stack(a.client or self.client)
            if stack and a.protocol != "h3":
                raise ValueError(f'arm "{a.label}": another QUIC stack\'s server or client runs h3 only')
            if a.protocol == "race" and (a.client or self.client) != "native":
                raise ValueError(
                    f'arm "{a.label}": protocol "race" is the native racing client; '
                    f'for Chromium\'s racing use client = "chromium-discovery"'
                )
            if a.protocol == "race" and a.zero_rtt:  # the racing client always races a fresh connection
                raise ValueError(
                    f'arm "{a.label}": zero_rtt = true is ignored by the racing client; '
                    f"remove it, or use an h3 arm for 0-RTT"
                )
        if len(self.arms) < 2:
            raise ValueError('a comparison needs at least two arms (e.g. protocols = ["h3", "h2"])')
        if self.baseline is None:
            self.baseline = labels[-1]
        elif self.baseline not in labels:
            raise ValueError(f'baseline: "{self.baseline}" is not an arm; arms: {", ".join(labels)}')
        for key in self._arm_option_keys():
            if len(getattr(self.options, key)) > 1:
                raise ValueError(f"options.{key}: set per arm, so it cannot also be swept here")
        self._check_n_conn()
        self._check_ecn()
        self._check_options_used()
        self._check_proxy()
        self._check_unique_cells()
        return self

    def _check_n_conn(self) -> None:
        """N-connection emulation is a knob of our endpoint's Cubic only (`endpoint serve
        --n-conn`): every cell x arm that sets it must run Cubic."""
        for opts in self.options.combinations():
            for a in self.arms:
                merged = {**opts.model_dump(), **a.overrides()}
                if merged["n_conn"] is not None and merged["quic_cc"] != "cubic":
                    raise ValueError(
                        f'arm "{a.label}": n_conn = {merged["n_conn"]} emulates N Cubic '
                        f'connections, but quic_cc = "{merged["quic_cc"]}"; set quic_cc = '
                        f'"cubic" or drop n_conn'
                    )

    def _check_ecn(self) -> None:
        """ECN is switched at both ends or not at all: a QUIC arm the switch applies to (every
        arm when the cells set it, else the arms that set it) whose client or server is not
        ours would compare one side's switch with the other's own choice."""
        for a in self.arms:
            if not self.options.ecn and a.ecn is None:
                continue
            client, server = a.client or self.client, a.server or self.server
            if a.protocol != "h2" and (client.partition("@")[0] not in ("native", OURS) or server != OURS):
                who = f"client {client}" if client.partition("@")[0] not in ("native", OURS) else f"server {server}"
                raise ValueError(
                    f'arm "{a.label}": ecn is switched in our endpoint and the kernel\'s TCP only, and this '
                    f"arm's {who} has its own ECN; remove ecn, or give the arm our endpoint and the native client"
                )

    def _reads(self, a: Arm) -> set[str]:
        """The options this arm's processes read (endpoint serve, endpoint fetch)."""
        ours = (a.server or self.server).partition("@")[0] == OURS  # ours@V: the same code on quinn-proto V
        used = set()
        if ours and a.protocol in ("h3", "race"):
            used |= set(_QUIC_SERVER_OPTIONS)
        if ours and a.protocol in ("h2", "race"):
            used.add("tcp_cc")
        native = (a.client or self.client).partition("@")[0] in ("native", OURS)
        if native and a.protocol in ("h3", "h2"):
            used.add("zero_rtt")
        # both ends switched: our QUIC server and native client, or the kernel's TCP at both
        # ends (any client's TCP is the client namespace's); another client's QUIC has its own
        if ours and (a.protocol == "h2" or (native and a.protocol in ("h3", "race"))):
            used.add("ecn")
        return used

    def _check_options_used(self) -> None:
        """An option no arm reads is refused, not warned about: cells (or arms) that differ
        only in it would be reported as a comparison of a knob that did nothing, and a sweep
        of it multiplies the grid's hours for nothing. zero_rtt = false is what an arm that
        cannot make 0-RTT does anyway, so it is no knob there."""

        def knob(key: str, values: list) -> bool:
            return key != "zero_rtt" or any(values)

        for a in self.arms:
            ignored = [k for k, v in a.overrides().items() if k not in self._reads(a) and knob(k, [v])]
            if ignored:
                raise ValueError(
                    f'arm "{a.label}": {ignored[0]} does nothing for this arm; it is read by '
                    f"{_READ_BY[ignored[0]]}; remove it from the arm"
                )
        for key in sorted(self.options.model_fields_set):
            if not knob(key, getattr(self.options, key)):
                continue
            if any(key in self._reads(a) and key not in a.overrides() for a in self.arms):
                continue
            own = [a.label for a in self.arms if key in self._reads(a)]
            why = (
                f"every arm that reads it sets its own ({', '.join(own)})"
                if own
                else f"it is read by {_READ_BY[key]}, and the arms are {', '.join(a.label for a in self.arms)}"
            )
            raise ValueError(f"options.{key}: no arm uses it: {why}; remove it from [options]")

    def _check_proxy(self) -> None:
        modes = [m for m in self.proxy if m != "none"]
        if not modes:
            return
        if self.options.ecn or any(a.ecn is not None for a in self.arms):
            raise ValueError(
                f'proxy = "{modes[0]}": ecn cannot be switched through a proxy (its connections keep their '
                "defaults); remove ecn, or run the proxied cells in a scenario of their own"
            )
        plain = next((i for i, link in enumerate(self.links) if not link.segments), None)
        if plain is not None:
            raise ValueError(
                f'proxy = "{modes[0]}": links[{plain}] has no segments; a proxy sits between '
                f"two: give each link link_a (client-proxy) and link_b (proxy-server) tables"
            )
        for a in self.arms:
            if (a.client or self.client) != "native" or (a.server or self.server) != OURS:
                raise ValueError(
                    f'arm "{a.label}": proxied runs use the native client and our endpoint '
                    f"(the proxies are in the endpoint binary)"
                )

    def _arm_option_keys(self) -> set[str]:
        return {k for a in self.arms for k in a.overrides()}

    def grid_axes(self) -> dict[str, int]:
        o = self.options
        options = (
            len(o.quic_cc)
            * len(o.tcp_cc)
            * max(1, len(o.max_cwnd_packets))
            * max(1, len(o.initial_window_packets))
            * max(1, len(o.n_conn))
            * len(o.zero_rtt)
            * max(1, len(o.ecn))
        )
        return {**super().grid_axes(), "workloads": len(self.workloads), "options": options, "proxy": len(self.proxy)}

    def cells(self) -> list[Cell]:
        """links x workloads x options, in file order; deterministic."""
        overridden = self._arm_option_keys()
        keys = tuple(
            k for k, _ in _OPTION_ID if k not in overridden and (k not in _ID_WHEN_SET or getattr(self.options, k))
        )
        cells = []
        proxy_dim = "proxy" in self.model_fields_set or any(link.segments for link in self.links)
        for (link, label), wl, opts, proxy in itertools.product(
            zip(self.links, self.link_labels()), self.workloads, self.options.combinations(), self.proxy
        ):
            cid = "|".join(
                [f"link={label}", f"wl={wl.label}", *_option_id(opts, keys), *([f"proxy={proxy}"] if proxy_dim else [])]
            )
            cells.append(
                Cell(
                    id=cid,
                    index=len(cells),
                    link=link,
                    link_label=label,
                    workload=wl,
                    options=opts,
                    option_keys=keys,
                    client=self.client,
                    server=self.server,
                    proxy=proxy,
                    proxy_dim=proxy_dim,
                )
            )
        return cells

    def arm_list(self) -> list[Arm]:
        return list(self.arms)

    def comparisons(self) -> list[tuple[str, str]]:
        """(arm, baseline) label pairs; % difference = (baseline - arm) / baseline * 100."""
        return [(a.label, self.baseline) for a in self.arms if a.label != self.baseline]
