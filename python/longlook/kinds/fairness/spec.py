"""The fairness kind's part of a scenario: which flows share the bottleneck, how they start,
and what is swept.

    links x matchups x starts x (quic_cc x n_conn x tcp_cc x buffer_bytes) = cells, `runs`
    (= rounds) runs of each arm.

An arm is which build of our endpoint the flows run: its server (serving every flow of the
run) and its client (`endpoint fetch` of every flow). One arm by default ("flows", the
workspace's build); `[[arms]]` or a `versions` sweep (stacks/builds/release_arms.py) make several,
which the core alternates within each round.

A knob that does not apply to a matchup (QUIC congestion control in TCP vs TCP) is dropped
from that cell, so sweeping it does not repeat identical cells; n_conn > 1 exists only for
Cubic (the endpoint refuses it otherwise), so such combinations are left out.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from ...core.spec import ArmBase, CellBase, ScenarioBase
from ...errors import LonglookError
from ...linkprofile import LinkProfile
from ...stacks.base import OURS
from ...stacks.congestion import QuicCC, TcpCC
from ...stacks.registry import resolve
from ...stacks.builds.release_arms import our_build, release_arms

Start = Literal["simultaneous", "staggered-quic-first", "staggered-tcp-first"]
NATIVE = "native"  # the flows' default client: the workspace's `endpoint fetch`


def _check_server(spec: str) -> str:
    return our_build(
        spec,
        "server",
        (OURS,),
        "fairness flows run against our endpoint, whose bulk object is "
        "endless and generated (a flow cuts it by time) and whose logs are told apart per flow",
    )


def _check_client(spec: str) -> str:
    return our_build(
        spec, "client", (NATIVE, OURS), "fairness flows are `endpoint fetch` bulk downloads bounded by time"
    )


ServerSpec = Annotated[str, AfterValidator(_check_server)]
ClientSpec = Annotated[str, AfterValidator(_check_client)]


class FlowsArm(ArmBase):
    """Every flow of a run is measured at once: an arm is which builds they run. `server`:
    the server of every flow (QUIC and TCP: one port; the TCP path has no quinn code);
    `client`: the `endpoint fetch` of every flow. None: the scenario's."""

    server: ServerSpec | None = None
    client: ClientSpec | None = None


FLOWS_ARM = FlowsArm(label="flows")


class Matchup(BaseModel):
    """`quic` QUIC flows and `tcp` TCP flows at once through one bottleneck."""

    model_config = ConfigDict(extra="forbid")
    label: str | None = None
    quic: int = Field(default=0, ge=0, le=16)
    tcp: int = Field(default=0, ge=0, le=16)

    @model_validator(mode="after")
    def _at_least_two_flows(self) -> "Matchup":
        if self.quic + self.tcp < 2:
            raise ValueError("a matchup needs at least two flows (quic + tcp >= 2)")
        return self

    def name(self) -> str:
        """The label, else Kakhki's names: "QUIC vs TCPx2", "QUIC vs QUIC", "TCPx3"."""
        if self.label:
            return self.label

        def side(proto: str, n: int) -> str:
            return proto if n == 1 else f"{proto}x{n}"

        if self.quic and self.tcp:
            return f"{side('QUIC', self.quic)} vs {side('TCP', self.tcp)}"
        proto, n = ("QUIC", self.quic) if self.quic else ("TCP", self.tcp)
        return f"{proto} vs {proto}" if n == 2 else side(proto, n)


class Sweep(BaseModel):
    """Each list is one dimension of the grid (a single value = fixed)."""

    model_config = ConfigDict(extra="forbid")
    # grid: every combination; one_at_a_time: the first value of every list is the baseline,
    # and each other value is tried with everything else at the baseline (as the paper varies
    # one knob at a time).
    mode: Literal["grid", "one_at_a_time"] = "grid"
    quic_cc: list[QuicCC] = ["cubic"]
    n_conn: list[int] = [1]
    tcp_cc: list[TcpCC] = ["cubic"]
    buffer_bytes: list[int | None] = [None]  # None = the link's own buffer

    @field_validator("quic_cc", "n_conn", "tcp_cc", "buffer_bytes", mode="before")
    @classmethod
    def _scalar_is_a_list(cls, v):
        return v if isinstance(v, list) else [v]

    def combinations(self) -> list[tuple]:
        """(quic_cc, n_conn, tcp_cc, buffer_bytes) tuples in run order."""
        dims = [self.quic_cc, self.n_conn, self.tcp_cc, self.buffer_bytes]
        if self.mode == "grid":
            return list(itertools.product(*dims))
        base = tuple(d[0] for d in dims)
        out = [base]
        for i, values in enumerate(dims):
            for v in values[1:]:
                out.append(base[:i] + (v,) + base[i + 1 :])
        return out

    @field_validator("n_conn")
    @classmethod
    def _n_conn_range(cls, v: list[int]) -> list[int]:
        if any(n < 1 or n > 8 for n in v):
            raise ValueError("each n_conn must be 1..8")
        return v

    @field_validator("buffer_bytes")
    @classmethod
    def _positive_buffers(cls, v: list[int | None]) -> list[int | None]:
        if any(b is not None and b <= 0 for b in v):
            raise ValueError("each buffer_bytes must be > 0")
        return v


@dataclass(frozen=True)
class FlowSpec:
    """One flow of a cell: its label in tables ("QUIC", "TCP 2"), protocol and weight (the
    number of TCP connections it should count as)."""

    label: str
    protocol: Literal["h3", "h2"]
    weight: int
    start_s: float


@dataclass(frozen=True)
class FairnessCell(CellBase):
    matchup: Matchup = None  # type: ignore[assignment]
    start: Start = "simultaneous"
    quic_cc: str | None = None
    n_conn: int | None = None
    tcp_cc: str | None = None
    duration_s: float = 100.0
    stagger_s: float = 10.0
    many_links: bool = False  # the link label joins the id only when links are swept

    def make_id(self) -> str:
        """matchup, start, the knobs that apply, the buffer (and the link if swept)."""
        parts = [_slug(self.matchup.name()), self.start]
        if self.quic_cc:
            parts += [f"q{self.quic_cc}", f"n{self.n_conn}"]
        if self.tcp_cc:
            parts.append(f"t{self.tcp_cc}")
        down = self.link.resolved("down")  # the data direction holds the bottleneck queue
        parts.append(
            f"buf{down.buffer_bytes}"
            if down.buffer_bytes
            else f"buf{down.buffer_packets}p"
            if down.buffer_packets
            else "bufinf"
        )
        if self.many_links:
            parts.insert(0, _slug(self.link_label))
        return "-".join(parts)

    def flows(self) -> list[FlowSpec]:
        """QUIC flows first, then TCP; staggered starts space them `stagger_s` apart in that
        order (or TCP first). Every flow ends at `duration_s`."""
        m = self.matchup
        specs = [("QUIC" if m.quic == 1 else f"QUIC {i + 1}", "h3", self.n_conn or 1) for i in range(m.quic)]
        specs += [("TCP" if m.tcp == 1 else f"TCP {i + 1}", "h2", 1) for i in range(m.tcp)]
        order = list(range(len(specs)))
        if self.start == "staggered-tcp-first":
            order = list(range(m.quic, len(specs))) + list(range(m.quic))
        starts = {i: (rank * self.stagger_s if self.start != "simultaneous" else 0.0) for rank, i in enumerate(order)}
        return [FlowSpec(label, proto, weight, starts[i]) for i, (label, proto, weight) in enumerate(specs)]

    def shared_window(self) -> tuple[float, float]:
        """[last start, end]: the time every flow was running, where fairness is judged."""
        return max(f.start_s for f in self.flows()), self.duration_s

    def dims(self) -> dict[str, Any]:
        return {
            **self.link_dims(),
            "matchup": self.matchup.name(),
            "start": self.start,
            "quic_cc": self.quic_cc,
            "n_conn": self.n_conn,
            "tcp_cc": self.tcp_cc,
            "buffer_bytes": self.link.resolved("down").buffer_bytes,
            "duration_s": self.duration_s,
            "stagger_s": self.stagger_s,
        }


class FairnessScenario(ScenarioBase):
    """`kind = "fairness"`: flows sharing one bottleneck (Kakhki §5.1)."""

    example: ClassVar[str] = "scenarios/fairness-quick.toml"
    # Flows last 20-100 s: on this VM a hypervisor stall of 5-34 ms in that time is common
    # (2026-11-27, Table 4 at 30 s: 33 of 69 runs flagged at the default 5 ms, 6 over 20 ms),
    # and it delays every flow alike: the flagged runs' QUIC share equalled the clean ones'
    # (0.469 vs 0.468 against one TCP flow, 0.315 vs 0.322 against two, 0.209 vs 0.205 against
    # four; Mann-Whitney p 0.78, 0.54, 0.79). 20 ms still flags a starved machine. A
    # scenario's own [fidelity] values win.
    fidelity_defaults: ClassVar[dict[str, Any]] = {"max_stall_ms": 20.0, "max_release_late_ms": 20.0}
    kind: Literal["fairness"] = "fairness"
    duration_s: float = Field(default=100.0, gt=0)
    starts: list[Start] = ["simultaneous"]
    stagger_s: float = Field(default=10.0, ge=0)
    # 10 ms at least: finer bins than a flow's packets make an empty timeline of millions of bins
    bin_s: float = Field(default=1.0, ge=0.01, le=3600, description="timeline bin width (s)")
    # latency under load: a sparse UDP probe every this many ms from the client to the server
    # beside the flows (testbed/latency_probe.py), its RTT in the shared window per run
    latency_probe_ms: float | None = Field(default=None, ge=10, le=10_000)
    matchups: list[Matchup] = Field(min_length=1)
    sweep: Sweep = Field(default_factory=Sweep)
    server: ServerSpec = OURS  # every arm's server unless it names one: ours or ours@VERSION
    client: ClientSpec = NATIVE  # every arm's flows' client: native (workspace), ours or ours@VERSION
    arms: list[FlowsArm] = []  # default: one arm, "flows"
    # releases as arms (stacks/builds/release_arms.py): "ours@0.11.13..0.11.19" or a list;
    # each arm whose server or client is that stack becomes one arm per release
    versions: list[str] = []

    @field_validator("versions", mode="before")
    @classmethod
    def _versions_list(cls, v: Any) -> Any:
        return v if isinstance(v, list) else [v]

    @model_validator(mode="after")
    def _arms(self) -> "FairnessScenario":
        if not self.arms:
            self.arms = [FLOWS_ARM]
        if self.versions:
            self.arms = release_arms(self.arms, self.versions, server=self.server, client=self.client)
        labels = [a.label for a in self.arms]
        if len(set(labels)) != len(labels):
            raise ValueError(f"arms: labels must be unique, got {labels}")
        self._check_congestion_controls()
        return self

    def _check_congestion_controls(self) -> None:
        """Every QUIC congestion control swept is offered by every arm's server."""
        if not any(m.quic for m in self.matchups):
            return
        for a in self.arms:
            stack = resolve(self.stacks_of(a)[0])
            for cc in self.sweep.quic_cc:
                try:
                    stack.cc(cc)
                except LonglookError as e:
                    raise ValueError(f'arm "{a.label}": {e.message} ({e.hint})') from None

    def stacks_of(self, arm: ArmBase) -> tuple[str, str]:
        """(server, client) of an arm's flows."""
        return (getattr(arm, "server", None) or self.server, getattr(arm, "client", None) or self.client)

    @model_validator(mode="after")
    def _staggers_fit(self) -> "FairnessScenario":
        staggered = [s for s in self.starts if s != "simultaneous"]
        most = max(m.quic + m.tcp for m in self.matchups)
        if staggered and (most - 1) * self.stagger_s >= self.duration_s:
            raise ValueError(
                f"stagger_s: {most} flows started {self.stagger_s:g} s apart do not all "
                f"start within duration_s = {self.duration_s:g}"
            )
        self._check_unique_cells()
        return self

    @property
    def runs(self) -> int:
        return self.rounds

    @property
    def link(self) -> LinkProfile:
        """The bottleneck when the scenario has one link (the usual case)."""
        return self.links[0]

    def grid_axes(self) -> dict[str, int]:
        sw = self.sweep
        dims = [len(sw.quic_cc), len(sw.n_conn), len(sw.tcp_cc), len(sw.buffer_bytes)]
        combos = math.prod(dims) if sw.mode == "grid" else (0 if 0 in dims else 1 + sum(n - 1 for n in dims))
        return {**super().grid_axes(), "matchups": len(self.matchups), "starts": len(self.starts), "sweep": combos}

    def cells(self) -> list[FairnessCell]:
        cells: dict[str, FairnessCell] = {}
        sw = self.sweep
        many = len(self.links) > 1
        for (link, label), m, start, (qcc, n, tcc, buf) in itertools.product(
            zip(self.links, self.link_labels()), self.matchups, self.starts, sw.combinations()
        ):
            if m.quic and qcc != "cubic" and n > 1:
                continue  # N-connection emulation is a Cubic knob
            cell_link = link if buf is None else _with_buffer(link, buf)
            cell = FairnessCell(
                id="",
                index=0,
                link=cell_link,
                link_label=label,
                matchup=m,
                start=start,
                quic_cc=qcc if m.quic else None,
                n_conn=n if m.quic else None,
                tcp_cc=tcc if m.tcp else None,
                duration_s=self.duration_s,
                stagger_s=self.stagger_s,
                many_links=many,
            )
            cells.setdefault(cell.make_id(), cell)
        return [FairnessCell(**{**c.__dict__, "id": cid, "index": i}) for i, (cid, c) in enumerate(cells.items())]

    def arm_list(self) -> list[ArmBase]:
        return list(self.arms)

    def comparisons(self) -> list[tuple[str, str]]:
        """With several arms, each against the last (a release sweep: against the newest)."""
        return [(a.label, self.arms[-1].label) for a in self.arms[:-1]]


def _with_buffer(link: LinkProfile, buffer_bytes: int) -> LinkProfile:
    """The link with `buffer_bytes` in both directions, replacing any per-direction buffer."""
    no_buffer = {"buffer_bytes": None, "buffer_packets": None}
    return link.model_copy(
        update={
            "buffer_bytes": buffer_bytes,
            "buffer_packets": None,
            "up": link.up.model_copy(update=no_buffer),
            "down": link.down.model_copy(update=no_buffer),
        }
    )


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"
