"""LinkProfile: what an emulated path is, in the terms of linkem's config (docs/interfaces.md).

Scenarios, the link self-check and the testbed all describe links with this one model; it
renders the TOML that linkem reads, so there is a single place where the two must agree.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .errors import LonglookError, read_user_text


class GilbertElliott(BaseModel):
    """Bursty loss: a two-state Markov chain stepped once per packet."""

    model_config = ConfigDict(extra="forbid", strict=True)  # no "0.1" or true for a number
    p: float = Field(ge=0, le=1, description="P(good -> bad) per packet")
    r: float = Field(ge=0, le=1, description="P(bad -> good) per packet")
    loss_bad: float = Field(default=1.0, ge=0, le=1)
    loss_good: float = Field(default=0.0, ge=0, le=1)

    def mean_loss(self) -> float:
        """Stationary loss rate: pi_bad = p / (p + r)."""
        if self.p + self.r == 0:
            return self.loss_good
        bad = self.p / (self.p + self.r)
        return bad * self.loss_bad + (1 - bad) * self.loss_good


class Reorder(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    probability: float = Field(ge=0, le=1)
    ahead_ms: float = Field(gt=0)


EcnPolicy = Literal["bleach", "drop_ect", "ect0_to_ect1", "ect1_to_ect0", "mark_ce"]


class Middlebox(BaseModel):
    # strict: `block_udp = "false"` or `= 0` is an error, not a boolean; 1e30 is no packet count
    model_config = ConfigDict(extra="forbid", strict=True)
    block_udp: bool = False
    block_udp_after_packets: int = Field(default=0, ge=0)
    udp_rate_mbit: float = Field(default=0.0, ge=0)
    udp_burst_bytes: int = Field(default=0, ge=0)
    max_udp_datagram: int = Field(default=0, ge=0)
    # QUIC- and TCP-aware policies and the schedule; exact rules in crates/linkem/README.md.
    drop_quic_initial: bool = False
    quic_blackhole_after_handshake: bool = False
    tcp_rst_after_bytes: int = Field(default=0, ge=0, le=2**31 - 1)
    active_from_s: float = Field(default=0.0, ge=0)
    active_until_s: float | None = Field(default=None, ge=0)
    on_s: float = Field(default=0.0, ge=0)
    off_s: float = Field(default=0.0, ge=0)
    flow_probability: float | None = Field(default=None, ge=0, le=1)
    # what the box does to the IP ECN field (crates/linkem/README.md, "Middlebox"): "bleach"
    # clears it to not-ECT, "drop_ect" drops ECN-marked packets (a black hole), "ect0_to_ect1"
    # and "ect1_to_ect0" re-mark between Classic and L4S, "mark_ce" sets CE on every ECT
    # packet. Every one but "drop_ect" rewrites packets: linkem's AF_PACKET datapath only.
    # None: the field is left alone, and the key is not written for linkem.
    ecn: EcnPolicy | None = None

    @model_validator(mode="after")
    def _check_schedule(self) -> "Middlebox":
        if self.active_until_s is not None and self.active_until_s <= self.active_from_s:
            raise ValueError("active_until_s must be greater than active_from_s")
        if (self.on_s > 0) != (self.off_s > 0):
            raise ValueError("on_s and off_s must both be > 0 (periodic) or both 0 (always on)")
        return self


_PIE_ONLY = ("max_burst_ms", "mark_ecn_threshold")
_PI_ONLY = ("t_update_ms", "alpha", "beta")  # PIE's and DualPI2's PI controller
_FQ_ONLY = ("quantum_bytes", "flows")
_DUALQ_ONLY = ("coupling_factor", "rtt_max_ms", "min_th_ms", "range_ms", "th_len_packets", "classic_protection")
_DUALQ_ONLY_FLAGS = ("random_draws",)
# the settings that are not a discipline's own
_NOT_OF = {
    "codel": _PIE_ONLY + _PI_ONLY + _FQ_ONLY + _DUALQ_ONLY + _DUALQ_ONLY_FLAGS,
    "fq_codel": _PIE_ONLY + _PI_ONLY + _DUALQ_ONLY + _DUALQ_ONLY_FLAGS,
    "pie": ("interval_ms",) + _FQ_ONLY + _DUALQ_ONLY + _DUALQ_ONLY_FLAGS,
    "dualpi2": ("interval_ms",) + _PIE_ONLY + _FQ_ONLY,
}
_NAMES = {"codel": "CoDel", "fq_codel": "FQ-CoDel", "pie": "PIE", "dualpi2": "DualPI2"}


class Aqm(BaseModel):
    """An active queue management discipline in front of the bottleneck, in place of plain
    drop-tail (linkem's `aqm` table, crates/linkem/src/config_aqm.rs); the buffer stays the
    queue's hard limit (FQ-CoDel's packet limit: `buffer_packets`, or `buffer_bytes` / 1514).
    Unset numbers take the RFCs' defaults (linkem fills them in): CoDel (RFC 8289) target
    5 ms, interval 100 ms; FQ-CoDel (RFC 8290) the same per flow queue, a 1514-byte quantum,
    1024 queues; PIE (RFC 8033) target 15 ms, update every 15 ms, alpha 0.125, beta 1.25,
    bursts of 150 ms, marking up to a 10% probability; DualPI2 (RFC 9332, Appendix A) an L4S
    queue for ECT(1)/CE and a Classic queue coupled by k = 2, Classic target 15 ms with RTT_max
    100 ms, the L4S ramp from 0.8 ms over 0.4 ms, a WRR scheduler keeping 10% for Classic.
    `ecn`: mark ECN-capable packets CE instead of dropping them (DualPI2 always does, so it
    takes no `ecn`)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    discipline: Literal["codel", "fq_codel", "pie", "dualpi2"]
    ecn: bool = False
    target_ms: float | None = Field(default=None, gt=0, le=10_000)
    interval_ms: float | None = Field(default=None, gt=0, le=60_000)
    t_update_ms: float | None = Field(default=None, gt=0, le=60_000)
    alpha: float | None = Field(default=None, gt=0, le=100)
    beta: float | None = Field(default=None, gt=0, le=100)
    max_burst_ms: float | None = Field(default=None, gt=0, le=60_000)
    mark_ecn_threshold: float | None = Field(default=None, ge=0, le=1)
    quantum_bytes: int | None = Field(default=None, ge=64, le=65_536)
    flows: int | None = Field(default=None, ge=1, le=65_536)
    coupling_factor: float | None = Field(default=None, gt=0, le=100)
    rtt_max_ms: float | None = Field(default=None, gt=0, le=60_000)
    min_th_ms: float | None = Field(default=None, gt=0, le=10_000)
    range_ms: float | None = Field(default=None, ge=0, le=10_000)
    th_len_packets: int | None = Field(default=None, ge=0, le=100_000)
    classic_protection: int | None = Field(default=None, ge=0, le=100)
    random_draws: bool | None = None

    @model_validator(mode="after")
    def _check_keys(self) -> "Aqm":
        wrong = [k for k in _NOT_OF[self.discipline] if getattr(self, k) is not None]
        if wrong:
            raise ValueError(f"{', '.join(wrong)}: not a setting of {_NAMES[self.discipline]}")
        if self.discipline == "dualpi2" and self.ecn:
            raise ValueError("ecn: DualPI2 always marks ECN-capable packets; remove ecn")
        return self


class Nat(BaseModel):
    """A NAT in front of the bottleneck (linkem's `[nat]`, crates/linkem/src/config_nat.rs):
    the client's address and port become a public one; bindings expire when idle; a
    scheduled rebinding moves each binding `rebind_at_s` after it was made (its flow's first
    packet), then every `rebind_every_s`, to a new port (`rebind_to = "port"`) or to the
    other public address as well ("address"). Defaults are RFC 4787's and RFC 5382's
    minimum idle times; home routers often keep UDP 30-60 s."""

    model_config = ConfigDict(extra="forbid", strict=True)
    public: str | None = Field(default=None, min_length=7, max_length=15)
    ports: list[int] | None = Field(default=None, min_length=2, max_length=2)
    udp_timeout_s: float = Field(default=120.0, gt=0, le=86_400)
    tcp_established_timeout_s: float = Field(default=7440.0, gt=0, le=86_400)
    tcp_transitory_timeout_s: float = Field(default=240.0, gt=0, le=86_400)
    rebind_at_s: list[float] = Field(default_factory=list, max_length=1000)
    rebind_every_s: float = Field(default=0.0, ge=0, le=86_400)
    rebind_to: Literal["port", "address"] = "port"
    rebind_public: str | None = Field(default=None, min_length=7, max_length=15)
    # when a due rebinding happens: at the client's next packet (the old mapping reached the
    # client until then) or at its time (the old one dies then; the server's packets to it
    # are dropped until the client speaks)
    rebind_when: Literal["next_packet", "at_time"] = "next_packet"

    @model_validator(mode="after")
    def _check_schedule(self) -> "Nat":
        if any(t <= 0 for t in self.rebind_at_s):
            raise ValueError("rebind_at_s: each time is seconds > 0 after a binding was made")
        if any(a >= b for a, b in zip(self.rebind_at_s, self.rebind_at_s[1:])):
            raise ValueError("rebind_at_s: expected increasing times")
        if 0 < self.rebind_every_s < 0.1:
            raise ValueError("rebind_every_s: 0 (none) or at least 0.1 s")
        rebinds = bool(self.rebind_at_s) or self.rebind_every_s > 0
        scheduled_only = self.rebind_to == "address" or self.rebind_public is not None or self.rebind_when == "at_time"
        if not rebinds and scheduled_only:
            raise ValueError(
                "rebind_to/rebind_public/rebind_when need rebind_at_s or rebind_every_s: no scheduled rebinding"
            )
        return self

    def first_rebinding_s(self) -> float | None:
        """When a binding first moves, after it was made (None: never scheduled)."""
        if self.rebind_at_s:
            return self.rebind_at_s[0]
        return self.rebind_every_s or None


# The client's address on a handover's second path (linkem's `[handover] client`): a second
# address of the client's device, so both paths reach it and the router tells them apart.
HANDOVER_CLIENT_ADDR = "198.18.1.3"


class Handover(BaseModel):
    """A client that moves between two paths (linkem's `[handover]`,
    crates/linkem/src/handover.rs): the link is its first path (say Wi-Fi), `path` a second
    one with its own rate, delay and loss (say LTE) reached from a second client address;
    `at_s` after the first path's first packet that path goes down (everything on it is lost
    from then on), and `notice_ms` later the client moves its connection to the second path,
    as a phone's OS tells its applications the Wi-Fi is gone. A QUIC client moves its
    connection (a new local address); a TCP connection cannot: with `tcp_reconnect` false it
    dies with its path (what the connection does), with true the client drops it, connects
    again from the new address and asks for the rest of each object with a range request
    (what an application that retries does).

    Behind the link's `nat`, `public` is the second path's own public address (a phone's LTE
    behind its carrier's NAT, its Wi-Fi behind the home router's): the server then sees the
    client arrive from a new public address, not from its second address itself."""

    model_config = ConfigDict(extra="forbid", strict=True)
    at_s: float = Field(gt=0, le=86_400)
    notice_ms: float = Field(default=0.0, ge=0, le=60_000)
    tcp_reconnect: bool = False
    public: str | None = Field(default=None, min_length=7, max_length=15)
    path: "LinkProfile"

    @model_validator(mode="after")
    def _check_path(self) -> "Handover":
        for what in ("nat", "handover", "segments"):
            if getattr(self.path, what) is not None:
                raise ValueError(f"path.{what}: the second path is a link's rate, delay, loss and queue only")
        return self

    def migrate_at_ms(self) -> float:
        """When the client moves, ms after its connection's first packet."""
        return self.at_s * 1000 + self.notice_ms


class Direction(BaseModel):
    """One direction of a link. None means "not set here" (inherit from the link level)."""

    # strict: `rate_mbit = true` is an error, not 1 Mbit/s (an int is still a float). Ranges
    # are where linkem's model holds: 10 kbit/s (one packet per 1.2 s) to 100 Gbit/s, one-way
    # delay and jitter within a minute, a buffer of at least one 1500-byte packet.
    model_config = ConfigDict(extra="forbid", strict=True)
    rate_mbit: float | None = Field(default=None, ge=0.01, le=100_000)
    trace: str | None = Field(default=None, min_length=1)
    delay_ms: float | None = Field(default=None, ge=0, le=60_000)
    jitter_ms: float | None = Field(default=None, ge=0, le=60_000)
    jitter_distribution: Literal["uniform", "normal"] | None = None
    loss: float | None = Field(default=None, ge=0, le=1)
    buffer_bytes: int | None = Field(default=None, ge=1500, le=10**10)
    buffer_packets: int | None = Field(default=None, gt=0, le=10**7)
    # the buffer as a multiple of this direction's bandwidth-delay product (its rate x the
    # link's base RTT), so one setting fits every rate and RTT of a sweep; resolved to
    # buffer_bytes (LinkProfile.resolved), never seen by linkem
    buffer_bdp: float | None = Field(default=None, gt=0, le=1000)
    gilbert_elliott: GilbertElliott | None = None
    reorder: Reorder | None = None
    middlebox: Middlebox | None = None
    aqm: Aqm | None = None


_DIRECTION_FIELDS = tuple(Direction.model_fields)
_BUFFER_FIELDS = ("buffer_bytes", "buffer_packets", "buffer_bdp")


class LinkProfile(Direction):
    """A link: top-level fields apply to both directions, `up`/`down` override them.

    up = client -> server, down = server -> client.
    """

    name: str = Field(default="link", max_length=128)  # shown in tables and ids: a name, not a text
    up: Direction = Field(default_factory=Direction)
    down: Direction = Field(default_factory=Direction)
    # A path through the proxy namespace: (client-proxy, proxy-server) segments, each its own
    # linkem; this profile's own fields are then their series (testbed/segments.py), what the
    # path measures end to end.
    segments: tuple["LinkProfile", "LinkProfile"] | None = None
    # A NAT between the client and the link (the client's home router); needs linkem's
    # AF_PACKET datapath, the default.
    nat: Nat | None = None
    # A client that moves to a second path during the run; AF_PACKET datapath too.
    handover: Handover | None = None

    @model_validator(mode="after")
    def _check_each_direction(self) -> "LinkProfile":
        if self.nat is not None and self.segments is not None:
            raise ValueError("nat: not on a proxied path (segments): put the NAT on a direct link")
        if self.handover is not None and self.segments is not None:
            raise ValueError("handover: not on a proxied path (segments): put it on a direct link")
        if self.handover is not None and (self.nat is None) != (self.handover.public is None):
            raise ValueError(
                "handover.public: the second path's public address, set with a nat and only with one "
                '(e.g. nat = { public = "100.64.0.1" } and handover public = "100.64.0.2")'
            )
        for which in ("up", "down"):
            d = self._merged(which)
            if (d["rate_mbit"] is None) == (d["trace"] is None):
                raise ValueError(f"{which}: exactly one of rate_mbit or trace must be set")
            aqm, reorder = d["aqm"], d["reorder"]
            scheduler = aqm is not None and aqm.discipline in ("fq_codel", "dualpi2")
            if scheduler and reorder is not None and reorder.probability > 0:
                raise ValueError(
                    f"{which}: {aqm.discipline} and reorder cannot be combined (the scheduler decides the order "
                    f"packets leave in)"
                )
            buffers = [f for f in ("buffer_bytes", "buffer_packets", "buffer_bdp") if d[f] is not None]
            if len(buffers) > 1:
                raise ValueError(f"{which}: set one of {' or '.join(buffers)}, not several")
            if d["buffer_bdp"] is not None and d["rate_mbit"] is None:
                raise ValueError(
                    f"{which}: buffer_bdp needs a rate_mbit (a trace has no one rate): "
                    f"give buffer_bytes or buffer_packets"
                )
            if d["buffer_bdp"] is not None and self._bdp_bytes(d) < 1500:
                raise ValueError(
                    f"{which}: buffer_bdp = {d['buffer_bdp']:g} is {self._bdp_bytes(d):.0f} bytes "
                    f"at {d['rate_mbit']:g} Mbit/s and {self._base_rtt_ms():g} ms, less than one packet "
                    f"(1500 bytes)"
                )
        return self

    def _merged(self, which: Literal["up", "down"]) -> dict:
        own = getattr(self, which)
        merged = {f: getattr(own, f) if getattr(own, f) is not None else getattr(self, f) for f in _DIRECTION_FIELDS}
        if any(getattr(own, f) is not None for f in _BUFFER_FIELDS):  # a direction's buffer replaces the link's
            merged.update({f: getattr(own, f) for f in _BUFFER_FIELDS})
        return merged

    def _base_rtt_ms(self) -> float:
        return (self._merged("up")["delay_ms"] or 0.0) + (self._merged("down")["delay_ms"] or 0.0)

    def _bdp_bytes(self, d: dict) -> float:
        return d["rate_mbit"] * 1e6 / 8 * self._base_rtt_ms() / 1000 * d["buffer_bdp"]

    def resolved(self, which: Literal["up", "down"]) -> Direction:
        """The effective settings of one direction (override, else link level); a buffer
        given as `buffer_bdp` also in bytes."""
        merged = self._merged(which)
        if merged["buffer_bdp"] is not None:
            merged["buffer_bytes"] = round(self._bdp_bytes(merged))
        return Direction(**merged)

    def expected_loss(self, which: Literal["up", "down"]) -> float:
        d = self.resolved(which)
        if d.gilbert_elliott is not None:
            return d.gilbert_elliott.mean_loss()
        return d.loss or 0.0

    def without_nat(self) -> "LinkProfile":
        """This link with no NAT: a handover's second path then has no public address either."""
        handover = self.handover.model_copy(update={"public": None}) if self.handover is not None else None
        return self.model_copy(update={"nat": None, "handover": handover})

    def for_self_check(self) -> "LinkProfile":
        """The link the self-check measures: without its NAT and its AQM, which change no
        rate, delay or loss of the path and are what a run is about. The check's probes open
        connections from both ends, and a NAT admits only the client's; its rebindings would
        reset them. An AQM's early drops cost one saturating TCP flow part of the rate (one
        Cubic flow behind CoDel at 50 Mbit/s and 36 ms RTT reached 40-42 of 48 Mbit/s), a
        property of the queue the runs measure, not a path that differs from the scenario."""
        if self.nat is None and self.handover is None and not any(self._merged(w)["aqm"] for w in ("up", "down")):
            return self
        plain = {"nat": None, "handover": None, "aqm": None, "up": self.up.model_copy(update={"aqm": None})}
        plain["down"] = self.down.model_copy(update={"aqm": None})
        return self.model_copy(update=plain)

    def rtt_ms(self) -> float:
        """Base round-trip time: the two one-way delays (no queueing, no serialisation)."""
        return self._base_rtt_ms()

    def to_linkem_toml(self, base_dir: Path | None = None, table: str = "") -> str:
        """Render linkem's config, each direction written out in full (no inheritance), trace
        paths made absolute against `base_dir`; `table`: under that table (a second path's)."""
        lines: list[str] = []
        for which in (f"{table}up", f"{table}down"):
            d = self.resolved(which.removeprefix(table))
            lines.append(f"[{which}]")
            tables: list[str] = []
            for field, value in d.model_dump(exclude_none=True, exclude={"buffer_bdp"}).items():
                if isinstance(value, dict):
                    if field == "aqm" and value["discipline"] == "dualpi2":
                        value.pop("ecn")  # it always marks: linkem has no such key for it
                    tables.append(f"[{which}.{field}]")
                    tables.extend(f"{k} = {_toml_value(v)}" for k, v in value.items())
                    continue
                if field == "trace" and base_dir is not None:
                    value = str((base_dir / value).resolve())
                lines.append(f"{field} = {_toml_value(value)}")
            lines.extend(tables)
            lines.append("")
        if self.nat is not None:
            lines.append("[nat]")
            for k, v in self.nat.model_dump(exclude_none=True).items():
                if k == "rebind_at_s" and not v:
                    continue
                lines.append(f"{k} = {_toml_value(v)}")
            lines.append("")
        if self.handover is not None:
            lines += [
                "[handover]",
                f'client = "{HANDOVER_CLIENT_ADDR}"',
                f"at_s = {_toml_value(self.handover.at_s)}",
                *([f"public = {_toml_value(self.handover.public)}"] if self.handover.public else []),
                "",
            ]
            # the second path's own tables; linkem needs the table itself before its subtables
            lines += ["[handover.path]", self.handover.path.to_linkem_toml(base_dir, table="handover.path.")]
        return "\n".join(lines)


LinkProfile.model_rebuild()
Handover.model_rebuild()


def _toml_value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (tuple, list)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, (int, float)):
        return repr(v)
    return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'


def linkem_refusal(profile: LinkProfile, base_dir: Path | None = None) -> str | None:
    """What linkem would say of this link's config, by linkem's own parser (`linkem-check`:
    ranges, middlebox numbers, trace contents), so Python and linkem never disagree about a
    link: None when linkem runs it, or when linkem-check is not built (then the Python model
    and `traces.load_mahimahi` are the only checks). A proxied link: each segment's config."""
    import subprocess

    from .binaries import find_binary

    try:
        check = find_binary("linkem-check")
    except LonglookError:
        return None
    for part in profile.segments or (profile,):
        p = subprocess.run(
            [str(check), "--name", f"link {profile.name}"],
            input=part.to_linkem_toml(base_dir),
            capture_output=True,
            text=True,
            timeout=60,
        )
        if p.returncode != 0:
            return (p.stderr.strip() or f"linkem-check exited {p.returncode}").splitlines()[0]
    return None


def load_link_profile(path: Path) -> LinkProfile:
    """Read a profile TOML; errors name the file and the field."""
    from pydantic import ValidationError

    text = read_user_text(path, "link profile", "link-profiles/10mbit-20ms.toml")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise LonglookError(f"{path}: not valid TOML: {e}") from None
    data.setdefault("name", Path(path).stem)
    try:
        return LinkProfile(**data)
    except ValidationError as e:
        raise LonglookError(f"{path}: {format_validation_error(e)}") from None


def format_validation_error(e: "pydantic.ValidationError") -> str:  # noqa: F821
    """pydantic's errors as `field.path: message; ...`, the form every longlook error uses."""
    parts = []
    for err in e.errors():
        loc = ".".join(str(x) for x in err["loc"]) or "(top level)"
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown field"
        parts.append(f"{loc}: {msg}")
    return "; ".join(parts)
