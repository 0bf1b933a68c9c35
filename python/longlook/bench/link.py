"""`longlook bench link`: how closely linkem delivers what it is configured to.

Figures (the targets of the link-emulation issue):
- bulk TCP goodput at 5, 10, 50, 100 Mbit/s as % of the most TCP can carry (1448/1500);
- added RTT error (mean, sd, p99, max) for 10, 50, 150 ms RTT, idle and at 50% load, over
  all probes and over the probes no machine stall overlapped (stalls measured alongside);
- measured loss for 1% and 2% configured, with the 99% binomial interval;
- the most linkem forwards (10 Gbit/s configured, 20 ms each way, iperf3 with 4 streams)
  and the CPU it uses doing so;
- the kernel ratio: iperf3 -P 4 through linkem (10 Gbit/s configured, 0 and 20 ms each way)
  over plain kernel forwarding on the same topology (no NFQUEUE rule, no linkem), measured
  alternately on two testbeds open at once, so a busy host slows both alike;
- the gigabit check: one TCP Cubic flow over 1 Gbit/s, 25 ms each way, a BDP buffer;
- with `ceiling`: per link model (fixed rate; a mahimahi trace of the same constant rate),
  the highest rate at which the link, 20 ms each way, still meets the self-check's tolerance,
  and linkem's CPU there.
All on one 2-vCPU machine: a busy host shows up as noise in these figures.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import numpy as np

from ..linkprofile import LinkProfile
from ..testbed import Testbed
from ..testbed.host import linkem_datapath, sh, TestbedError
from ..testbed.linkcheck import (
    binomial_interval,
    check_link,
    expected_rtt_ms,
    IP_PACKET,
    most_tcp_goodput,
    RTT_PROBE_SIZE,
    Tolerances,
    UDP_IP_OVERHEAD,
)
from ..testbed.ownership import all_records
from ..testbed.probe import PathProbe, iperf3_receiver_mbit, steady_goodput_mbit
from ..testbed.processes import cpu_seconds
from ..testbed.stalls import StallMonitor, probes_hit, stalls_within
from .measure import settled_stats
from .row import print_table


def _profile(
    name: str, rate_mbit: float, rtt_ms: float, buffer_bytes: int | None = None, loss: float = 0.0
) -> LinkProfile:
    bdp = int(rate_mbit * 1e6 / 8 * rtt_ms / 1e3)
    return LinkProfile(
        name=name,
        rate_mbit=rate_mbit,
        delay_ms=rtt_ms / 2,
        loss=loss,
        buffer_bytes=buffer_bytes or max(2 * bdp, 30_000),
    )


def bench_tcp(tb: Testbed, probe: PathProbe, duration_s: float) -> list[dict]:
    rows = []
    for rate in (5, 10, 50, 100):
        p = _profile(f"tcp-{rate}", rate, 40)
        tb.reconfigure(p)
        t = probe.tcp("down", duration_s)
        i = probe.iperf3("down", duration_s)
        most = most_tcp_goodput(rate)
        steady = steady_goodput_mbit(t, 1.0)
        rows.append(
            {
                "rate_mbit": rate,
                "rtt_ms": 40,
                "most_possible_mbit": most,
                "probe_mbit": steady,
                "probe_pct": 100 * steady / most,
                "iperf3_mbit": iperf3_receiver_mbit(i, "down"),
                "iperf3_pct": 100 * iperf3_receiver_mbit(i, "down") / most,
            }
        )
    return rows


RTT_LOAD_MBIT = 50.0  # "50% load" of the 100 Mbit/s RTT-bench link


def _summary(x: np.ndarray) -> dict:
    return {
        "n": int(x.size),
        "mean": float(x.mean()),
        "sd": float(x.std(ddof=1)),
        "p99": float(np.percentile(x, 99)),
        "max": float(x.max()),
    }


def measure_rtt(probe: PathProbe, count: int, load_mbit: float) -> dict:
    """RTT probes with the machine-stall monitor running: the raw summary of every probe,
    and the summary of the probes no machine stall overlapped (see testbed/stalls.py)."""
    with StallMonitor() as monitor:
        r = probe.rtt(count=count, interval_ms=2, size=RTT_PROBE_SIZE, load_mbit=load_mbit, samples=True)
    rtt = np.asarray(r["samples_ms"], dtype=float)
    sent = np.asarray(r["sent_mono_ms"], dtype=float)
    hit = np.asarray(probes_hit(list(sent), list(rtt), monitor.stalls), dtype=bool)
    during = stalls_within(monitor.stalls, float(sent.min()), float((sent + rtt).max()))
    return {
        "all": _summary(rtt),
        "unstalled": _summary(rtt[~hit]),
        "probes_hit": int(hit.sum()),
        "stalls": len(during),
        "stall_max_ms": max((s.late_ms for s in during), default=0.0),
        "stall_total_ms": sum(s.late_ms for s in during),
    }


def bench_rtt_baseline(count: int) -> dict[float, dict]:
    """The same probes over the same topology with plain kernel forwarding and no linkem:
    the RTT and jitter the host itself adds (veths, namespaces, scheduling). What linkem adds
    is measured against this, per load level."""
    with Testbed(None) as plain, PathProbe(plain) as probe:
        return {load: measure_rtt(probe, count, load) for load in (0.0, RTT_LOAD_MBIT)}


def _errors(m: dict, expected: float, base: dict) -> dict:
    """Raw error (measured - configured) and the error linkem adds over the plain path:
    mean minus the plain path's mean, sd as sqrt(sd^2 - sd_plain^2) (independent noise)."""
    return {
        "mean_err_ms": m["mean"] - expected,
        "sd_ms": m["sd"],
        "p99_err_ms": m["p99"] - expected,
        "max_err_ms": m["max"] - expected,
        "plain_mean_ms": base["mean"],
        "plain_sd_ms": base["sd"],
        "added_mean_err_ms": m["mean"] - expected - base["mean"],
        "added_sd_ms": max(0.0, m["sd"] ** 2 - base["sd"] ** 2) ** 0.5,
        "n": m["n"],
    }


def bench_rtt(tb: Testbed, probe: PathProbe, count: int, baseline: dict[float, dict]) -> list[dict]:
    """Per RTT and load: the errors over all probes (the headline, tails included), the same
    over the probes no machine stall overlapped (`unstalled`), and the stalls themselves."""
    rows = []
    rate = 100.0
    for rtt in (10, 50, 150):
        p = _profile(f"rtt-{rtt}", rate, rtt)
        expected = expected_rtt_ms(p, RTT_PROBE_SIZE + UDP_IP_OVERHEAD)
        for load in (0.0, RTT_LOAD_MBIT):
            tb.reconfigure(p)  # fresh linkem counters per cell
            m = measure_rtt(probe, count, load)
            base = baseline[load]
            late = sum(d.get("late_releases_over_1ms", 0) for d in settled_stats(tb)["directions"].values())
            rows.append(
                {
                    "rtt_ms": rtt,
                    "load_mbit": load,
                    "expected_ms": expected,
                    **_errors(m["all"], expected, base["all"]),
                    "unstalled": _errors(m["unstalled"], expected, base["unstalled"]),
                    "probes_hit": m["probes_hit"],
                    "stalls": m["stalls"],
                    "stall_max_ms": m["stall_max_ms"],
                    "stall_total_ms": m["stall_total_ms"],
                    "plain_stalls": base["stalls"],
                    "linkem_late_over_1ms": late,
                }
            )
    return rows


def bench_loss(tb: Testbed, probe: PathProbe, duration_s: float) -> list[dict]:
    rows = []
    for loss in (0.01, 0.02):
        tb.reconfigure(_profile(f"loss-{loss}", 50, 20, loss=loss))
        for which in ("up", "down"):
            u = probe.udp(which, 25, duration_s, size=284, drain_ms=600)  # 312-byte IP, 10k pps
            lo, hi = binomial_interval(u["lost"], u["sent"], 0.99)
            rows.append(
                {
                    "configured": loss,
                    "direction": which,
                    "sent": u["sent"],
                    "lost": u["lost"],
                    "measured": u["lost"] / u["sent"],
                    "ci99_low": lo,
                    "ci99_high": hi,
                    "inside": lo <= loss <= hi,
                }
            )
    return rows


def bench_max_rate(tb: Testbed, probe: PathProbe, duration_s: float) -> dict:
    tb.reconfigure(LinkProfile(name="max", rate_mbit=10_000, delay_ms=20, buffer_bytes=20_000_000))
    pid = tb.linkem.pid
    cpu0, t0 = cpu_seconds(pid), time.monotonic()
    i = iperf3_down(probe, duration_s, streams=4)
    cpu1, t1 = cpu_seconds(pid), time.monotonic()
    return {
        "configured_mbit": 10_000,
        "delay_ms_each_way": 20,
        "streams": 4,
        "iperf3_mbit": iperf3_receiver_mbit(i, "down"),
        "iperf3_whole_mbit": i["end"]["sum_received"]["bits_per_second"] / 1e6,
        "linkem_cpu_pct_of_core": 100 * (cpu1 - cpu0) / (t1 - t0),
    }


# ---- near line rate: the kernel ratio, the gigabit check, the ceiling ------------------

UNLIMITED_MBIT = 10_000
KERNEL_RATIO_TARGET = 0.9
BIG_SOCKET_BUFFER = 64 << 20  # enough for 4 flows x 5 Gbit/s x 40 ms and one 1 Gbit/s x 50 ms flow


def ensure_tcp_buffers(tb: Testbed, max_bytes: int = BIG_SOCKET_BUFFER) -> None:
    """Raise the TCP buffer maxima in the client's and server's namespaces to `max_bytes`
    (never lower them: the testbed may size them from the path itself), so the ends' windows
    are not what limits a fast path. Call after each (re)start of linkem."""
    for role in ("client", "server"):
        ns = tb.ns[role]
        settings = []
        for key, default in (("net.ipv4.tcp_rmem", 131072), ("net.ipv4.tcp_wmem", 16384)):
            now = sh(["ip", "netns", "exec", ns, "sysctl", "-n", key]).stdout.split()
            if len(now) != 3 or int(now[2]) < max_bytes:
                settings.append(f"{key}=4096 {now[1] if len(now) == 3 else default} {max_bytes}")
        if settings:
            sh(["ip", "netns", "exec", ns, "sysctl", "-qw", *settings])


def iperf3_down(probe: PathProbe, duration_s: float, streams: int) -> dict:
    """iperf3 from server to client; retried while the server is still busy with the previous
    test (its connections outlive a linkem restart by a few seconds) or not yet listening."""
    for _ in range(40):
        doc = probe.iperf3("down", duration_s, streams=streams)
        if "error" not in doc:
            return doc
        time.sleep(0.5)
    raise TestbedError(f"iperf3: {doc['error']}")


def _unlimited(name: str, delay_ms: float) -> LinkProfile:
    return LinkProfile(name=name, rate_mbit=UNLIMITED_MBIT, delay_ms=delay_ms, buffer_bytes=20_000_000)


def _forward(tb: Testbed, probe: PathProbe, duration_s: float, streams: int = 4) -> dict:
    """One iperf3 run: goodput (median 1 s after the first, and whole run) and linkem's CPU."""
    pid = tb.linkem.pid if tb.linkem else None
    cpu0, t0 = (cpu_seconds(pid) if pid else None), time.monotonic()
    doc = iperf3_down(probe, duration_s, streams)
    cpu1, t1 = (cpu_seconds(pid) if pid else None), time.monotonic()
    return {
        "mbit": iperf3_receiver_mbit(doc, "down"),
        "whole_mbit": doc["end"]["sum_received"]["bits_per_second"] / 1e6,
        "linkem_cpu_pct": None if cpu0 is None or cpu1 is None else 100 * (cpu1 - cpu0) / (t1 - t0),
    }


def bench_kernel_ratio(
    duration_s: float,
    reps: int,
    delays_ms: tuple[float, ...] = (0.0, 20.0),
    datapaths: tuple[str | None, ...] = (None,),
) -> dict:
    """Plain kernel forwarding vs linkem, iperf3 -P 4 server -> client, same topology. The
    testbeds (plain, and linkem on each datapath) are open at once and measured in turn
    (plain, then linkem at each delay on each datapath), `reps` times: medians per arm, and
    each arm's ratio to plain."""
    from contextlib import ExitStack

    names = [linkem_datapath(d) for d in datapaths]
    arms = [(dp, d) for dp in names for d in delays_ms]
    runs: dict[str, list[dict]] = {"plain": [], **{f"{dp}_{d:g}ms": [] for dp, d in arms}}
    load = [os.getloadavg()[0]]
    with ExitStack() as stack:
        plain = stack.enter_context(Testbed(None))
        plain_probe = stack.enter_context(PathProbe(plain))
        beds = {}
        for dp in names:
            tb = stack.enter_context(Testbed(_unlimited("ratio", delays_ms[0]), datapath=dp))
            beds[dp] = (tb, stack.enter_context(PathProbe(tb)))
        ensure_tcp_buffers(plain)
        for _ in range(reps):
            runs["plain"].append(_forward(plain, plain_probe, duration_s))
            for dp, d in arms:
                tb, probe = beds[dp]
                tb.reconfigure(_unlimited("ratio", d))
                ensure_tcp_buffers(tb)
                runs[f"{dp}_{d:g}ms"].append(_forward(tb, probe, duration_s))
            load.append(os.getloadavg()[0])
        for tb, _ in beds.values():
            tb.check()

    def med(arm: str, key: str) -> float | None:
        xs = [r[key] for r in runs[arm] if r[key] is not None]
        return float(np.median(xs)) if xs else None

    base = med("plain", "mbit")
    rows = [
        {
            "path": "plain kernel forwarding",
            "datapath": "-",
            "delay_ms_each_way": 0.0,
            "mbit": base,
            "ratio": 1.0,
            "linkem_cpu_pct": None,
            "runs_mbit": [r["mbit"] for r in runs["plain"]],
        }
    ]
    for dp, d in arms:
        arm = f"{dp}_{d:g}ms"
        m = med(arm, "mbit")
        rows.append(
            {
                "path": "linkem",
                "datapath": dp,
                "delay_ms_each_way": d,
                "mbit": m,
                "ratio": m / base if base else None,
                "linkem_cpu_pct": med(arm, "linkem_cpu_pct"),
                "runs_mbit": [r["mbit"] for r in runs[arm]],
            }
        )
    return {
        "streams": 4,
        "duration_s": duration_s,
        "reps": reps,
        "target": KERNEL_RATIO_TARGET,
        "loadavg_1min": load,
        "rows": rows,
    }


GIGABIT = LinkProfile(name="gigabit", rate_mbit=1000, delay_ms=25, buffer_bytes=6_250_000)
# the targets: >= 97% of the most possible, added RTT error <= 0.2 ms, linkem <= 1 core
GIGABIT_TARGETS = {"pct_of_most": 97.0, "rtt_added_err_ms": 0.2, "linkem_cpu_pct": 100.0}


def bench_gigabit(
    duration_s: float,
    rtt_count: int,
    plain_rtt: dict | None,
    datapath: str | None = None,
    profile: LinkProfile = GIGABIT,
) -> dict:
    """One TCP Cubic flow over 1 Gbit/s, 25 ms each way, a BDP (6.25 MB) buffer: goodput
    against the most possible, the idle path's RTT error (over the plain path's, when given),
    and linkem's CPU and late releases during the flow. `profile`: the same link with a
    queue discipline (`bench_disciplines`)."""
    with Testbed(profile, datapath=datapath) as tb, PathProbe(tb) as probe:
        ensure_tcp_buffers(tb)
        expected = expected_rtt_ms(GIGABIT, RTT_PROBE_SIZE + UDP_IP_OVERHEAD)
        r = probe.rtt(count=rtt_count, interval_ms=2, size=RTT_PROBE_SIZE)["rtt_ms"]
        before = settled_stats(tb)
        flow = _forward(tb, probe, duration_s, streams=1)
        after = settled_stats(tb)
        tb.check()
    most = most_tcp_goodput(GIGABIT.rate_mbit)
    late = sum(d.get("late_releases_over_1ms", 0) for d in after["directions"].values()) - sum(
        d.get("late_releases_over_1ms", 0) for d in before["directions"].values()
    )
    plain_mean = plain_rtt["mean"] if plain_rtt else 0.0
    pct, added = 100 * flow["mbit"] / most, r["mean"] - expected - plain_mean
    cpu = flow["linkem_cpu_pct"]
    missed = [
        name
        for name, bad in (
            ("goodput", pct < GIGABIT_TARGETS["pct_of_most"]),
            ("RTT", abs(added) > GIGABIT_TARGETS["rtt_added_err_ms"]),
            ("linkem CPU", cpu is not None and cpu > GIGABIT_TARGETS["linkem_cpu_pct"]),
        )
        if bad
    ]
    return {
        "datapath": tb.datapath,
        "rate_mbit": 1000,
        "delay_ms_each_way": 25,
        "buffer_bytes": GIGABIT.buffer_bytes,
        "duration_s": duration_s,
        "tcp_max_bytes": BIG_SOCKET_BUFFER,
        "most_possible_mbit": most,
        "goodput_mbit": flow["mbit"],
        "whole_mbit": flow["whole_mbit"],
        "pct_of_most": pct,
        "rtt_expected_ms": expected,
        "rtt_mean_err_ms": r["mean"] - expected,
        "rtt_added_err_ms": added,
        "rtt_sd_ms": r["sd"],
        "linkem_cpu_pct": cpu,
        "linkem_late_over_1ms": late,
        "targets": GIGABIT_TARGETS,
        "missed": missed,
    }


def bench_disciplines(
    duration_s: float, rtt_count: int, plain_rtt: dict | None, disciplines: tuple[str, ...], drop_tail: dict
) -> list[dict]:
    """The gigabit check behind each queue discipline (in both directions), beside drop-tail's
    (`drop_tail`, the plain check): linkem's CPU per Gbit/s forwarded, the discipline's cost.
    An AQM also changes what one Cubic flow gets (its early drops), so the cost is per Gbit/s
    forwarded, not per run."""
    from ..linkprofile import Aqm

    def row(name: str, g: dict) -> dict:
        cpu, gbit = g["linkem_cpu_pct"], g["goodput_mbit"] / 1000
        return {
            "discipline": name,
            "goodput_mbit": g["goodput_mbit"],
            "linkem_cpu_pct": cpu,
            "cpu_pct_per_gbit": None if cpu is None or gbit <= 0 else cpu / gbit,
            "linkem_late_over_1ms": g["linkem_late_over_1ms"],
        }

    rows = [row("drop-tail", drop_tail)]
    profiles = {"drop-tail": GIGABIT}
    for d in disciplines:
        profile = GIGABIT.model_copy(update={"name": f"gigabit-{d}", "aqm": Aqm(discipline=d)})
        profiles[d] = profile
        rows.append(row(d, bench_gigabit(duration_s, rtt_count, plain_rtt, profile=profile)))
    # the same offered load through every discipline: a paced UDP stream under the link's rate
    # builds no queue, so no AQM drops and each forwards the same packets; the CPU difference
    # is then the discipline's own per-packet work, which a Cubic flow (whose rate each AQM
    # changes) cannot show
    for r in rows:
        r.update(equal_load_cost(profiles[r["discipline"]], duration_s))
    for key, cost in (("cpu_pct_per_gbit", "cost_vs_drop_tail"), ("udp_cpu_pct_per_gbit", "udp_cost_vs_drop_tail")):
        base = rows[0][key]
        for r in rows:
            c = r[key]
            r[cost] = None if c is None or not base else c / base
    return rows


EQUAL_LOAD_MBIT = 500.0  # well under the link: no standing queue behind any discipline


def equal_load_cost(profile: LinkProfile, duration_s: float) -> dict:
    """linkem's CPU while a paced UDP stream of EQUAL_LOAD_MBIT crosses `profile` toward the
    client, per Gbit/s delivered."""
    with Testbed(profile) as tb, PathProbe(tb) as probe:
        pid = tb.linkem.pid if tb.linkem else None
        cpu0, t0 = (cpu_seconds(pid) if pid else None), time.monotonic()
        u = probe.udp("down", EQUAL_LOAD_MBIT, duration_s, size=IP_PACKET - UDP_IP_OVERHEAD, drain_ms=300)
        cpu1, t1 = (cpu_seconds(pid) if pid else None), time.monotonic()
        tb.check()
    cpu = None if cpu0 is None or cpu1 is None else 100 * (cpu1 - cpu0) / (t1 - t0)
    gbit = (u.get("rate_mbit") or 0) / 1000
    return {
        "udp_load_mbit": u.get("rate_mbit"),
        "udp_loss_rate": u.get("loss_rate"),
        "udp_linkem_cpu_pct": cpu,
        "udp_cpu_pct_per_gbit": None if cpu is None or not gbit > 0 else cpu / gbit,
    }


CEILING_RATES_MBIT = (100, 250, 500, 750, 1000, 1500, 2000)
CEILING_DELAY_MS = 20.0
TRACE_WAIT_MS = 1.0  # the longest wait for an opportunity on a constant trace of >= 12 Mbit/s


def constant_trace(path: Path, rate_mbit: float, period_ms: int = 1000) -> Path:
    """A mahimahi trace of `rate_mbit`: one 1500-byte opportunity per line, spread evenly."""
    per_ms = rate_mbit * 1e6 / 8 / IP_PACKET / 1000
    lines = []
    for t in range(1, period_ms + 1):
        lines += [str(t)] * (int(per_ms * t) - int(per_ms * (t - 1)))
    path.write_text("\n".join(lines) + "\n")
    return path


def _ceiling_profile(model: str, rate: float, trace_dir: Path) -> LinkProfile:
    bdp = int(rate * 1e6 / 8 * 2 * CEILING_DELAY_MS / 1e3)
    kind = (
        {"rate_mbit": rate}
        if model == "rate"
        else {"trace": str(constant_trace(trace_dir / f"const-{rate:g}.trace", rate))}
    )
    return LinkProfile(name=f"{model}-{rate:g}", delay_ms=CEILING_DELAY_MS, buffer_bytes=max(bdp, 30_000), **kind)


def within_tolerance(rows, tol: Tolerances, udp_sent_mbit: float | None = None) -> tuple[bool, str]:
    """The self-check's bands, applied to a trace too (the self-check leaves a trace's rate and
    RTT unjudged; a constant trace has one rate to meet): TCP goodput within [tcp_min,
    tcp_max] of the most possible, UDP delivered within udp_rate_rel of the rate, RTT median
    inside its band (a trace's widened by its opportunity waits). A UDP sender that could not
    reach the rate (`udp_sent_mbit` below it: the host's CPU, not the link) is judged on what
    it sent: all of it delivered."""
    failed = []
    for r in rows:
        if r.quantity.startswith("TCP goodput"):
            ok = tol.tcp_min * r.expected <= r.measured <= tol.tcp_max * r.expected
        elif r.quantity == "UDP delivered (IP)":
            target = min(r.expected, udp_sent_mbit) if udp_sent_mbit else r.expected
            ok = (1 - tol.udp_rate_rel) * target <= r.measured <= (1 + tol.udp_rate_rel) * r.expected
        elif r.quantity == "RTT median" and r.low is None and r.high is None and r.expected:
            # a trace's RTT (unjudged by the self-check): a probe may wait for the next
            # opportunity, at most 1 ms each way on a trace of >= 12 Mbit/s
            ok = abs(r.measured - r.expected) <= max(tol.rtt_abs_ms, tol.rtt_rel * r.expected) + 2 * TRACE_WAIT_MS
        else:
            ok = r.ok is not False
        if not ok:
            failed.append(f"{r.direction} {r.quantity} {r.measured:.4g} {r.unit} (expected {r.expected:.4g})")
    return not failed, "; ".join(failed)


def bench_ceiling(
    duration_s: float, rates: tuple[float, ...] = CEILING_RATES_MBIT, datapath: str | None = None
) -> list[dict]:
    """Per model, rates in increasing order until two in a row miss their tolerance (one miss
    may be the shared host's): each step's figures, linkem's CPU during its check, and the
    ceiling = the highest rate that passed."""
    tol = Tolerances()
    out = []
    with (
        tempfile.TemporaryDirectory(prefix="longlook-ceiling-") as tmp,
        Testbed(_ceiling_profile("rate", rates[0], Path(tmp)), datapath=datapath) as tb,
    ):
        for model in ("rate", "trace"):
            steps, misses = [], 0
            for rate in rates:
                profile = _ceiling_profile(model, rate, Path(tmp))
                tb.reconfigure(profile)
                ensure_tcp_buffers(tb)
                pid = tb.linkem.pid
                cpu0, t0 = cpu_seconds(pid), time.monotonic()
                res = check_link(
                    tb,
                    profile,
                    duration_s=duration_s,
                    rtt_count=500,
                    directions=("down",),
                    iperf=False,
                    include=("rtt", "rate"),
                )
                cpu = 100 * (cpu_seconds(pid) - cpu0) / (time.monotonic() - t0)
                sent = (res.raw.get("udp_down") or {}).get("send_rate_mbit")
                ok, why = within_tolerance(res.rows, tol, sent)
                by = {r.quantity: r.measured for r in res.rows}
                steps.append(
                    {
                        "rate_mbit": rate,
                        "ok": ok,
                        "why": why,
                        "linkem_cpu_pct": cpu,
                        "tcp_mbit": by.get("TCP goodput, probe"),
                        "udp_mbit": by.get("UDP delivered (IP)"),
                        "udp_sent_mbit": sent,
                        "rtt_median_ms": by.get("RTT median"),
                        "load_1min": os.getloadavg()[0],
                    }
                )
                misses = 0 if ok else misses + 1
                if misses >= 2:
                    break
            passed = [s for s in steps if s["ok"]]
            top = passed[-1] if passed else None
            out.append(
                {
                    "model": model,
                    "datapath": tb.datapath,
                    "delay_ms_each_way": CEILING_DELAY_MS,
                    "ceiling_mbit": top["rate_mbit"] if top else None,
                    "linkem_cpu_pct_at_ceiling": top["linkem_cpu_pct"] if top else None,
                    "tested_up_to_mbit": steps[-1]["rate_mbit"],
                    "steps": steps,
                }
            )
    return out


def run_bench(
    quick: bool = False, ceiling: bool = False, datapaths: tuple[str, ...] = (), disciplines: tuple[str, ...] = ()
) -> dict:
    """`datapaths`: linkem's datapaths to measure side by side in the kernel ratio and the
    gigabit check (empty: LONGLOOK_DATAPATH's, or the default); the rest runs on the first.
    `disciplines`: queue disciplines whose forwarding cost the gigabit check measures."""
    duration = 3.0 if quick else 6.0
    count = 1000 if quick else 3000
    load_before = os.getloadavg()
    baseline = bench_rtt_baseline(count)
    with Testbed(_profile("bench", 10, 40), datapath=datapaths[0] if datapaths else None) as tb, PathProbe(tb) as probe:
        others = [r.id for r in all_records() if r.id != tb.id and r.owner_alive()]
        result = {
            "tcp_goodput": bench_tcp(tb, probe, duration),
            "rtt_error": bench_rtt(tb, probe, count, baseline),
            "loss": bench_loss(tb, probe, duration),
            "max_forwarding": bench_max_rate(tb, probe, duration),
            "datapath": tb.datapath,  # of the sections above and the ceiling
        }
        tb.check()
    chosen = tuple(datapaths) or (None,)
    result["kernel_ratio"] = bench_kernel_ratio(4.0 if quick else 6.0, 2 if quick else 4, datapaths=chosen)
    checks = [bench_gigabit(6.0 if quick else 10.0, count, baseline[0.0]["all"], dp) for dp in chosen]
    result["gigabit"] = checks[0]
    if len(checks) > 1:
        result["gigabit_other_datapaths"] = checks[1:]
    if disciplines:
        result["disciplines"] = bench_disciplines(
            6.0 if quick else 10.0, count, baseline[0.0]["all"], disciplines, checks[0]
        )
    if ceiling:
        result["ceiling"] = bench_ceiling(3.0 if quick else 4.0, datapath=chosen[0])
    result["host"] = {
        "cpus": os.cpu_count(),
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
        "other_testbeds_running": others,
    }
    result["note"] = (
        "Figures include the host's scheduling noise (see host: load average, "
        "other testbeds). RTT errors are measured minus (delays + probe "
        "serialisation); linkem_late = releases over 1 ms late, by linkem's count (whole "
        "cell, probe start and exit included). Testbeds and linkem hold a CPU "
        "wake-up latency request (1 us by default: haltpoll only; LONGLOOK_CPU_LATENCY_US)."
    )
    return result


def print_bench(result: dict) -> None:
    from ..render.console import make_console

    c = make_console()
    print_table(
        "bulk TCP goodput (40 ms RTT, buffer 2 BDP, server -> client)",
        ["rate Mbit/s", "most possible", "probe", "% of most", "iperf3", "% of most"],
        [
            [
                r["rate_mbit"],
                r["most_possible_mbit"],
                r["probe_mbit"],
                r["probe_pct"],
                r["iperf3_mbit"],
                r["iperf3_pct"],
            ]
            for r in result["tcp_goodput"]
        ],
    )
    print_table(
        "RTT error, ms (measured - configured; 100 Mbit/s, no jitter; 'added' = over the plain-forwarding path)",
        [
            "RTT",
            "load Mbit/s",
            "mean err",
            "sd",
            "p99 err",
            "max err",
            "plain sd",
            "added mean",
            "added sd",
            "n",
            "linkem late",
        ],
        [
            [
                r["rtt_ms"],
                r["load_mbit"],
                r["mean_err_ms"],
                r["sd_ms"],
                r["p99_err_ms"],
                r["max_err_ms"],
                r["plain_sd_ms"],
                r["added_mean_err_ms"],
                r["added_sd_ms"],
                r["n"],
                r["linkem_late_over_1ms"],
            ]
            for r in result["rtt_error"]
        ],
    )
    print_table(
        "the same without the probes a machine stall overlapped (a SCHED_FIFO 90 thread per "
        "CPU woke > 0.3 ms late: the CPU ran nothing, so every process waited)",
        [
            "RTT",
            "load Mbit/s",
            "stalls",
            "longest ms",
            "probes hit",
            "mean err",
            "sd",
            "p99 err",
            "max err",
            "added mean",
            "added sd",
            "plain stalls",
        ],
        [
            [
                r["rtt_ms"],
                r["load_mbit"],
                r["stalls"],
                r["stall_max_ms"],
                r["probes_hit"],
                r["unstalled"]["mean_err_ms"],
                r["unstalled"]["sd_ms"],
                r["unstalled"]["p99_err_ms"],
                r["unstalled"]["max_err_ms"],
                r["unstalled"]["added_mean_err_ms"],
                r["unstalled"]["added_sd_ms"],
                r["plain_stalls"],
            ]
            for r in result["rtt_error"]
        ],
    )
    print_table(
        "random loss (50 Mbit/s, UDP at 25 Mbit/s)",
        ["configured", "dir", "sent", "lost", "measured", "99% low", "99% high", "inside"],
        [
            [
                r["configured"],
                r["direction"],
                r["sent"],
                r["lost"],
                r["measured"],
                r["ci99_low"],
                r["ci99_high"],
                r["inside"],
            ]
            for r in result["loss"]
        ],
    )
    m = result["max_forwarding"]
    print_table(
        "max forwarding (10 Gbit/s configured, 20 ms each way, iperf3 -P 4)",
        ["Mbit/s (median 1 s)", "Mbit/s (whole run)", "linkem CPU % of a core"],
        [[m["iperf3_mbit"], m["iperf3_whole_mbit"], m["linkem_cpu_pct_of_core"]]],
    )
    k = result["kernel_ratio"]
    print_table(
        f"kernel ratio: iperf3 -P {k['streams']} server -> client, linkem at 10 Gbit/s configured vs "
        f"plain kernel forwarding, same topology (median of {k['reps']} alternated runs of "
        f"{k['duration_s']:g} s; target >= {k['target']})",
        ["path", "datapath", "delay ms each way", "Mbit/s", "ratio to plain", "linkem CPU % of a core", "runs Mbit/s"],
        [
            [
                r["path"],
                r.get("datapath", "-"),
                r["delay_ms_each_way"],
                r["mbit"],
                r["ratio"],
                "-" if r["linkem_cpu_pct"] is None else r["linkem_cpu_pct"],
                " ".join(f"{x:.0f}" for x in r["runs_mbit"]),
            ]
            for r in k["rows"]
        ],
    )
    c.print("load average (1 min) during the ratio runs: " + " ".join(f"{x:.2f}" for x in k["loadavg_1min"]))
    checks = [result["gigabit"], *result.get("gigabit_other_datapaths", [])]
    print_table(
        "gigabit check: one TCP Cubic flow, 1 Gbit/s, 25 ms each way, BDP buffer 6.25 MB "
        "(targets: >= 97% of the most possible, added RTT error <= 0.2 ms, linkem <= 1 core)",
        [
            "datapath",
            "goodput Mbit/s",
            "most possible",
            "% of most",
            "whole run",
            "RTT err ms",
            "added RTT err ms",
            "RTT sd",
            "linkem CPU %",
            "linkem late",
            "missed",
        ],
        [
            [
                g.get("datapath", "-"),
                g["goodput_mbit"],
                g["most_possible_mbit"],
                g["pct_of_most"],
                g["whole_mbit"],
                g["rtt_mean_err_ms"],
                g["rtt_added_err_ms"],
                g["rtt_sd_ms"],
                g["linkem_cpu_pct"],
                g["linkem_late_over_1ms"],
                "-" if "missed" not in g else ", ".join(g["missed"]) or "none",
            ]
            for g in checks
        ],
    )
    if result.get("disciplines"):
        print_table(
            "queue disciplines: the gigabit check behind each (both directions); the cost is linkem's "
            "CPU per Gbit/s forwarded against drop-tail's",
            ["discipline", "goodput Mbit/s", "linkem CPU %", "CPU % per Gbit/s", "vs drop-tail", "linkem late"],
            [
                [
                    r["discipline"],
                    r["goodput_mbit"],
                    "-" if r["linkem_cpu_pct"] is None else r["linkem_cpu_pct"],
                    "-" if r["cpu_pct_per_gbit"] is None else r["cpu_pct_per_gbit"],
                    "-" if r["cost_vs_drop_tail"] is None else f"{r['cost_vs_drop_tail']:.3f}x",
                    r["linkem_late_over_1ms"],
                ]
                for r in result["disciplines"]
            ],
        )
        print_table(
            f"queue disciplines at one load: a paced UDP stream of {EQUAL_LOAD_MBIT:g} Mbit/s toward the client "
            "(no standing queue: every discipline forwards the same packets); linkem's CPU per Gbit/s delivered",
            ["discipline", "delivered Mbit/s", "loss", "linkem CPU %", "CPU % per Gbit/s", "vs drop-tail"],
            [
                [
                    r["discipline"],
                    "-" if r.get("udp_load_mbit") is None else r["udp_load_mbit"],
                    "-" if r.get("udp_loss_rate") is None else f"{r['udp_loss_rate']:.4f}",
                    "-" if r.get("udp_linkem_cpu_pct") is None else r["udp_linkem_cpu_pct"],
                    "-" if r.get("udp_cpu_pct_per_gbit") is None else r["udp_cpu_pct_per_gbit"],
                    "-" if r.get("udp_cost_vs_drop_tail") is None else f"{r['udp_cost_vs_drop_tail']:.3f}x",
                ]
                for r in result["disciplines"]
            ],
        )
    for m in result.get("ceiling", []):
        print_table(
            f"ceiling, {m['model']} model, {m.get('datapath', '-')}, "
            f"{m['delay_ms_each_way']:g} ms each way, BDP buffer: "
            f"{m['ceiling_mbit'] or 'none'} Mbit/s (linkem CPU there "
            + ("-" if m["linkem_cpu_pct_at_ceiling"] is None else f"{m['linkem_cpu_pct_at_ceiling']:.0f}%")
            + ")",
            [
                "rate Mbit/s",
                "in tolerance",
                "TCP Mbit/s",
                "UDP Mbit/s",
                "UDP sent",
                "RTT median ms",
                "linkem CPU %",
                "load",
                "miss",
            ],
            [
                [
                    s["rate_mbit"],
                    s["ok"],
                    s["tcp_mbit"],
                    s["udp_mbit"],
                    s["udp_sent_mbit"],
                    s["rtt_median_ms"],
                    s["linkem_cpu_pct"],
                    s["load_1min"],
                    s["why"],
                ]
                for s in m["steps"]
            ],
        )
    h = result["host"]
    if result.get("datapath"):
        c.print(f"linkem's datapath (rate, RTT, loss, max forwarding, ceiling): {result['datapath']}")
    c.print(
        f"host: {h['cpus']} CPUs, load average {h['loadavg_before'][0]:.2f} before, "
        f"{h['loadavg_after'][0]:.2f} after; other testbeds running: "
        f"{', '.join(h['other_testbeds_running']) or 'none'}"
    )
    c.print(result["note"])
