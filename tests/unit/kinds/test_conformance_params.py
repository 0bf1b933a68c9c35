"""The conformance kind's parameter extractors (kinds/conformance/params) on recorded
server logs (tests/data/conformance: real runs, trimmed by trim.py there) and on synthetic
logs where no real one shows the case (a Cubic growth in its cubic region, a paced sender,
a receiver that acks every tenth packet, a persistent-congestion collapse)."""

from __future__ import annotations


import numpy as np
import pytest

from longlook.kinds.conformance.params import (
    CONFORMS,
    DEVIATES,
    NOT_MEASURABLE,
    ParamResult,
    ack_frequency,
    all_parameters,
    cubic_growth,
    datagram_size,
    from_qlog,
    initial_window,
    multiplicative_decrease,
    pacing,
    read_trace,
    slow_start_exit,
)
from longlook.kinds.conformance.params.initial_window import reference_bytes
from longlook.kinds.conformance.params.slow_start import eta_ms
from longlook.qlog import qlog_from_events
import repo_paths

DATA = repo_paths.DATA / "conformance"


def fixture(name: str):
    return read_trace(DATA / f"{name}.sqlog.gz")


# ---- the specification's figures -----------------------------------------------------------


def test_initial_window_reference_follows_rfc9002_and_rfc6928():
    assert reference_bytes(1200) == 12000
    assert reference_bytes(1472) == 14720  # max(14720, 2944) < 14720: 14720
    assert reference_bytes(1500) == 14720
    assert reference_bytes(9000) == 18000  # jumbo: 2 x max_datagram
    assert reference_bytes(1448, tcp=True) == 14480
    assert reference_bytes(1460, tcp=True) == 14600


def test_hystart_eta_is_clamped_between_4_and_16_ms():
    assert eta_ms(10) == 4 and eta_ms(80) == 10 and eta_ms(400) == 16


def test_a_verdict_outside_the_three_is_refused():
    with pytest.raises(ValueError, match="verdict"):
        ParamResult("x", 1.0, 1.0, "u", "fine", "")


# ---- recorded logs ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, measured, verdict",
    [
        ("ours-cubic", 12000, CONFORMS),  # quinn: 10 x 1200
        ("kernel-cubic.tcp", 14480, CONFORMS),  # Linux: 10 x MSS 1448
        ("quiche-cubic", 13500, CONFORMS),  # 10 x its 1350-byte datagrams
        ("ngtcp2-cubic", 14520, CONFORMS),
        ("aioquic-cubic", 12000, CONFORMS),
        ("tquic-cubic", 38400, DEVIATES),  # 32 x 1200
        ("quic-go-newreno", 40960, DEVIATES),  # 32 x 1280
    ],
)
def test_initial_window_of_recorded_logs(name, measured, verdict):
    r = initial_window(fixture(name))
    assert (r.measured, r.verdict, r.unit) == (measured, verdict, "bytes")


@pytest.mark.parametrize(
    "name, cc, verdict",
    [
        ("ours-cubic", "cubic", CONFORMS),
        ("kernel-cubic.tcp", "cubic", CONFORMS),
        ("quiche-cubic", "cubic", CONFORMS),
        ("ngtcp2-cubic", "cubic", CONFORMS),
        ("tquic-cubic", "cubic", CONFORMS),
        ("aioquic-cubic", "cubic", CONFORMS),
        # quic-go's "Reno" backs off by 0.7 (its renoBeta), not Reno's 0.5
        ("quic-go-newreno", "newreno", DEVIATES),
    ],
)
def test_multiplicative_decrease_of_recorded_logs(name, cc, verdict):
    r = multiplicative_decrease(fixture(name), cc)
    assert r.verdict == verdict
    assert r.measured == pytest.approx(0.7, abs=0.04)


def test_kernel_tcp_log_has_no_packets_so_pacing_and_acks_are_not_measurable():
    tr = fixture("kernel-cubic.tcp")
    assert tr.is_tcp and tr.mss == 1448
    assert pacing(tr).verdict == NOT_MEASURABLE
    assert ack_frequency(tr).verdict == NOT_MEASURABLE
    d = datagram_size(tr)
    assert (d.measured, d.verdict) == (1448, CONFORMS)


def test_datagram_sizes_of_recorded_logs():
    got = {
        n: datagram_size(fixture(n)).measured for n in ("ours-cubic", "quiche-cubic", "tquic-cubic", "aioquic-cubic")
    }
    assert got == {"ours-cubic": 1452, "quiche-cubic": 1350, "tquic-cubic": 1472, "aioquic-cubic": 1200}


def test_ack_frequency_from_ack_frames_and_without_them():
    quiche = ack_frequency(fixture("quiche-cubic"))
    assert quiche.verdict == CONFORMS and 1.0 <= quiche.measured <= 2.0 and "ACK frame" in quiche.note
    ours = ack_frequency(fixture("ours-cubic"))  # our log lists no frames: every packet received counts
    assert "no frames" in ours.note and ours.measured == pytest.approx(2.55, abs=0.05)


def test_slow_start_exit_of_recorded_logs():
    ours = slow_start_exit(fixture("ours-cubic"))  # a loss at a 4 ms rise on a shallow buffer
    assert ours.verdict == CONFORMS and ours.measured < ours.reference + 1
    tquic = slow_start_exit(fixture("tquic-cubic"))  # left only after the RTT rose by 22 ms
    assert tquic.verdict == DEVIATES and tquic.measured > 15
    assert slow_start_exit(fixture("quic-go-newreno")).verdict == NOT_MEASURABLE  # never left it


def test_every_recorded_log_yields_every_parameter():
    for path in sorted(DATA.glob("*.sqlog.gz")):
        rows = all_parameters(read_trace(path), "cubic")
        assert len({r.parameter for r in rows}) == 7
        assert all(r.verdict in (CONFORMS, DEVIATES, NOT_MEASURABLE) for r in rows)


# ---- synthetic logs -----------------------------------------------------------------------


def _metrics(t_ms, cwnd, ssthresh=None, srtt=40.0, latest=None, min_rtt=40.0):
    d = {"congestion_window": cwnd, "smoothed_rtt": srtt, "min_rtt": min_rtt, "latest_rtt": latest or srtt}
    if ssthresh is not None:
        d["ssthresh"] = ssthresh
    return {"time": t_ms, "name": "recovery:metrics_updated", "data": d}


def cubic_epoch_log(
    c: float, seg: int = 1200, w_max_seg: float = 400.0, beta: float = 0.7, rtt_ms: float = 40.0, seconds: float = 8.0
) -> list[dict]:
    """A window cut from W_max by beta at t = 1 s, then growing per RFC 9438 with constant C."""
    ev = [_metrics(0.0, 12000, srtt=rtt_ms), _metrics(900.0, w_max_seg * seg, srtt=rtt_ms)]
    w_cut = beta * w_max_seg
    k = np.cbrt((w_max_seg - w_cut) / c)
    ev.append(_metrics(1000.0, w_cut * seg, ssthresh=w_cut * seg, srtt=rtt_ms))
    for t in np.arange(rtt_ms, seconds * 1000, rtt_ms):
        w = c * (t / 1000 - k) ** 3 + w_max_seg
        ev.append(_metrics(1000.0 + t, round(w) * seg, ssthresh=w_cut * seg, srtt=rtt_ms))
    ev.append({"time": 0.0, "name": "longlook:congestion_control", "data": {"mtu": seg}})
    return sorted(ev, key=lambda e: e["time"])


def trace_of(events, protocol="QUIC"):
    return from_qlog(qlog_from_events(events, protocol))


def test_cubic_growth_with_c_04_conforms_and_with_c_08_deviates():
    good = cubic_growth(trace_of(cubic_epoch_log(0.4)), "cubic")
    assert good.verdict == CONFORMS and good.measured == pytest.approx(0.4, rel=0.1)
    fast = cubic_growth(trace_of(cubic_epoch_log(0.8)), "cubic")
    assert fast.verdict == DEVIATES and fast.measured == pytest.approx(0.8, rel=0.1)


def test_cubic_growth_in_the_reno_friendly_region_is_not_measurable():
    # a small window at a long RTT: Reno's estimate outgrows the cubic
    r = cubic_growth(trace_of(cubic_epoch_log(0.4, w_max_seg=20, rtt_ms=5, seconds=3)), "cubic")
    assert r.verdict == NOT_MEASURABLE
    assert cubic_growth(trace_of(cubic_epoch_log(0.4)), "bbr").verdict == NOT_MEASURABLE


def test_reno_halving_conforms_to_reno_and_deviates_from_cubic():
    ev = cubic_epoch_log(0.4, beta=0.5)
    assert multiplicative_decrease(trace_of(ev), "reno").verdict == CONFORMS
    r = multiplicative_decrease(trace_of(ev), "cubic")
    assert (r.verdict, r.measured, r.reference) == (DEVIATES, 0.5, 0.7)


def test_no_loss_and_a_collapse_to_the_minimum_are_not_a_decrease():
    no_loss = [_metrics(t, 12000 + t * 100) for t in range(0, 1000, 40)]
    assert multiplicative_decrease(trace_of(no_loss), "cubic").verdict == NOT_MEASURABLE
    collapse = no_loss + [_metrics(1040, 2400)]  # persistent congestion: the minimum window
    assert multiplicative_decrease(trace_of(collapse), "cubic").verdict == NOT_MEASURABLE


def test_a_hundred_packet_initial_window_deviates():
    ev = [
        {"time": 0.0, "name": "longlook:congestion_control", "data": {"mtu": 1200, "initial_window_bytes": 120000}},
        _metrics(0.0, 120000),
    ]
    r = initial_window(trace_of(ev))
    assert (r.measured, r.reference, r.verdict) == (120000, 12000, DEVIATES)


def _sent(t, size=1400):
    return {
        "time": t,
        "name": "transport:packet_sent",
        "data": {"header": {"packet_type": "1RTT"}, "raw": {"length": size}, "frames": [{"frame_type": "stream"}]},
    }


def _ack(t):
    return {
        "time": t,
        "name": "transport:packet_received",
        "data": {"header": {"packet_type": "1RTT"}, "raw": {"length": 40}, "frames": [{"frame_type": "ack"}]},
    }


def test_pacing_paced_sender_conforms_and_bursts_deviate():
    # cwnd 100 x 1400 over 40 ms at N = 1.25: a paced gap of 0.32 ms
    base = [_metrics(0.0, 140000)]
    paced = base + [_sent(50 + i * 0.32) for i in range(400)]
    assert pacing(trace_of(paced)).verdict == CONFORMS
    bursty = base + [_sent(50 + (i // 40) * 12.8 + (i % 40) * 0.001) for i in range(400)]  # 40 at once
    r = pacing(trace_of(bursty))
    assert r.verdict == DEVIATES and r.measured == pytest.approx(40, abs=1)


def test_ack_every_second_packet_conforms_every_tenth_deviates():
    two = [_metrics(0.0, 140000)] + [_sent(i) for i in range(200)] + [_ack(i + 0.5) for i in range(1, 200, 2)]
    assert ack_frequency(trace_of(two)).measured == pytest.approx(2.0, abs=0.05)
    ten = [_metrics(0.0, 140000)] + [_sent(i) for i in range(200)] + [_ack(i + 0.5) for i in range(9, 200, 10)]
    r = ack_frequency(trace_of(ten))
    assert r.verdict == DEVIATES and r.measured == pytest.approx(10, abs=0.5)


def test_slow_start_exit_by_delay_conforms_by_a_filled_deep_buffer_deviates():
    def log(rise_at_exit):
        ev = [{"time": 0.0, "name": "recovery:congestion_state_updated", "data": {"old": "Init", "new": "SlowStart"}}]
        ev += [_metrics(t, 12000 * 2 ** (t / 40), latest=40 + rise_at_exit * t / 400) for t in range(0, 401, 10)]
        ev.append(
            {
                "time": 401.0,
                "name": "recovery:congestion_state_updated",
                "data": {"old": "SlowStart", "new": "CongestionAvoidance", "trigger": "delay"},
            }
        )
        return ev

    assert slow_start_exit(trace_of(log(5.0))).verdict == CONFORMS  # eta = 5 ms at 40 ms
    r = slow_start_exit(trace_of(log(60.0)))
    assert r.verdict == DEVIATES and r.measured == pytest.approx(60, abs=1)


def test_bbr_has_no_hystart_exit_to_judge():
    r = slow_start_exit(fixture("ours-cubic"), "bbr")
    assert r.verdict == NOT_MEASURABLE and "Startup" in r.note


def _quic_start(sizes: list[float], cwnd: float):
    """A QUIC sender whose first 1-RTT packets have `sizes` and whose first window is `cwnd`."""
    import numpy as np
    import pandas as pd

    from longlook.kinds.conformance.params.trace import ConnTrace

    sent = pd.DataFrame(
        {"t_ms": np.arange(len(sizes), dtype=float), "size": sizes, "packet_type": "1rtt", "ack_eliciting": True}
    )
    metrics = pd.DataFrame({"t_ms": [0.0], "cwnd": [cwnd]})
    return ConnTrace(
        "QUIC",
        metrics,
        pd.DataFrame(columns=["t_ms", "old", "new", "trigger"]),
        np.array([]),
        sent,
        pd.DataFrame(columns=["t_ms", "size", "packet_type", "has_ack"]),
    )


def test_a_path_mtu_probe_in_the_first_flight_is_not_taken_for_the_senders_datagram_size():
    # s2n-quic: ten 1200-byte data packets and one 1472-byte probe; its window is 10 x 1200
    r = initial_window(_quic_start([1200.0] * 5 + [1472.0] + [1200.0] * 5, 12000.0))
    assert (r.reference, r.verdict) == (12000.0, CONFORMS) and "max datagram 1200 B" in r.note
    # a window of 32 packets deviates whichever of its sizes it meant
    r = initial_window(_quic_start([1200.0] * 5 + [1472.0] + [1200.0] * 5, 32 * 1200.0))
    assert r.verdict == DEVIATES
