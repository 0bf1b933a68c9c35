"""The conformance kind's part of a scenario: which stacks and congestion controls are held
against the Linux kernel's implementation of the same algorithm, on which bottlenecks.

    links x stacks x (each stack's congestion controls) = cells, `rounds` rounds each;
    every round runs four arms: the stack alone ("alone"), the kernel reference alone
    ("kernel"), both at once through the bottleneck ("shared"), and the stack's fingerprint
    runs ("fingerprint": a multiplexed page, a resumed connection); `include` picks fewer.

Each run downloads one `object_size` bulk object per flow (the same workload for the stack
and the kernel). The kernel reference is our endpoint's HTTP/2 over kernel TCP with the
algorithm's Linux module (`tcp_cc`): Cubic for Cubic, Reno for Reno/NewReno, BBR (Linux's,
v1) for BBR, BBRv2 and BBRv3; an algorithm Linux lacks (Copa) has no reference and cannot
be asked for.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ...core.spec import ArmBase, CellBase, ScenarioBase
from ...stacks.base import OURS
from ...stacks.registry import resolve, split
from ...stacks.builds.specs import check_spec
from ...units import parse_size

# a stack's congestion control -> (the algorithm it implements, the kernel's module for it)
ALGORITHMS: dict[str, tuple[str, str]] = {
    "cubic": ("cubic", "cubic"),
    "reno": ("reno", "reno"),
    "newreno": ("reno", "reno"),
    "bbr": ("bbr", "bbr"),
    "bbr2": ("bbr", "bbr"),
    "bbr3": ("bbr", "bbr"),
}
ARMS = (ArmBase(label="alone"), ArmBase(label="kernel"), ArmBase(label="shared"), ArmBase(label="fingerprint"))
KERNEL = "kernel"  # the reference's name in the tables


class StackEntry(BaseModel):
    """One stack under test: `stack` = NAME or NAME@VERSION (stacks/registry.py), `ccs` the
    congestion controls to test (default: every one it offers that Linux has). Our endpoint
    (`ours`) also takes its server's knobs, for deliberately non-conforming configurations."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    stack: str
    ccs: list[str] | None = None
    initial_window_packets: int | None = Field(default=None, ge=1, le=10_000)
    max_cwnd_packets: int | None = Field(default=None, ge=2, le=1_000_000)
    # quinn paces every connection and has no switch to stop it: `false` is refused (a
    # configuration labelled "no pacing" whose pacing verdict "conforms" would be false)
    pacing: bool = True

    @field_validator("pacing")
    @classmethod
    def _pacing_can_be_honoured(cls, v: bool) -> bool:
        if not v:
            raise ValueError(
                "pacing = false: no stack here can honour it; our endpoint is quinn, which paces every "
                "connection and has no switch to stop (its log says pacing_effective: true). Leave pacing out"
            )
        return v

    @field_validator("stack")
    @classmethod
    def _known_stack(cls, v: str) -> str:
        return check_spec(v)

    @model_validator(mode="after")
    def _ccs_offered(self) -> "StackEntry":
        offered = resolve(self.stack).ccs
        for cc in self.ccs or []:
            if cc not in offered:
                raise ValueError(f"ccs: {self.stack} offers no {cc!r} (it offers: {', '.join(offered)})")
            if cc not in ALGORITHMS:
                raise ValueError(
                    f"ccs: {cc!r} has no Linux reference to conform to (with a reference: {', '.join(ALGORITHMS)})"
                )
        if self.ccs == []:
            raise ValueError("ccs: name at least one congestion control, or leave it out for all")
        knobs = self.initial_window_packets or self.max_cwnd_packets
        if knobs and split(self.stack)[0] != OURS:
            raise ValueError(
                "initial_window_packets, max_cwnd_packets: only our endpoint "
                f'(stack = "{OURS}") has these knobs, not {self.stack}'
            )
        return self

    def congestion_controls(self) -> list[str]:
        return list(self.ccs) if self.ccs else [c for c in resolve(self.stack).ccs if c in ALGORITHMS]

    @property
    def label(self) -> str:
        """The stack, with any knob that makes it another configuration."""
        parts = [self.stack]
        if self.initial_window_packets:
            parts.append(f"iw{self.initial_window_packets}")
        if self.max_cwnd_packets:
            parts.append(f"macw{self.max_cwnd_packets}")
        return "+".join(parts)


@dataclass(frozen=True)
class ConformanceCell(CellBase):
    entry: StackEntry = None  # type: ignore[assignment]
    cc: str = "cubic"
    object_size: int = 10_000_000
    many_links: bool = False

    @property
    def stack(self) -> str:
        return self.entry.stack

    @property
    def algorithm(self) -> str:
        return ALGORITHMS[self.cc][0]

    @property
    def kernel_cc(self) -> str:
        return ALGORITHMS[self.cc][1]

    def make_id(self) -> str:
        down = self.link.resolved("down")
        buf = (
            f"buf{down.buffer_bytes}"
            if down.buffer_bytes
            else f"buf{down.buffer_packets}p"
            if down.buffer_packets
            else "bufinf"
        )
        where = _slug(self.link_label) if self.many_links else buf  # the label names the buffer too
        return "-".join([_slug(self.entry.label), self.cc, where])

    def dims(self) -> dict[str, Any]:
        return {
            **self.link_dims(),
            "stack": self.entry.label,
            "cc": self.cc,
            "algorithm": self.algorithm,
            "kernel_cc": self.kernel_cc,
            "buffer_bytes": self.link.resolved("down").buffer_bytes,
            "object_size": self.object_size,
        }

    def settings(self) -> dict[str, Any]:
        return {"entry": self.entry.model_dump()}


class ConformanceScenario(ScenarioBase):
    """`kind = "conformance"`: stacks' congestion control against the kernel's (Mishra et
    al. IMC'23), per parameter against the specifications."""

    example: ClassVar[str] = "scenarios/conformance-quick.toml"
    kind: Literal["conformance"] = "conformance"
    stacks: list[StackEntry] = Field(min_length=1)
    object_size: int = Field(default=10_000_000, description="bytes each flow downloads")
    # below 10 ms a bin holds a packet or none at the rates here, and a 10 GB flow's
    # envelope would be millions of bins
    bin_s: float = Field(default=0.2, ge=0.01, le=10, description="envelope bin width (s)")
    # which of the four runs each round makes: "alone" (the stack), "kernel" (the reference),
    # "shared" (both at once); fewer for a parameters-only check
    # (named `include`, not `arms`: other kinds' arms are tables, and report sections read them)
    # "fingerprint": the stack's multiplexed page and resumed connection (fingerprint_run.py)
    include: list[Literal["alone", "kernel", "shared", "fingerprint"]] = Field(
        default=["alone", "kernel", "shared", "fingerprint"], min_length=1
    )

    @field_validator("include")
    @classmethod
    def _arms_once(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v):
            raise ValueError("include: each of alone, kernel, shared, fingerprint at most once")
        return v

    @field_validator("stacks", mode="before")
    @classmethod
    def _names_are_entries(cls, v: Any) -> Any:
        return [{"stack": s} if isinstance(s, str) else s for s in v] if isinstance(v, list) else v

    @field_validator("object_size", mode="before")
    @classmethod
    def _size(cls, v: Any) -> int:
        n = parse_size(v)
        if not 100_000 <= n <= 10_000_000_000:
            raise ValueError("object_size: between 100k and 10g")
        return n

    @model_validator(mode="after")
    def _unique(self) -> "ConformanceScenario":
        self._check_unique_cells()
        return self

    def cells(self) -> list[ConformanceCell]:
        many = len(self.links) > 1 and len({_slug(l) for l in self.link_labels()}) > 1
        out: dict[str, ConformanceCell] = {}
        for (link, label), entry in itertools.product(zip(self.links, self.link_labels()), self.stacks):
            for cc in entry.congestion_controls():
                c = ConformanceCell(
                    id="",
                    index=0,
                    link=link,
                    link_label=label,
                    entry=entry,
                    cc=cc,
                    object_size=self.object_size,
                    many_links=many,
                )
                cid = c.make_id()
                if cid in out:
                    raise ValueError(f"stacks: {entry.label} with {cc} appears twice on link {label}")
                out[cid] = c
        return [ConformanceCell(**{**c.__dict__, "id": cid, "index": i}) for i, (cid, c) in enumerate(out.items())]

    def grid_axes(self) -> dict[str, int]:
        return {"links": len(self.links), "stacks x ccs": sum(len(e.congestion_controls()) for e in self.stacks)}

    def arm_list(self) -> list[ArmBase]:
        return [a for a in ARMS if a.label in self.include]

    def comparisons(self) -> list[tuple[str, str]]:
        return [("alone", "kernel")] if {"alone", "kernel"} <= set(self.include) else []


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"
