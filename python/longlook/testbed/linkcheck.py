"""The link self-check: measure the emulated path end to end and compare with its profile.

Rate: bulk TCP (linkem-probe, and iperf3 as an independent tool) against the most TCP can
carry, and paced UDP above the rate for the delivered rate. RTT: thousands of small probes
against the configured delays plus the probes' serialisation. Loss: measured loss with its
binomial interval, which must contain the configured loss. Reordering: counted.

The runner calls `check_link` before each link profile of a grid and stops if `.ok` is False.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from scipy.stats import binomtest

from ..errors import LonglookError
from ..linkprofile import Direction, LinkProfile
from ..traces import load_mahimahi, rate_profile
from .linkem_window import linkem_window
from .ownership import all_records
from .probe import PathProbe, iperf3_receiver_mbit, receiver_drops, steady_goodput_mbit
from .testbed import Testbed

IP_PACKET = 1500
TCP_PAYLOAD = 1448  # 1500 - 20 IP - 20 TCP - 12 timestamp option
UDP_IP_OVERHEAD = 28
RTT_PROBE_SIZE = 64  # UDP payload of an RTT probe
LOSS_PROBE_MAX_PPS = 10_000  # keep the loss probe's packet rate cheap for two vCPUs
# linkem more than this late reading or releasing a packet during a probe: the host, not the link
FELL_BEHIND_MS = 5.0


REMEASURE_PAUSE_S = 1.0  # before an out-of-band RTT or UDP rate is measured once more

# How thoroughly a self-check measures. "full": 2,000 RTT probes, and iperf3 beside our own
# TCP probe in each direction (an independent tool's word on the rate). "quick": 500 probes
# and our probe alone, in about a third of the time (a 50 Mbit/s path: ~12 s against ~35 s):
# for a session that only shows every claim runs, where some forty full checks would be half
# its time. Rate, RTT and loss are judged against the same bands either way.
DEPTHS: dict[str, dict] = {"full": {"rtt_count": 2000, "iperf": True}, "quick": {"rtt_count": 500, "iperf": False}}


@dataclass
class Tolerances:
    tcp_min: float = 0.90  # TCP goodput, fraction of the most possible
    tcp_max: float = 1.02
    udp_rate_rel: float = 0.03  # delivered UDP rate vs configured
    rtt_abs_ms: float = 0.5  # RTT median within max(abs, rel * expected)
    rtt_rel: float = 0.02
    loss_confidence: float = 0.99


@dataclass
class Row:
    direction: str  # "up", "down" or "both" (round trip)
    quantity: str
    unit: str
    measured: float
    expected: float | None = None
    low: float | None = None  # the pass band; None = not judged
    high: float | None = None
    note: str = ""
    verdict: bool | None = None  # set when the test is not "measured inside [low, high]"

    @property
    def ok(self) -> bool | None:
        if self.verdict is not None:
            return self.verdict
        if self.low is None and self.high is None:
            return None
        if self.measured is None or math.isnan(self.measured):
            return False
        return (self.low is None or self.measured >= self.low) and (self.high is None or self.measured <= self.high)


@dataclass
class LinkCheckResult:
    profile: str
    rows: list[Row]
    raw: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(r.ok is not False for r in self.rows)

    def failures(self) -> list[Row]:
        return [r for r in self.rows if r.ok is False]

    def summary(self) -> str:
        quick = ""
        if self.raw.get("depth") == "quick":
            iperf = "" if self.raw.get("iperf3") else "no iperf3, "
            quick = f" (a quick check: {iperf}{self.raw.get('rtt_probes')} RTT probes)"
        if self.ok:
            return f"link '{self.profile}' is within tolerance{quick}"
        bad = "; ".join(
            f"{r.direction} {r.quantity}: measured {r.measured:.4g} {r.unit}, "
            f"expected {_fmt(r.expected)} (band {_fmt(r.low)}..{_fmt(r.high)})"
            for r in self.failures()
        )
        return f"link '{self.profile}' is outside tolerance{quick}: {bad}"

    def raise_if_failed(self) -> None:
        """For the runner: stop a grid whose link is not what the profile says."""
        if not self.ok:
            raise LonglookError(self.summary(), hint="see `longlook link check PROFILE.toml`")

    def to_dict(self) -> dict:
        return {
            "profile": self.profile,
            "ok": self.ok,
            "rows": [asdict(r) | {"ok": r.ok} for r in self.rows],
            "raw": self.raw,
        }


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.4g}"


# ---- what the profile says to expect ---------------------------------------------------


def most_tcp_goodput(rate_mbit: float) -> float:
    """linkem counts IP bytes: a full 1500-byte packet carries 1448 bytes of TCP payload."""
    return rate_mbit * TCP_PAYLOAD / IP_PACKET


# A TCP receiver acks every second full segment (Linux's delayed ACK), each ACK 52 IP bytes
# (20 IP + 20 TCP + 12 timestamps): the reverse direction carries 52 bytes per 2 x 1448 of
# goodput, so it caps the forward goodput at its rate x 2 x 1448 / 52 (about 56x).
ACK_IP_BYTES = 52
SEGMENTS_PER_ACK = 2


def ack_limited_goodput(reverse_rate_mbit: float) -> float:
    """The most TCP goodput whose ACKs a reverse direction of this rate can carry."""
    return reverse_rate_mbit * SEGMENTS_PER_ACK * TCP_PAYLOAD / ACK_IP_BYTES


def serialization_ms(ip_bytes: int, rate_mbit: float | None) -> float:
    return 0.0 if not rate_mbit else ip_bytes * 8 / (rate_mbit * 1e6) * 1e3


def expected_rtt_ms(profile: LinkProfile, probe_ip_bytes: int) -> float:
    """Both one-way delays plus the probe's serialisation in each direction."""
    return sum(
        (d.delay_ms or 0.0) + serialization_ms(probe_ip_bytes, d.rate_mbit)
        for d in (profile.resolved("up"), profile.resolved("down"))
    )


def expected_rtt_sd_ms(profile: LinkProfile) -> float:
    """Jitter of both directions (uniform +-j has variance j^2/3; normal has sd j)."""
    var = 0.0
    for d in (profile.resolved("up"), profile.resolved("down")):
        j = d.jitter_ms or 0.0
        var += j * j if d.jitter_distribution == "normal" else j * j / 3
    return math.sqrt(var)


def binomial_interval(lost: int, sent: int, confidence: float = 0.99) -> tuple[float, float]:
    """Exact (Clopper-Pearson) interval of a loss rate from `lost` of `sent`."""
    ci = binomtest(lost, sent).proportion_ci(confidence_level=confidence)
    return ci.low, ci.high


def loss_consistent(lost: int, sent: int, configured: float, confidence: float = 0.99) -> bool:
    low, high = binomial_interval(lost, sent, confidence)
    return low <= configured <= high


def direction_rates(d: Direction, base_dir: Path) -> tuple[float, float]:
    """(mean, lowest per-second) rate of a direction, Mbit/s; a trace's from its file."""
    if d.rate_mbit is not None:
        return d.rate_mbit, d.rate_mbit
    per_s = rate_profile(load_mahimahi(base_dir / d.trace), 1000)
    return float(per_s.mean()), float(per_s.min())


def buffer_bytes(d: Direction) -> float | None:
    if d.buffer_bytes is not None:
        return d.buffer_bytes
    if d.buffer_packets is not None:
        return d.buffer_packets * IP_PACKET
    return None


def tcp_expectation(
    profile: LinkProfile, which: str, base_dir: Path, tol: Tolerances = Tolerances()
) -> tuple[float, str]:
    """The TCP goodput a direction should deliver, and why it is not judged ("" = judged).

    Judged only where one Cubic flow can fill the link: a fixed rate, no loss, no reordering
    (a packet overtaking others makes the ones it passed look lost: spurious fast
    retransmits, window cuts and undos, TCP's reaction, not the link's rate), a buffer of at
    least a BDP, and a reverse direction that can carry the ACKs."""
    d = profile.resolved(which)
    mean_rate, _ = direction_rates(d, base_dir)
    bdp = mean_rate * 1e6 / 8 * profile.rtt_ms() / 1e3
    buf = buffer_bytes(d)
    why_not = (
        "trace"
        if d.rate_mbit is None
        else "loss configured"
        if profile.expected_loss(which) > 0
        else "reordering configured"
        if d.reorder
        else f"buffer {buf:.0f} B < BDP {bdp:.0f} B"
        if buf is not None and buf < bdp
        else ""
    )
    most = most_tcp_goodput(mean_rate)
    # the ACKs travel the other way: a slow reverse direction caps what TCP can send
    reverse = profile.resolved("down" if which == "up" else "up")
    _, rev_low = direction_rates(reverse, base_dir)
    if ack_limited_goodput(rev_low) < most * tol.tcp_min:
        if reverse.rate_mbit is not None:  # a fixed reverse rate: the cap is the expectation
            most = ack_limited_goodput(rev_low)
        elif not why_not:
            why_not = (
                f"ACK-limited by the reverse direction (its trace falls to {rev_low:.3g} Mbit/s, "
                f"which carries the ACKs of {ack_limited_goodput(rev_low):.3g} Mbit/s)"
            )
    return most, why_not


def tcp_window(profile: LinkProfile, which: str, duration_s: float, base_dir: Path) -> tuple[float, float]:
    """How long a TCP rate test of direction `which` runs and from when its goodput counts
    (the warm-up). A third of `duration_s` (at most 1 s) is past slow start on most paths;
    on a long one it is not: slow start doubles the window once per RTT from 10 packets to
    the BDP, then waits a couple of RTTs for the queue to settle (300 ms at 20 Mbit/s: 2.3 s).
    The test then measures as long as it would have, and at least four RTTs."""
    rtt_s = profile.rtt_ms() / 1e3
    mean_rate, _ = direction_rates(profile.resolved(which), base_dir)
    bdp_packets = mean_rate * 1e6 / 8 * rtt_s / IP_PACKET
    fill_s = rtt_s * (math.log2(max(bdp_packets / 10, 1.0)) + 2)
    usual = min(1.0, duration_s / 3)
    warmup = max(usual, fill_s)
    return warmup, max(duration_s, warmup + max(duration_s - usual, 4 * rtt_s))


# ---- the check -------------------------------------------------------------------------


def check_link(
    tb: Testbed,
    profile: LinkProfile | None = None,
    *,
    duration_s: float = 3.0,
    rtt_count: int = 2000,
    rtt_interval_ms: float = 2.0,
    directions: tuple[str, ...] = ("up", "down"),
    iperf: bool = True,
    include: tuple[str, ...] = ("rtt", "rate", "loss"),
    tolerances: Tolerances | None = None,
    base_dir: Path | None = None,
) -> LinkCheckResult:
    """Measure `tb`'s path (running `profile`, default the testbed's) and judge it.
    `include` selects the measurements; `directions` which ways rate and loss are measured."""
    profile = profile or tb.profile
    tol = tolerances or Tolerances()
    base_dir = base_dir or tb.base_dir
    rows: list[Row] = []
    raw: dict = {}
    # RTT probes must not load the link themselves: at most 10% of the slowest direction. A
    # trace with seconds of no capacity (a cellular outage) has a slowest second of 0: its
    # mean rate bounds the probes then (they wait out an outage in the queue like any packet).
    slowest = min(
        low if low > 0 else mean
        for mean, low in (direction_rates(profile.resolved(w), base_dir) for w in ("up", "down"))
    )
    if not slowest > 0:
        raise LonglookError(
            f"link {profile.name}: a direction delivers nothing (rate 0 throughout)",
            hint="give it a rate above 0 or a trace with delivery opportunities",
        )
    probe_ip_bits = (RTT_PROBE_SIZE + UDP_IP_OVERHEAD) * 8
    rtt_interval_ms = max(rtt_interval_ms, probe_ip_bits / (0.1 * slowest * 1e6) * 1e3, _sparse_for_jitter_ms(profile))
    rtt_count = max(50, min(rtt_count, int(10_000 / rtt_interval_ms)))  # at most ~10 s
    with PathProbe(tb) as probe:
        if "rtt" in include:
            rows += _check_rtt(probe, profile, tol, rtt_count, rtt_interval_ms, raw)
        for which in directions:
            d = profile.resolved(which)
            if "rate" in include:
                rows += _check_rate(probe, which, d, profile, tol, duration_s, iperf, base_dir, raw)
            if "loss" in include:
                rows += _check_loss(probe, which, d, profile, tol, duration_s, base_dir, raw)
    tb.check()
    raw["rtt_probes"], raw["iperf3"] = rtt_count, iperf
    # Parallel testbeds share the CPUs and distort timing: say so in the result.
    raw["other_testbeds_running"] = [r.id for r in all_records() if r.id != tb.id and r.owner_alive()]
    return LinkCheckResult(profile.name, rows, raw)


def _check_rtt(probe, profile, tol, count, interval_ms, raw) -> list[Row]:
    if any(_udp_blocked(profile.resolved(w)) for w in ("up", "down")):
        return [
            Row(
                "both",
                "RTT median",
                "ms",
                float("nan"),
                expected_rtt_ms(profile, 0),
                note="not measured: a middlebox rule drops or shapes the UDP probes",
            )
        ]
    expected = expected_rtt_ms(profile, RTT_PROBE_SIZE + UDP_IP_OVERHEAD)
    margin = max(tol.rtt_abs_ms, tol.rtt_rel * expected)
    judged = not _has_trace(profile)  # a trace adds waits for delivery opportunities
    # a busy host adds forwarding latency for a while (+0.5 ms on this VM late in a long test
    # run, with the path unchanged)
    r, off = _measured_again_if_off(
        lambda: probe.rtt(count=count, interval_ms=interval_ms, size=RTT_PROBE_SIZE),
        lambda r: judged and abs(r["rtt_ms"]["p50"] - expected) > margin,
    )
    first = off["rtt_ms"]["p50"] if off is not None else None
    raw["rtt"] = r
    rtt = r["rtt_ms"]
    # the median, not the mean: this VM's 5-16 ms hypervisor stalls delay the few probes in
    # flight at the time by milliseconds, which moves a mean of 1,000 probes by tenths of a ms
    # (20.66 against 20.15 on a fresh CI machine) while the path's delay is unchanged; the
    # mean stays in the note, and a run's own audit counts the stalls
    note = (
        f"{r['received']}/{r['sent']} probes, mean {rtt['mean']:.2f} ms"
        + (f"; measured again: the first median was {first:.2f} ms" if first is not None else "")
        + ("" if judged else "; trace: not judged")
    )
    return [
        Row(
            "both",
            "RTT median",
            "ms",
            rtt["p50"],
            expected,
            expected - margin if judged else None,
            expected + margin if judged else None,
            note,
        ),
        Row("both", "RTT sd", "ms", rtt["sd"], expected_rtt_sd_ms(profile)),
        Row("both", "RTT p99", "ms", rtt["p99"], expected),
        Row("both", "RTT max", "ms", rtt["max"], expected),
    ]


def _sparse_for_jitter_ms(profile: LinkProfile) -> float:
    """linkem never reorders on jitter (a release waits for the one before), so probes closer
    together than the jitter spread see a raised mean; spaced by the spread they see the
    configured distribution (uniform: 2j; normal: 6 sd covers 99.7%)."""
    spread = 0.0
    for w in ("up", "down"):
        d = profile.resolved(w)
        j = d.jitter_ms or 0.0
        spread = max(spread, 6 * j if d.jitter_distribution == "normal" else 2 * j)
    return spread * 1.05


def _has_trace(profile: LinkProfile) -> bool:
    return any(profile.resolved(w).trace for w in ("up", "down"))


def _tcp_reset(d: Direction) -> bool:
    return bool(d.middlebox and d.middlebox.tcp_rst_after_bytes)


def _udp_blocked(d: Direction) -> bool:
    m = d.middlebox
    return bool(m and (m.block_udp or m.block_udp_after_packets or m.udp_rate_mbit or m.max_udp_datagram))


def _check_rate(probe, which, d, profile, tol, duration_s, iperf, base_dir, raw) -> list[Row]:
    rows = []
    mean_rate, _ = direction_rates(d, base_dir)
    if any(_tcp_reset(profile.resolved(w)) for w in ("up", "down")):
        return [
            Row(
                which,
                "TCP goodput, probe",
                "Mbit/s",
                float("nan"),
                most_tcp_goodput(mean_rate),
                note="not measured: a middlebox rule resets TCP connections",
            )
        ]
    fixed = d.rate_mbit is not None
    loss = profile.expected_loss(which)
    buf = buffer_bytes(d)
    most, why_not = tcp_expectation(profile, which, base_dir, tol)
    band = (None, None) if why_not else (tol.tcp_min * most, tol.tcp_max * most)
    warmup, length = tcp_window(profile, which, duration_s, base_dir)
    t = probe.tcp(which, length)
    raw[f"tcp_{which}"] = t
    rows.append(
        Row(
            which,
            "TCP goodput, probe",
            "Mbit/s",
            steady_goodput_mbit(t, warmup),
            most,
            *band,
            (f"not judged: {why_not}; " if why_not else "")
            + f"median of 250 ms after {warmup:.2g} s; whole {t['goodput_mbit']:.4g}; {t.get('cc', '?')}",
        )
    )
    if iperf:
        # iperf3 reports per second: at least 3 s, so there are intervals past the first.
        # iperf3 starts its own flow later (-R adds a control round trip) and goes through slow
        # start again: it gets the probe's measured window after its warm-up, and eight RTTs more
        after = max(1.0, warmup)
        i = probe.iperf3(which, max(3.0, length, after + (length - warmup) + 8 * profile.rtt_ms() / 1e3))
        raw[f"iperf3_{which}"] = {"end": i.get("end", {})}
        rows.append(
            Row(
                which,
                "TCP goodput, iperf3",
                "Mbit/s",
                iperf3_receiver_mbit(i, which, after),
                most,
                *band,
                ("not judged: " + why_not + "; " if why_not else "")
                + f"median of the receiver's 250 ms intervals after {after:.2g} s",
            )
        )

    # UDP paced 20% above the rate: what arrives is what the link delivers.
    if _udp_blocked(d):
        return rows
    drain_ms = int(((buf or 600_000) * 8 / (mean_rate * 1e6) + (d.delay_ms or 0) / 1e3 + 0.5) * 1e3)
    # 1500-byte IP packets: one per delivery opportunity of a mahimahi trace.
    low, high = mean_rate * (1 - loss) * (1 - tol.udp_rate_rel), mean_rate * (1 + tol.udp_rate_rel)
    # a hypervisor stall of the sender longer than the buffer's drain time idles the link for a
    # while (966.9 of 1,000 Mbit/s sent at 1.06 Gbit/s, the next check 1,000)
    (u, watch, dropped), off = _measured_again_if_off(
        lambda: _udp_delivered(probe, which, mean_rate, duration_s, drain_ms),
        lambda m: fixed and not low <= m[0]["rate_mbit"] <= high,
    )
    first = off[0] if off is not None else None
    if first is not None:
        raw[f"udp_{which}_first"] = first
    raw[f"udp_{which}"] = u
    raw[f"linkem_udp_{which}"] = watch.figures
    # what linkem delivered but the receiver's socket never read is the receiving host's
    # CPU, not the link: said beside the figure, so a shortfall is attributed
    raw[f"receiver_udp_{which}"] = {
        "dropped": dropped,
        "host": [f"the receiver's socket dropped {dropped} datagrams (its buffer was full)"] if dropped else [],
    }
    rows.append(
        Row(
            which,
            "UDP delivered (IP)",
            "Mbit/s",
            u["rate_mbit"],
            mean_rate,
            *((low, high) if fixed else (None, None)),
            f"sent {u['send_rate_mbit']:.3g}"
            + (
                f"; measured again: the first delivered {first['rate_mbit']:.4g} (sent {first['send_rate_mbit']:.3g})"
                if first is not None
                else ""
            )
            + ("" if fixed else "; trace mean")
            + "".join(f"; {why}" for why in watch.figures["fell_behind"])
            + "".join(f"; {why}" for why in raw[f"receiver_udp_{which}"]["host"]),
        )
    )
    return rows


def _measured_again_if_off(measure, off):
    """(the measurement, the first one when it was off and so measured once more, else None).
    A host busy for a while moves one measurement; both figures are shown, and a path that
    is not what the profile says is off both times."""
    first = measure()
    if not off(first):
        return first, None
    time.sleep(REMEASURE_PAUSE_S)
    return measure(), first


def _udp_delivered(probe, which, mean_rate, duration_s, drain_ms):
    """UDP paced 20% above the rate, with linkem's account of it and the receiver's drops."""
    receiver = probe.receiver_of(which)
    counters_before = probe.udp_counters(receiver)
    with _LinkemWatch(probe.tb) as watch:
        u = probe.udp(which, mean_rate * 1.2, duration_s, size=IP_PACKET - UDP_IP_OVERHEAD, drain_ms=drain_ms)
    return u, watch, receiver_drops(counters_before, probe.udp_counters(receiver))


class _LinkemWatch:
    """linkem's own account of a probe: a rate the host's CPU could not carry (linkem read
    packets late, or the kernel's queue to it overflowed) says so beside the figure, so a
    short rate is never read as the link's."""

    def __init__(self, tb: Testbed):
        self.tb, self.figures = tb, {}

    def __enter__(self) -> "_LinkemWatch":
        self.before, self.t0_ms = self.tb.linkem.stats(), time.monotonic() * 1e3
        return self

    def __exit__(self, *exc) -> None:
        t1_ms = time.monotonic() * 1e3
        w = linkem_window(self.before, self.tb.linkem.stats(), self.t0_ms, t1_ms)
        self.figures = {**asdict(w), "fell_behind": w.fell_behind(FELL_BEHIND_MS)}


def _check_loss(probe, which, d, profile, tol, duration_s, base_dir, raw) -> list[Row]:
    """Paced UDP at half the (lowest) rate, so no queue forms and every loss is the model's."""
    if _udp_blocked(d):
        return []
    _, low_rate = direction_rates(d, base_dir)
    if not low_rate > 0:
        # a trace with seconds of no capacity (a cellular outage): no paced stream goes
        # through one without a queue, so a loss measured there is not the loss model's
        note = "not measured: the trace has seconds with no delivery opportunity (an outage)"
        return [Row(which, "loss", "fraction", float("nan"), profile.expected_loss(which), note=note)]
    rate = low_rate / 2
    size = max(100, int(rate * 1e6 / 8 / LOSS_PROBE_MAX_PPS) - UDP_IP_OVERHEAD)
    u = probe.udp(which, rate, duration_s, size=size, drain_ms=int((d.delay_ms or 0) + (d.jitter_ms or 0) * 3 + 500))
    raw[f"loss_{which}"] = u
    sent, lost = u["sent"], u["lost"]
    configured = profile.expected_loss(which)
    lo, hi = binomial_interval(lost, sent, tol.loss_confidence)
    bursty = d.gilbert_elliott is not None
    # Here [low, high] is the measured interval, and the test is that it holds the
    # configured loss (not that the measurement lies in a band).
    rows = [
        Row(
            which,
            "loss",
            "fraction",
            lost / sent if sent else float("nan"),
            configured,
            lo,
            hi,
            f"{lost}/{sent}; band = {tol.loss_confidence:.0%} CI" + ("; bursty: not judged" if bursty else ""),
            verdict=None if bursty else lo <= configured <= hi,
        )
    ]
    if bursty:
        rows[0].low = rows[0].high = None
    received = u["received"]
    reorder = received and u["reordered"] / received
    in_order = not d.reorder
    # A chosen packet overtakes ~ahead_ms x packet rate others, each then arriving late.
    pps = rate * 1e6 / 8 / (size + UDP_IP_OVERHEAD)
    expected = 0.0 if in_order else min(1.0, d.reorder.probability * d.reorder.ahead_ms * pps / 1e3)
    rows.append(
        Row(
            which,
            "reordered",
            "fraction",
            reorder,
            expected,
            *((0.0, 0.0) if in_order else (None, None)),
            f"{u['reordered']}/{received}",
        )
    )
    return rows
