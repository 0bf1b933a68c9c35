"""`longlook bench link`: how closely linkem delivers what it is configured to.

Figures (the targets of the link-emulation issue):
- bulk TCP goodput at 5, 10, 50, 100 Mbit/s as % of the most TCP can carry (1448/1500);
- added RTT error (mean, sd, p99, max) for 10, 50, 150 ms RTT, idle and at 50% load, over
  all probes and over the probes no machine stall overlapped (stalls measured alongside);
- measured loss for 1% and 2% configured, with the 99% binomial interval;
- the most linkem forwards (10 Gbit/s configured, 20 ms each way, iperf3 with 4 streams)
  and the CPU it uses doing so.
All on one 2-vCPU machine: a busy host shows up as noise in these figures.
"""

from __future__ import annotations

import os
import time

import numpy as np

from ..linkprofile import LinkProfile
from ..testbed import Testbed
from ..testbed.linkcheck import binomial_interval, expected_rtt_ms, most_tcp_goodput, RTT_PROBE_SIZE, UDP_IP_OVERHEAD
from ..testbed.ownership import all_records
from ..testbed.probe import PathProbe, iperf3_receiver_mbit, steady_goodput_mbit
from ..testbed.processes import cpu_seconds
from ..testbed.stalls import StallMonitor, probes_hit, stalls_within
from .measure import settled_stats
from .row import print_table


def _profile(name: str, rate_mbit: float, rtt_ms: float, buffer_bytes: int | None = None,
             loss: float = 0.0) -> LinkProfile:
    bdp = int(rate_mbit * 1e6 / 8 * rtt_ms / 1e3)
    return LinkProfile(name=name, rate_mbit=rate_mbit, delay_ms=rtt_ms / 2, loss=loss,
                       buffer_bytes=buffer_bytes or max(2 * bdp, 30_000))


def bench_tcp(tb: Testbed, probe: PathProbe, duration_s: float) -> list[dict]:
    rows = []
    for rate in (5, 10, 50, 100):
        p = _profile(f"tcp-{rate}", rate, 40)
        tb.reconfigure(p)
        t = probe.tcp("down", duration_s)
        i = probe.iperf3("down", duration_s)
        most = most_tcp_goodput(rate)
        steady = steady_goodput_mbit(t, 1.0)
        rows.append({"rate_mbit": rate, "rtt_ms": 40, "most_possible_mbit": most,
                     "probe_mbit": steady, "probe_pct": 100 * steady / most,
                     "iperf3_mbit": iperf3_receiver_mbit(i, "down"),
                     "iperf3_pct": 100 * iperf3_receiver_mbit(i, "down") / most})
    return rows


RTT_LOAD_MBIT = 50.0  # "50% load" of the 100 Mbit/s RTT-bench link


def _summary(x: np.ndarray) -> dict:
    return {"n": int(x.size), "mean": float(x.mean()), "sd": float(x.std(ddof=1)),
            "p99": float(np.percentile(x, 99)), "max": float(x.max())}


def measure_rtt(probe: PathProbe, count: int, load_mbit: float) -> dict:
    """RTT probes with the machine-stall monitor running: the raw summary of every probe,
    and the summary of the probes no machine stall overlapped (see testbed/stalls.py)."""
    with StallMonitor() as monitor:
        r = probe.rtt(count=count, interval_ms=2, size=RTT_PROBE_SIZE, load_mbit=load_mbit, samples=True)
    rtt = np.asarray(r["samples_ms"], dtype=float)
    sent = np.asarray(r["sent_mono_ms"], dtype=float)
    hit = np.asarray(probes_hit(list(sent), list(rtt), monitor.stalls), dtype=bool)
    during = stalls_within(monitor.stalls, float(sent.min()), float((sent + rtt).max()))
    return {"all": _summary(rtt), "unstalled": _summary(rtt[~hit]), "probes_hit": int(hit.sum()),
            "stalls": len(during), "stall_max_ms": max((s.late_ms for s in during), default=0.0),
            "stall_total_ms": sum(s.late_ms for s in during)}


def bench_rtt_baseline(count: int) -> dict[float, dict]:
    """The same probes over the same topology with plain kernel forwarding and no linkem:
    the RTT and jitter the host itself adds (veths, namespaces, scheduling). What linkem adds
    is measured against this, per load level."""
    with Testbed(None) as plain, PathProbe(plain) as probe:
        return {load: measure_rtt(probe, count, load) for load in (0.0, RTT_LOAD_MBIT)}


def _errors(m: dict, expected: float, base: dict) -> dict:
    """Raw error (measured - configured) and the error linkem adds over the plain path:
    mean minus the plain path's mean, sd as sqrt(sd^2 - sd_plain^2) (independent noise)."""
    return {"mean_err_ms": m["mean"] - expected, "sd_ms": m["sd"], "p99_err_ms": m["p99"] - expected,
            "max_err_ms": m["max"] - expected, "plain_mean_ms": base["mean"], "plain_sd_ms": base["sd"],
            "added_mean_err_ms": m["mean"] - expected - base["mean"],
            "added_sd_ms": max(0.0, m["sd"] ** 2 - base["sd"] ** 2) ** 0.5, "n": m["n"]}


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
            late = sum(d.get("late_releases_over_1ms", 0)
                       for d in settled_stats(tb)["directions"].values())
            rows.append({"rtt_ms": rtt, "load_mbit": load, "expected_ms": expected,
                         **_errors(m["all"], expected, base["all"]),
                         "unstalled": _errors(m["unstalled"], expected, base["unstalled"]),
                         "probes_hit": m["probes_hit"], "stalls": m["stalls"],
                         "stall_max_ms": m["stall_max_ms"], "stall_total_ms": m["stall_total_ms"],
                         "plain_stalls": base["stalls"], "linkem_late_over_1ms": late})
    return rows


def bench_loss(tb: Testbed, probe: PathProbe, duration_s: float) -> list[dict]:
    rows = []
    for loss in (0.01, 0.02):
        tb.reconfigure(_profile(f"loss-{loss}", 50, 20, loss=loss))
        for which in ("up", "down"):
            u = probe.udp(which, 25, duration_s, size=284, drain_ms=600)  # 312-byte IP, 10k pps
            lo, hi = binomial_interval(u["lost"], u["sent"], 0.99)
            rows.append({"configured": loss, "direction": which, "sent": u["sent"],
                         "lost": u["lost"], "measured": u["lost"] / u["sent"],
                         "ci99_low": lo, "ci99_high": hi, "inside": lo <= loss <= hi})
    return rows


def bench_max_rate(tb: Testbed, probe: PathProbe, duration_s: float) -> dict:
    tb.reconfigure(LinkProfile(name="max", rate_mbit=10_000, delay_ms=20, buffer_bytes=20_000_000))
    pid = tb.linkem.pid
    cpu0, t0 = cpu_seconds(pid), time.monotonic()
    i = probe.iperf3("down", duration_s, streams=4)
    cpu1, t1 = cpu_seconds(pid), time.monotonic()
    return {"configured_mbit": 10_000, "delay_ms_each_way": 20, "streams": 4,
            "iperf3_mbit": iperf3_receiver_mbit(i, "down"),
            "iperf3_whole_mbit": i["end"]["sum_received"]["bits_per_second"] / 1e6,
            "linkem_cpu_pct_of_core": 100 * (cpu1 - cpu0) / (t1 - t0)}


def run_bench(quick: bool = False) -> dict:
    duration = 3.0 if quick else 6.0
    count = 1000 if quick else 3000
    load_before = os.getloadavg()
    baseline = bench_rtt_baseline(count)
    with Testbed(_profile("bench", 10, 40)) as tb, PathProbe(tb) as probe:
        others = [r.id for r in all_records() if r.id != tb.id and r.owner_alive()]
        result = {
            "tcp_goodput": bench_tcp(tb, probe, duration),
            "rtt_error": bench_rtt(tb, probe, count, baseline),
            "loss": bench_loss(tb, probe, duration),
            "max_forwarding": bench_max_rate(tb, probe, duration),
        }
        tb.check()
    result["host"] = {"cpus": os.cpu_count(), "loadavg_before": load_before,
                      "loadavg_after": os.getloadavg(), "other_testbeds_running": others}
    result["note"] = ("Figures include the host's scheduling noise (see host: load average, "
                      "other testbeds). RTT errors are measured minus (delays + probe "
                      "serialisation); linkem_late = releases over 1 ms late, by linkem's count (whole "
                      "cell, probe start and exit included). Testbeds and linkem hold a CPU "
                      "wake-up latency request (1 us by default: haltpoll only; LONGLOOK_CPU_LATENCY_US).")
    return result


def print_bench(result: dict) -> None:
    from rich.console import Console

    c = Console()
    print_table("bulk TCP goodput (40 ms RTT, buffer 2 BDP, server -> client)",
                ["rate Mbit/s", "most possible", "probe", "% of most", "iperf3", "% of most"],
                [[r["rate_mbit"], r["most_possible_mbit"], r["probe_mbit"], r["probe_pct"],
                  r["iperf3_mbit"], r["iperf3_pct"]] for r in result["tcp_goodput"]])
    print_table("RTT error, ms (measured - configured; 100 Mbit/s, no jitter; 'added' = over the "
                "plain-forwarding path)",
                ["RTT", "load Mbit/s", "mean err", "sd", "p99 err", "max err", "plain sd",
                 "added mean", "added sd", "n", "linkem late"],
                [[r["rtt_ms"], r["load_mbit"], r["mean_err_ms"], r["sd_ms"], r["p99_err_ms"],
                  r["max_err_ms"], r["plain_sd_ms"], r["added_mean_err_ms"], r["added_sd_ms"], r["n"],
                  r["linkem_late_over_1ms"]] for r in result["rtt_error"]])
    print_table("the same without the probes a machine stall overlapped (a SCHED_FIFO 90 thread per "
                "CPU woke > 0.3 ms late: the CPU ran nothing, so every process waited)",
                ["RTT", "load Mbit/s", "stalls", "longest ms", "probes hit", "mean err", "sd",
                 "p99 err", "max err", "added mean", "added sd", "plain stalls"],
                [[r["rtt_ms"], r["load_mbit"], r["stalls"], r["stall_max_ms"], r["probes_hit"],
                  r["unstalled"]["mean_err_ms"], r["unstalled"]["sd_ms"], r["unstalled"]["p99_err_ms"],
                  r["unstalled"]["max_err_ms"], r["unstalled"]["added_mean_err_ms"],
                  r["unstalled"]["added_sd_ms"], r["plain_stalls"]] for r in result["rtt_error"]])
    print_table("random loss (50 Mbit/s, UDP at 25 Mbit/s)",
                ["configured", "dir", "sent", "lost", "measured", "99% low", "99% high", "inside"],
                [[r["configured"], r["direction"], r["sent"], r["lost"], r["measured"],
                  r["ci99_low"], r["ci99_high"], r["inside"]] for r in result["loss"]])
    m = result["max_forwarding"]
    print_table("max forwarding (10 Gbit/s configured, 20 ms each way, iperf3 -P 4)",
                ["Mbit/s (median 1 s)", "Mbit/s (whole run)", "linkem CPU % of a core"],
                [[m["iperf3_mbit"], m["iperf3_whole_mbit"], m["linkem_cpu_pct_of_core"]]])
    h = result["host"]
    c.print(f"host: {h['cpus']} CPUs, load average {h['loadavg_before'][0]:.2f} before, "
            f"{h['loadavg_after'][0]:.2f} after; other testbeds running: "
            f"{', '.join(h['other_testbeds_running']) or 'none'}")
    c.print(result["note"])
