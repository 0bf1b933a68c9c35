"""The video kind's part of a scenario: which clip, which player and ABR rule, per link; the
arms are the protocols (h3 = QUIC, h2 = TCP), compared back to back within each cell.

    links x players x abr = cells; arms h3 and h2; `rounds` runs of each.

The server is our endpoint, the workspace's build or one built against a quinn-proto release
(`server = "ours@0.11.14"`); the native player's client likewise (`client`). `versions`
(stacks/builds/release_arms.py) turns the QUIC arms (h3, race) into one arm per release, labelled
`h3-<version>`, which alternate within each round; the TCP arm (h2) stays the baseline.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from ...core.spec import ArmBase, CellBase, ScenarioBase
from ...stacks.base import OURS
from ...stacks.race import RaceSettings
from ...stacks.builds.release_arms import our_build, release_arms
from .content import VideoSpec
from .intervention import Intervention, assign, treated_link

Player = Literal["native", "dashjs"]
Rule = Literal["bola", "throughput"]
PROTOCOLS = ("h3", "h2")
RACE_ARM = "quic-enabled"  # the label of the racing client's arm
NATIVE = "native"  # the native player's default client: the workspace's `endpoint fetch`


def _check_server(spec: str) -> str:
    return our_build(
        spec,
        "server",
        (OURS,),
        "the video kind serves its clip's folder and dash.js's page with our endpoint (`endpoint serve --root`)",
    )


def _check_client(spec: str) -> str:
    return our_build(spec, "client", (NATIVE, OURS), "the native player runs `endpoint fetch --mode session`")


ServerSpec = Annotated[str, AfterValidator(_check_server)]
ClientSpec = Annotated[str, AfterValidator(_check_client)]


class VideoArm(ArmBase):
    """A protocol's arm; `server` / `client` (None: the scenario's) are set by a `versions`
    sweep on the QUIC arms."""

    server: ServerSpec | None = None
    client: ClientSpec | None = None


class Video(BaseModel):
    """The synthetic clip (content.py): length, segment length, highest rung of the ladder."""

    model_config = ConfigDict(extra="forbid")
    duration_s: int = Field(default=20, ge=4, le=7200)
    segment_s: int = Field(default=2, ge=2, le=4)
    max_height: Literal[144, 240, 360, 480, 720, 1080] = 720
    cache_dir: str | None = None  # default: $LONGLOOK_VIDEO_CACHE or ~/.cache/longlook/video

    @model_validator(mode="after")
    def _whole_segments(self) -> "Video":
        if self.duration_s % self.segment_s:
            raise ValueError(f"duration_s = {self.duration_s} is not a whole number of {self.segment_s} s segments")
        return self

    def spec(self) -> VideoSpec:
        return VideoSpec(duration_s=self.duration_s, segment_s=self.segment_s, max_height=self.max_height)


@dataclass(frozen=True)
class VideoCell(CellBase):
    player: str = "native"
    abr: str = "bola"
    video: VideoSpec = VideoSpec()
    quic_mode: str = "forced"  # dash.js in Chromium: how its h3 arm gets QUIC

    def dims(self) -> dict[str, Any]:
        return {
            **self.link_dims(),
            "player": self.player,
            "abr": self.abr,
            "video_s": self.video.duration_s,
            "segment_s": self.video.segment_s,
        }

    def settings(self) -> dict[str, Any]:
        return {"video": vars(self.video).copy(), "player": self.player, "abr": self.abr, "quic_mode": self.quic_mode}

    def shown(self) -> dict[str, Any]:
        return {
            "player": self.player,
            "abr": self.abr,
            "video": f"{self.video.duration_s} s in {self.video.segment_s} s segments, up to {self.video.max_height}p",
        }


class VideoScenario(ScenarioBase):
    """`kind = "video"`: DASH streaming QoE over HTTP/3 vs HTTP/2."""

    example: ClassVar[str] = "scenarios/kakhki-video.toml"
    # A session lasts 20-110 s: on this VM one hypervisor stall of 5-16 ms in that time is the
    # rule (2026-11-27: 10 of 12 short sessions flagged at the default 5 ms even at load 3-4),
    # and it cannot move a QoE computed on 2 s segments. 20 ms still flags a machine that is
    # really starved. A scenario's own [fidelity] values win.
    fidelity_defaults: ClassVar[dict[str, Any]] = {"max_stall_ms": 20.0, "max_release_late_ms": 20.0}
    kind: Literal["video"] = "video"
    video: Video = Field(default_factory=Video)
    players: list[Player] = ["native"]
    abr: list[Rule] = ["bola"]
    # "race": the native player over the QUIC-enabled racing client (arm "quic-enabled",
    # compared with h2 = TCP-only, as Chaudhary et al.); its constants in [race]
    protocols: list[Literal["h3", "h2", "race"]] = list(PROTOCOLS)
    race: RaceSettings = Field(default_factory=RaceSettings)
    # dash.js in Chromium, h3 arm: "forced" pins QUIC; "discovery" lets Chromium learn h3 from
    # Alt-Svc on an unmeasured first visit and race it against TCP (a QUIC-enabled browser);
    # "first-visit" the same with no earlier visit: the measured session begins over TCP and
    # learns the Alt-Svc from its own first response (a new user, as Chaudhary et al.'s were)
    quic_mode: Literal["forced", "discovery", "first-visit"] = "forced"
    # a run whose player used more CPU than this (cores, averaged over the run) or dropped more
    # than this share of frames was CPU-starved: it is flagged with that reason (core.audit)
    max_player_cpu: float = Field(default=1.6, gt=0, le=4096, strict=True)  # cores; true is no number
    max_dropped_frames: float = Field(default=0.05, ge=0, le=1, strict=True)
    # a randomised onset of a QUIC-breaking middlebox per QUIC-enabled session (intervention.py)
    intervention: Intervention | None = None
    # ECN at both ends for every arm (docs/aqm.md "The ECN switch"): on, kernel TCP asks for it
    # and our QUIC marks ECT(0); off, neither; unset, each side's default (quinn marks, TCP
    # never asks). The native player only: dash.js plays in Chromium, whose QUIC has its own.
    ecn: bool | None = None
    server: ServerSpec = OURS  # every arm's server: ours or ours@VERSION
    client: ClientSpec = NATIVE  # the native player's client (dash.js runs Chromium's)
    # releases as arms (stacks/builds/release_arms.py): "ours@0.11.13..0.11.19" or a list;
    # the QUIC arms (h3, race) become one arm per release, h2 stays as it is
    versions: list[str] = []
    _arms: list[VideoArm] = PrivateAttr(default_factory=list)

    @field_validator("versions", mode="before")
    @classmethod
    def _versions_list(cls, v: Any) -> Any:
        return v if isinstance(v, list) else [v]

    @field_validator("players", "abr", "protocols", mode="before")
    @classmethod
    def _listify(cls, v: Any) -> Any:
        return v if isinstance(v, list) else [v]

    @model_validator(mode="after")
    def _grid(self) -> "VideoScenario":
        for name in ("players", "abr", "protocols"):
            values = getattr(self, name)
            if not values or len(set(values)) != len(values):
                raise ValueError(f"{name}: give each value once, at least one")
        if len(self.protocols) < 2 or "h2" not in self.protocols:
            raise ValueError('protocols: a comparison needs h2 and h3 or race, e.g. ["h3", "h2"]')
        if self.ecn is not None and set(self.players) != {"native"}:
            raise ValueError(
                "ecn: switched in our endpoint and the kernel's TCP only, and dash.js plays in Chromium, whose "
                'QUIC has its own ECN; set players = ["native"], or remove ecn'
            )
        if "race" in self.protocols and set(self.players) != {"native"}:
            raise ValueError(
                'protocols: "race" is the native player\'s racing client; dash.js in '
                'Chromium races with quic_mode = "discovery" or "first-visit"'
            )
        if self.intervention is not None:
            if "race" not in self.protocols:
                raise ValueError('[intervention] breaks QUIC under a QUIC-enabled client: add "race" to protocols')
            if any(lk.middlebox or lk.up.middlebox or lk.down.middlebox for lk in self.links):
                raise ValueError("[intervention] sets the middlebox per session: leave it out of [[links]]")
            if self.rounds < 2:
                raise ValueError("[intervention] needs rounds >= 2 (a treated and a control session per cell)")
            if self.intervention.onset_s[1] >= self.video.duration_s:
                raise ValueError(
                    f"[intervention] onset_s = {list(self.intervention.onset_s)}: the onset must fall "
                    f"inside the {self.video.duration_s} s clip (a later one never breaks a session)"
                )
        arms = [VideoArm(label=RACE_ARM if p == "race" else p, protocol=p) for p in self.protocols]
        if self.versions:
            arms = release_arms(
                arms, self.versions, server=self.server, client=self.client, sweeps=lambda a: a.protocol != "h2"
            )
        self._arms = arms
        self._check_unique_cells()
        return self

    def stacks_of(self, arm: ArmBase) -> tuple[str, str]:
        """(server, native player's client) of an arm."""
        return (getattr(arm, "server", None) or self.server, getattr(arm, "client", None) or self.client)

    def assignment(self, cell: CellBase, arm: ArmBase, round_index: int):
        """The intervention's draw for one run (None: no intervention, or the TCP-only arm)."""
        if self.intervention is None or arm.protocol != "race":
            return None
        return assign(self.intervention, self.seed, cell.id, round_index, self.rounds)

    def run_link(self, cell: CellBase, arm: ArmBase, round_index: int):
        a = self.assignment(cell, arm, round_index)
        return cell.link if a is None else treated_link(cell.link, self.intervention, a)

    def run_timeout_s(self) -> float:
        """Per run: the scenario's timeout_s if set, else 3x the clip plus 30 s."""
        if "timeout_s" in self.model_fields_set:
            return self.timeout_s
        return max(self.timeout_s, 3.0 * self.video.duration_s + 30.0)

    def grid_axes(self) -> dict[str, int]:
        return {**super().grid_axes(), "players": len(self.players), "abr": len(self.abr)}

    def cells(self) -> list[VideoCell]:
        many = len(self.links) > 1
        cells = []
        for (link, label), player, abr in itertools.product(
            zip(self.links, self.link_labels()), self.players, self.abr
        ):
            parts = ([f"link={label}"] if many else []) + [f"player={player}", f"abr={abr}"]
            cells.append(
                VideoCell(
                    id="|".join(parts),
                    index=len(cells),
                    link=link,
                    link_label=label,
                    player=player,
                    abr=abr,
                    video=self.video.spec(),
                    quic_mode=self.quic_mode,
                )
            )
        return cells

    def arm_list(self) -> list[ArmBase]:
        return list(self._arms)

    def comparisons(self) -> list[tuple[str, str]]:
        return [(a.label, "h2") for a in self._arms if a.protocol != "h2"]
