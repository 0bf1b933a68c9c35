"""Every run's own fidelity audit: was the path during this run what the scenario said?

Measured over the run's window on CLOCK_MONOTONIC (Python's time.monotonic()):
- linkem's releases more than 1 ms after their due time (each one timestamped by linkem),
  and the largest lateness: a late release is a packet delayed more than configured;
- the kernel's NFQUEUE drops (linkem's queue full): packets lost that the link did not lose;
- linkem's own stalls: a packet it read long after the kernel queued it (the kernel's receive
  stamp), or a timer wake-up long after it asked; either way linkem was not running when it
  meant to (stopped, its vCPU descheduled), even if no packet came due meanwhile;
- machine stalls: a pinned SCHED_FIFO thread per CPU that could not run for a while (this
  VM's hypervisor stalls for 5-16 ms now and then); everything on the machine waited;
- the receivers' own drops: UDP datagrams the client's and the server's namespaces dropped
  (InErrors: a full socket receive buffer or a bad checksum), a loss the link did not make
  and a QUIC sender cannot tell from the path's;
- each party's CPU time (its cgroup, testbed/cpu.py) and its share of the time the client's
  processes ran (testbed/cpu_span.py: not the window, which also holds a server's start and
  the translation of a stack's logs after its client left): a client with no budget that
  kept nearly the whole machine busy starved itself and the path;
  a linkem whose busiest thread ran nearly all the run, or that its CPU quota held back, was
  the path's bottleneck itself (flagged); a server or client that kept a core busy is named
  as saturated (an outcome to report, as Zhang's receiver-bound QUIC, not a fault).

A run over any threshold of the scenario's [fidelity] is flagged, with its reasons, and by
default kept out of the statistics (core.status); the report lists it as excluded.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..binaries import find_binary
from ..qlog import read_qlog
from ..testbed.cpu import UNLIMITED, CpuBudget
from ..testbed.cpu_span import Span, SpanWatch
from ..testbed.linkem_window import LATE_MS, LinkemWindow, counter_delta, direction_stats, linkem_window
from ..testbed.netns_files import read_in_namespace
from ..testbed.probe import receiver_drops, udp_snmp
from .spec import Fidelity

FRESH_WAIT_S = 0.3  # how long to wait for linkem's stats to cover the run's end
# linkem's directions hand their counters to its stats writer once per stats interval
# (testbed.linkem: 25 ms), so a document covers everything up to that long before its own
# `mono_ms`; SIGUSR1 has it written at once instead of at the next interval (a linkem with
# `covers_mono_ms` has its directions hand over first: no wait)
STATS_LAG_MS = 25.0
# linkem-probe prints a stall within 3 ms of its end (its 2 ms poll, its watchers' 1 ms
# period), read soon after; every run waits this long past its end (was 12 ms)
STALL_REPORT_MS = 5.0
# a thread on the CPU this share of the run's wall time had no more to give: its party was
# saturated (a process whose work fits in one thread cannot use a second core)
SATURATED_SHARE = 0.95
LINKEM_THROTTLED_SHARE = 0.02  # linkem held back by a quota this share of the run: out of CPU


@dataclass
class Audit(LinkemWindow):
    """linkem's account of the run's window (its fields first), then the machine's and each
    party's."""

    stalls: int = 0
    max_stall_ms: float = 0.0
    client_cpu: str | None = None  # the budget's label; None = none asked (unlimited)
    client_cpu_s: float | None = None  # user + system of every client process in the run
    client_cpu_share: float | None = None  # client_cpu_s / client_span_s (cores busy)
    # the wall time the client's processes ran: the server's and linkem's CPU are counted over
    # it, and every share divides by it (None: no client process seen, no share measured)
    client_span_s: float | None = None
    client_throttled_s: float | None = None  # time the budget held the client back
    server_cpu_s: float | None = None  # every server process (the stacks' servers)
    server_cpu_share: float | None = None
    router_cpu_s: float | None = None  # linkem (both segments' linkems in the proxy topology)
    router_cpu_share: float | None = None
    router_throttled_s: float | None = None  # a quota on linkem's group held it back this long
    linkem_busiest_thread_share: float | None = None  # its busiest thread's on-CPU time / span
    delivered_mb: float | None = None  # IP bytes linkem forwarded in both directions, MB
    # UDP datagrams the client's and server's namespaces dropped (None: not readable)
    receiver_drops: int | None = None
    saturated: list[str] = field(default_factory=list)  # parties that kept a core busy
    flagged: bool = False
    reasons: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def judge(self, limits: Fidelity) -> "Audit":
        reasons = []
        if self.max_release_late_ms is not None and self.max_release_late_ms > limits.max_release_late_ms:
            reasons.append(
                f"a release {self.max_release_late_ms:.1f} ms late (limit {limits.max_release_late_ms:g} ms)"
            )
        if self.released and self.late_releases / self.released > limits.max_late_release_share:
            reasons.append(
                f"{self.late_releases} of {self.released} releases over {LATE_MS:g} ms late "
                f"(limit {limits.max_late_release_share:.1%})"
            )
        if self.kernel_queue_drops is not None and self.kernel_queue_drops > limits.max_kernel_queue_drops:
            reasons.append(f"{self.kernel_queue_drops} packets dropped by the kernel's queue to linkem")
        if self.max_read_wait_ms is not None and self.max_read_wait_ms > limits.max_stall_ms:
            reasons.append(
                f"linkem read a packet {self.max_read_wait_ms:.1f} ms after the kernel queued it "
                f"(linkem stalled; limit {limits.max_stall_ms:g} ms)"
            )
        if self.max_wakeup_late_ms is not None and self.max_wakeup_late_ms > limits.max_stall_ms:
            reasons.append(
                f"linkem woke {self.max_wakeup_late_ms:.1f} ms later than it asked "
                f"(linkem stalled; limit {limits.max_stall_ms:g} ms)"
            )
        if self.max_stall_ms > limits.max_stall_ms:
            reasons.append(f"machine stalled {self.max_stall_ms:.1f} ms (limit {limits.max_stall_ms:g} ms)")
        if self.receiver_drops is not None and self.receiver_drops > limits.max_receiver_drops:
            reasons.append(
                f"{self.receiver_drops} UDP datagrams dropped by the receiving hosts' sockets, not the link "
                f"(limit {limits.max_receiver_drops})"
            )
        if (
            self.client_cpu in (None, UNLIMITED)
            and self.client_cpu_share is not None
            and self.client_cpu_share > limits.max_client_cpu_cores
        ):
            reasons.append(
                f"client CPU-starved with no budget asked: it kept {self.client_cpu_share:.2f} "
                f"cores busy over the run (limit {limits.max_client_cpu_cores:g})"
            )
        reasons += self._linkem_out_of_cpu()
        self.reasons = reasons
        self.flagged = bool(reasons)
        return self

    def _linkem_out_of_cpu(self) -> list[str]:
        """linkem that could not run when it wanted to delayed or dropped packets the link
        did not: the path was not the scenario's, whatever its late-release counters say."""
        wall_s = (self.router_cpu_s / self.router_cpu_share) if self.router_cpu_share else None
        if self.router_throttled_s and wall_s and self.router_throttled_s / wall_s > LINKEM_THROTTLED_SHARE:
            return [f"linkem out of CPU: its CPU quota held it back {self.router_throttled_s:.3f} s of {wall_s:.2f} s"]
        if self.linkem_busiest_thread_share is not None and self.linkem_busiest_thread_share >= SATURATED_SHARE:
            return [f"linkem out of CPU: its busiest thread ran {self.linkem_busiest_thread_share:.0%} of the run"]
        return []

    def with_reasons(self, extra: list[str]) -> "Audit":
        """The kind's own reasons (Measurement.audit_reasons) flag the run too."""
        self.reasons = [*self.reasons, *extra]
        self.flagged = bool(self.reasons)
        return self


def linkem_audit(before: dict, after: dict, t0_ms: float, t1_ms: float) -> Audit:
    """The linkem part of the audit for the window [t0_ms, t1_ms] (CLOCK_MONOTONIC ms)."""
    return Audit(**asdict(linkem_window(before, after, t0_ms, t1_ms)))


@dataclass(frozen=True)
class MachineStall:
    cpu: int
    start_ms: float  # CLOCK_MONOTONIC: the earliest the stall began (the previous wake-up)
    end_ms: float
    late_ms: float


class StallWatch:
    """`linkem-probe stalls --stream` for a whole experiment, read line by line; started in
    a testbed namespace so the testbed's teardown (or `longlook clean`) ends it on any exit."""

    PERIOD_US = 1000
    THRESHOLD_US = 1000

    def __init__(self, testbed):
        self._stalls: list[MachineStall] = []
        self._lock = threading.Lock()
        argv = [
            str(find_binary("linkem-probe")),
            "stalls",
            "--stream",
            "--period-us",
            str(self.PERIOD_US),
            "--threshold-us",
            str(self.THRESHOLD_US),
        ]
        self.proc = testbed.popen("router", argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        first = self.proc.stdout.readline().strip()
        if first != "ready":
            self.stop()
            from ..testbed import TestbedError

            raise TestbedError(
                "the machine-stall monitor (linkem-probe stalls --stream) did not start",
                hint="rebuild the Rust binaries: bash scripts/setup.sh",
            )
        self._reader = threading.Thread(target=self._read, daemon=True, name="stall-watch")
        self._reader.start()

    def _read(self) -> None:
        period_ms = self.PERIOD_US / 1000
        for line in self.proc.stdout:
            try:
                s = json.loads(line).get("stall")
            except (json.JSONDecodeError, AttributeError):
                continue
            if s:
                due, late = float(s["due_mono_ms"]), float(s["late_ms"])
                with self._lock:
                    self._stalls.append(MachineStall(int(s["cpu"]), due - period_ms, due + late, late))

    def between(self, t0_ms: float, t1_ms: float) -> list[MachineStall]:
        """Stalls overlapping the window. A stall is printed within 3 ms of its end: ask
        STALL_REPORT_MS after the window (RunAudit.end waits for that)."""
        with self._lock:
            return [s for s in self._stalls if s.end_ms >= t0_ms and s.start_ms <= t1_ms]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class RunAudit:
    """Around one run: `begin()` before the kind measures, `end()` after -> Audit."""

    def __init__(self, testbed, stalls: StallWatch | None, limits: Fidelity, client_cpu: CpuBudget | None = None):
        self.testbed, self.stalls, self.limits = testbed, stalls, limits
        self.client_cpu = client_cpu
        self.before: dict = {}
        self.after: dict = {}
        self.t0_ms = self.t1_ms = 0.0
        self._cpu0: dict = {}
        self._threads0: dict[int, int] = {}
        self._span: SpanWatch | None = None
        self._udp0: dict[str, dict[str, int]] = {}

    def begin(self) -> None:
        self._udp0 = _receiver_udp(self.testbed)
        self.before = _stats(self.testbed)
        self._cpu0 = _party_usage(self.testbed)
        self._threads0 = _linkem_threads(self.testbed)
        self.t0_ms = time.monotonic() * 1000
        self._span = _watch_client(self.testbed)

    def abandon(self) -> None:
        """A run that raised: no audit, and no watch left polling."""
        if self._span is not None:
            self._span.stop()

    def end(self) -> Audit:
        span = self._span.stop() if self._span is not None else None
        self.t1_ms = time.monotonic() * 1000
        cpu1 = _party_usage(self.testbed)
        threads1 = _linkem_threads(self.testbed)
        self.after = _fresh_stats(self.testbed, self.t1_ms)
        a = linkem_audit(self.before, self.after, self.t0_ms, self.t1_ms)
        a.client_cpu = self.client_cpu.label if self.client_cpu is not None else None
        if self._span is None:  # a testbed that cannot say when its client ran: the window
            window = ((self._cpu0, self._threads0), (cpu1, threads1))
            span_s: float | None = (self.t1_ms - self.t0_ms) / 1000
        elif span is not None:
            window, span_s = _client_span_counters(span, self._cpu0, cpu1), span.seconds
            a.client_span_s = round(span_s, 4)
        else:  # no client process ran: CPU seconds over the window, no share of anything
            window, span_s = ((self._cpu0, self._threads0), (cpu1, threads1)), None
        (usage0, th0), (usage1, th1) = window
        party_cpu(a, usage0, usage1, span_s)
        if th1 and span_s:
            busiest_ns = max(ns - th0.get(tid, 0) for tid, ns in th1.items())
            a.linkem_busiest_thread_share = round(busiest_ns / 1e9 / span_s, 4)
            if a.linkem_busiest_thread_share >= SATURATED_SHARE:
                a.saturated.append("router")
        a.receiver_drops = _udp_drops(self._udp0, _receiver_udp(self.testbed))
        forwarded = counter_delta(self.before, self.after, lambda d: d.get("bytes"))
        a.delivered_mb = round(forwarded / 1e6, 6) if self.after else None
        if self.stalls is not None:
            wait_ms = self.t1_ms + STALL_REPORT_MS - time.monotonic() * 1000
            if wait_ms > 0:
                time.sleep(wait_ms / 1000)
            hit = self.stalls.between(self.t0_ms, self.t1_ms)
            a.stalls = len(hit)
            a.max_stall_ms = max((s.late_ms for s in hit), default=0.0)
        return a.judge(self.limits)


def linkem_delta(before: dict, after: dict) -> dict:
    """linkem's direction counters over one run (after - before); flows as they stand after."""
    out = {"elapsed_s": after.get("elapsed_s", 0) - before.get("elapsed_s", 0), "directions": {}}
    for which, counters in direction_stats(after).items():
        prev = direction_stats(before).get(which, {})
        out["directions"][which] = {k: v - prev.get(k, 0) for k, v in counters.items() if isinstance(v, (int, float))}
    if "nat" in after:
        out["nat_rebindings"] = nat_rebindings(before, after)
    if "handover" in after:
        out["handover"] = {
            **after["handover"],
            "dropped_path_down": {w: int(d.get("dropped_path_down", 0)) for w, d in out["directions"].items()},
        }
    return out


def handover_detail(handover: dict, t0_ms: float) -> dict:
    """A run's handover (from `linkem_delta`): when its first path went down, ms from the
    run's start, and the packets each direction lost with it."""
    down = handover.get("first_path_down_mono_ms")
    return {
        "at_s": (handover.get("config") or {}).get("at_ns", 0) / 1e9,
        "first_path_down_t_ms": None if down is None else round(down - t0_ms, 3),
        "dropped_path_down": handover.get("dropped_path_down", {}),
    }


# linkem's ECN counters per direction: packets that arrived ECT(0), ECT(1), CE (before the
# middlebox; not-ECT is the rest of `received`), and those whose codepoint its middlebox's
# `ecn` policy changed
ECN_WIRE_KEYS = ("ect0_seen", "ect1_seen", "ce_seen", "ecn_rewritten")


def queue_figures(delta: dict) -> dict:
    """What the bottleneck's queue did during one run, per direction (from `linkem_delta`):
    the mean sojourn of the packets it queued, and the packets it dropped full, dropped by its
    AQM and marked CE; and what was marked on the wire: the packets that arrived (`received`)
    and of them ECT(0), ECT(1) and CE, and the ECN rewrites of a middlebox. A direction is
    there when it queued a packet or saw an ECN codepoint (an ECN black hole may queue none;
    then no mean sojourn). Empty for a linkem that does not count sojourns; the ECN figures
    are left out for one that does not count them (an older linkem), rather than said 0."""
    out = {}
    for which, d in (delta.get("directions") or {}).items():
        n = d.get("sojourn_packets") or 0
        ecn = {k: int(d[k]) for k in ECN_WIRE_KEYS if k in d}
        if not n and not any(ecn.values()):
            continue
        q = {"sojourn_ms_mean": round(d.get("sojourn_ns_sum", 0) / n / 1e6, 3)} if n else {}
        q.update(
            packets=int(n),
            dropped_buffer=int(d.get("dropped_buffer", 0)),
            dropped_aqm=int(d.get("dropped_aqm", 0)),
            ce_marked=int(d.get("ce_marked", 0)),
        )
        if ecn:
            q["received"] = int(d.get("received", 0))
            q.update(ecn)
        out[which] = q
    return out


def nat_rebindings(before: dict, after: dict) -> list[dict]:
    """The NAT's rebindings between two stats documents (linkem appends them in order and
    keeps the first 10 000; `mono_ms` is CLOCK_MONOTONIC, as time.monotonic())."""
    seen = len((before.get("nat") or {}).get("rebindings", []))
    return list((after.get("nat") or {}).get("rebindings", [])[seen:])


HOST_BUFFER_LIMITED_SHARE = 0.10  # of a TCP sender's busy time, limited by a host buffer


TCP_SUMMARY_WAIT_S = 1.0  # the server writes its summary when it sees the client close


def tcp_summary(tcp_log: Path | None, wait_s: float = TCP_SUMMARY_WAIT_S) -> dict:
    """Our server's `longlook:tcp_info_summary` of a TCP connection ({} without one). The
    log is taken from the server as soon as the fetch returns, while the server may not yet
    have seen the client's FIN and written the summary (the rename keeps its writes): wait
    up to `wait_s` for it, reading only the file's tail."""
    if tcp_log is None or not tcp_log.is_file():
        return {}
    deadline = time.monotonic() + wait_s
    while True:
        with open(tcp_log, "rb") as f:
            f.seek(max(0, tcp_log.stat().st_size - 4096))
            written = b"tcp_info_summary" in f.read()
        if written or time.monotonic() >= deadline:
            break
        time.sleep(0.02)
    if not written:
        return {}
    return read_qlog(tcp_log).last("longlook:tcp_info_summary") or {}


# the share of the receive buffer a full advertised window reaches (tcp_adv_win_scale's 1/2,
# Linux's scaling_ratio up to about 3/4): a window this close to the cap is the cap
RWND_CAP_SHARE = 0.45


def host_buffer_reasons(summary: dict, rmem_max: int | None = None) -> list[str]:
    """A TCP sender held back by a host buffer measured the host, not the path: its send
    buffer (sndbuf_limited) or the receiver's buffer behind the window it advertised
    (rwnd_limited), from the kernel's chrono in our server's `longlook:tcp_info_summary`
    (`tcp_summary`). A receive window is a host cap only when it reached the buffer the testbed gave the
    receiver (`rmem_max`: its tcp_rmem maximum; the summary's largest advertised window
    `snd_wnd_max` at RWND_CAP_SHARE of it or more): a window still growing by autotuning
    behind a queue-inflated RTT is TCP's own behaviour (10 x 100 KB loads at 10 Mbit/s behind
    a 4-BDP buffer spent 10-13% rwnd-limited so). Without either figure (an older endpoint),
    rwnd limits are not called a cap."""
    busy = summary.get("busy_time_us") or 0
    if busy <= 0:
        return []
    window, capped = summary.get("snd_wnd_max"), False
    if window is not None and rmem_max:
        capped = window >= RWND_CAP_SHARE * rmem_max
    out = []
    for key, whose, counts in (
        ("sndbuf_limited_us", "the server's send buffer", True),
        ("rwnd_limited_us", "the client's receive buffer (the window it advertised)", capped),
    ):
        share = (summary.get(key) or 0) / busy
        if counts and share > HOST_BUFFER_LIMITED_SHARE:
            out.append(f"window-limited by a host buffer: {whose} held TCP back {share:.0%} of its sending time")
    return out


def tcp_ecn_check(summary: dict, asked: bool) -> tuple[dict, list[str]]:
    """What a TCP run's handshake made of the ECN switch, from our server's
    `longlook:tcp_info_summary` (`tcp_summary`; `ecn`: negotiated; `delivered_ce`: packets delivered
    CE-marked), and a reason to flag the run when that is not what the scenario asked: a run
    with ECN off that negotiated it (or on, without) measured another path than its cell's."""
    if "ecn" not in summary:
        return {}, []
    figures = {"tcp_ecn": bool(summary["ecn"]), "tcp_delivered_ce": int(summary.get("delivered_ce") or 0)}
    if figures["tcp_ecn"] == asked:
        return figures, []
    said = (
        "negotiated ECN although the cell has it off"
        if figures["tcp_ecn"]
        else "did not negotiate the ECN it asked for"
    )
    return figures, [f"ECN: the TCP handshake {said}"]


RECEIVERS = ("client", "server")  # the namespaces whose sockets receive a run's packets


def _receiver_udp(testbed) -> dict[str, dict[str, int]]:
    """Each receiving namespace's UDP counters (testbed/netns_files.py: no process per read)."""
    names = getattr(testbed, "ns", None) or {}
    out = {}
    for role in RECEIVERS:
        if role in names and (text := read_in_namespace(names[role], "snmp")) is not None:
            out[role] = udp_snmp(text)
    return out


def _udp_drops(before: dict[str, dict[str, int]], after: dict[str, dict[str, int]]) -> int | None:
    """Datagrams the receivers dropped between two readings; None when any was unreadable."""
    drops = [receiver_drops(before.get(role, {}), after.get(role, {})) for role in RECEIVERS if role in before]
    if not drops or any(d is None for d in drops):
        return None
    return sum(drops)


def _party_usage(testbed) -> dict:
    usage = getattr(testbed, "cpu_usage", None)
    return usage() if usage is not None else {}


def _watch_client(testbed) -> SpanWatch | None:
    """A watch on when the testbed's client processes run; None where it cannot say."""
    running = getattr(testbed, "client_running", None)
    if running is None or running() is None:
        return None
    return SpanWatch(running, lambda: (_party_usage(testbed), _linkem_threads(testbed))).start()


def _client_span_counters(span: Span, cpu0: dict, cpu1: dict) -> tuple[tuple[dict, dict], tuple[dict, dict]]:
    """(usage, linkem threads) at the client span's start and end. The client's own counters
    are the window's: its group holds nothing outside the span, and its first few ms (before
    a poll saw it) count too."""
    (usage0, th0), (usage1, th1) = span.start.counters, span.end.counters
    return ({**usage0, "client": cpu0.get("client")}, th0), ({**usage1, "client": cpu1.get("client")}, th1)


def party_cpu(a: Audit, before: dict, after: dict, wall_s: float | None) -> None:
    """Each party's CPU time over the run (cgroup counters before and after) into the audit,
    and its share of `wall_s` (None: no share); the client's share of one core marks it
    saturated (its packet work is one thread)."""
    for party in ("client", "server", "router"):
        b, e = before.get(party), after.get(party)
        if b is None or e is None:
            continue
        used = e - b
        setattr(a, f"{party}_cpu_s", round(used.cpu_s, 4))
        share = round(used.cpu_s / wall_s, 4) if wall_s else None
        setattr(a, f"{party}_cpu_share", share)
        if party in ("client", "router"):
            setattr(a, f"{party}_throttled_s", round(used.throttled_ns / 1e9, 4))
        if party != "router" and share is not None and share >= SATURATED_SHARE:
            a.saturated.append(party)


def _linkem_threads(testbed) -> dict[int, int]:
    """On-CPU ns of each thread of the testbed's linkems (/proc/<pid>/task/*/schedstat, ns
    exact, unlike the 10 ms ticks of /proc/<pid>/stat)."""
    out: dict[int, int] = {}
    for lk in (getattr(testbed, "linkem", None), getattr(testbed, "linkem_b", None)):
        pid = getattr(lk, "pid", None)
        if not pid:
            continue
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    out[int(tid)] = int(f.read().split()[0])
            except (OSError, ValueError, IndexError):
                continue
    return out


def cpu_figures(a: Audit) -> tuple[dict[str, float | None], dict]:
    """The CPU part of an audit as a run's metrics (numbers any analysis can compare: each
    party's CPU seconds, its share of the client's span, the span, and per MB the router
    forwarded) and details (the client's budget, the throttling, who was saturated)."""
    metrics: dict[str, float | None] = {}
    for party in ("client", "server", "router"):
        cpu_s = getattr(a, f"{party}_cpu_s")
        if cpu_s is None:
            continue
        metrics[f"{party}_cpu_s"] = cpu_s
        metrics[f"{party}_cpu_share"] = getattr(a, f"{party}_cpu_share")
        if a.delivered_mb:
            metrics[f"{party}_cpu_s_per_mb"] = round(cpu_s / a.delivered_mb, 6)
    if a.client_span_s is not None:  # what the shares divide by, so anyone can check them
        metrics["client_span_s"] = a.client_span_s
    details: dict = {"client_cpu": a.client_cpu} if a.client_cpu else {}
    if a.client_cpu_s is not None:
        details = {"client_cpu": a.client_cpu or UNLIMITED, "client_throttled_s": a.client_throttled_s}
    if a.saturated:
        details["saturated"] = list(a.saturated)
    return metrics, details


def _stats(testbed) -> dict:
    from ..testbed import TestbedError

    try:
        return testbed.linkem_stats()
    except TestbedError:
        return {}  # a linkem that has not written its first stats yet: all counters zero


def _fresh_stats(testbed, t1_ms: float) -> dict:
    """linkem's stats covering everything up to t1. SIGUSR1 has linkem write them at once; a
    linkem that says what its document covers (`covers_mono_ms`) first has its directions
    hand over their counters, so it is asked right away; an older one is asked once its
    directions' regular hand-over (every STATS_LAG_MS) passed t1; one without `mono_ms` is
    read as it is."""
    if "covers_mono_ms" not in _stats(testbed):
        wait_ms = t1_ms + STATS_LAG_MS + 1 - time.monotonic() * 1000
        if wait_ms > 0:
            time.sleep(wait_ms / 1000)
    for lk in (getattr(testbed, "linkem", None), getattr(testbed, "linkem_b", None)):  # both segments'
        if pid := getattr(lk, "pid", None):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGUSR1)
    deadline = time.monotonic() + FRESH_WAIT_S
    while True:
        stats = _stats(testbed)
        if _covers(stats, t1_ms) or time.monotonic() > deadline:
            return stats
        time.sleep(0.001)


def _covers(stats: dict, t1_ms: float) -> bool:
    if stats.get("covers_mono_ms") is not None:
        return stats["covers_mono_ms"] >= t1_ms
    return stats.get("mono_ms") is None or stats["mono_ms"] >= t1_ms + STATS_LAG_MS
