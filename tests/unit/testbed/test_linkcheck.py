"""The link self-check's arithmetic, without a testbed. Real links measured:
tests/testbed/testbed/test_linkcheck_testbed.py."""

import math

import pytest

from longlook.testbed.linkcheck import (
    LinkCheckResult,
    binomial_interval,
    expected_rtt_ms,
    expected_rtt_sd_ms,
    loss_consistent,
    most_tcp_goodput,
)
from longlook.linkprofile import LinkProfile


def test_binomial_interval_contains_truth():
    lo, hi = binomial_interval(200, 10_000, 0.99)
    assert lo < 0.02 < hi
    assert hi - lo < 0.01
    assert loss_consistent(200, 10_000, 0.02)
    assert not loss_consistent(200, 10_000, 0.01)
    assert loss_consistent(0, 10_000, 0.0)  # no loss measured, none configured


def test_binomial_interval_is_exact_clopper_pearson():
    # Clopper-Pearson by definition: quantiles of Beta(k, n-k+1) and Beta(k+1, n-k).
    from scipy.stats import beta

    lo, hi = binomial_interval(5, 100, 0.99)
    assert lo == pytest.approx(beta.ppf(0.005, 5, 96), rel=1e-9)
    assert hi == pytest.approx(beta.ppf(0.995, 6, 95), rel=1e-9)


def test_most_tcp_goodput_counts_headers():
    assert most_tcp_goodput(100) == pytest.approx(96.533, abs=1e-3)  # 1448 / 1500


def test_expected_rtt_includes_probe_serialisation():
    p = LinkProfile(rate_mbit=10, delay_ms=10, up={"rate_mbit": 1})
    # 92-byte IP probe: 0.736 ms at 1 Mbit/s up, 0.0736 ms at 10 Mbit/s down.
    assert expected_rtt_ms(p, 92) == pytest.approx(20 + 0.736 + 0.0736)


def test_expected_rtt_sd():
    assert expected_rtt_sd_ms(LinkProfile(rate_mbit=10, jitter_ms=2)) == pytest.approx(1.633, abs=1e-3)
    assert expected_rtt_sd_ms(LinkProfile(rate_mbit=10, jitter_ms=2, jitter_distribution="normal")) == pytest.approx(
        2.828, abs=1e-3
    )


def test_failed_check_raises_with_the_measured_error():
    from longlook.errors import LonglookError
    from longlook.testbed.linkcheck import LinkCheckResult, Row

    r = LinkCheckResult("p", [Row("up", "UDP delivered (IP)", "Mbit/s", 8.0, 10.0, 9.7, 10.3)])
    assert not r.ok
    with pytest.raises(LonglookError, match="up UDP delivered .*measured 8 Mbit/s"):
        r.raise_if_failed()


def test_a_slow_reverse_direction_caps_tcp_by_its_acks():
    from longlook.testbed.linkcheck import ack_limited_goodput

    # 0.1 Mbit/s of 52-byte ACKs, one per two 1448-byte segments: about 5.6 Mbit/s of goodput
    assert ack_limited_goodput(0.1) == pytest.approx(5.57, abs=0.01)


def test_tcp_is_judged_only_where_one_cubic_flow_can_fill_the_link(tmp_path):
    """A reordering path makes Cubic retransmit packets that were only overtaken and cut its
    window (a probe on Cubic got 16.8 of 19.3 Mbit/s through 2% of packets 10 ms early):
    TCP's reaction, not the link's rate, so the check does not judge it, as with loss."""
    from longlook.testbed.linkcheck import tcp_expectation

    base = dict(rate_mbit=20, delay_ms=18, buffer_bytes=150_000)
    most, why_not = tcp_expectation(LinkProfile(**base), "down", tmp_path)
    assert why_not == "" and most == pytest.approx(most_tcp_goodput(20))
    reordering = LinkProfile(**base, down={"reorder": {"probability": 0.02, "ahead_ms": 10.0}})
    assert tcp_expectation(reordering, "down", tmp_path)[1] == "reordering configured"
    assert tcp_expectation(reordering, "up", tmp_path)[1] == ""  # the up data path is in order
    assert tcp_expectation(LinkProfile(**base, loss=0.01), "down", tmp_path)[1] == "loss configured"
    assert tcp_expectation(LinkProfile(rate_mbit=20, delay_ms=18, buffer_bytes=10_000), "down", tmp_path)[1].startswith(
        "buffer 10000 B < BDP"
    )


def test_receiver_drops_read_from_the_namespace_s_udp_counters():
    from longlook.testbed.probe import receiver_drops, udp_snmp

    text = (
        "Ip: Forwarding DefaultTTL\nIp: 1 64\n"
        "Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors\nUdp: 100 0 3 5 3\n"
        "UdpLite: InDatagrams NoPorts InErrors\nUdpLite: 0 0 9\n"
    )
    before = udp_snmp(text)
    assert before == {"InDatagrams": 100, "NoPorts": 0, "InErrors": 3, "OutDatagrams": 5, "RcvbufErrors": 3}
    after = udp_snmp(text.replace("Udp: 100 0 3 5 3", "Udp: 900 0 40 5 40"))
    assert receiver_drops(before, after) == 37
    assert receiver_drops({}, after) is None


def test_a_quick_self_check_leaves_out_iperf3_and_most_rtt_probes_and_says_so(monkeypatch):
    from longlook.testbed import queue_check

    asked = {}

    def fake_check_link(tb, profile, **options):
        asked.update(options)  # what the real check records of its depth
        return LinkCheckResult(profile.name, [], {"rtt_probes": options["rtt_count"], "iperf3": options["iperf"]})

    monkeypatch.setattr(queue_check, "check_link", fake_check_link)
    profile = LinkProfile(name="p", rate_mbit=10, delay_ms=10)

    class Running:  # a testbed already running the profile: nothing to reconfigure
        pass

    tb = Running()
    tb.profile = profile
    full = queue_check.self_check(tb, profile, duration_s=2.0)
    assert (asked["rtt_count"], asked["iperf"]) == (2000, True) and "quick" not in full.summary()
    quick = queue_check.self_check(tb, profile, duration_s=2.0, depth="quick")
    assert (asked["rtt_count"], asked["iperf"]) == (500, False)
    assert quick.summary() == "link 'p' is within tolerance (a quick check: no iperf3, 500 RTT probes)"


def test_the_tcp_rate_test_waits_out_slow_start_on_a_long_path_only(tmp_path):
    from longlook.testbed.linkcheck import tcp_window

    usual = LinkProfile(rate_mbit=50, delay_ms=18)
    assert tcp_window(usual, "down", 2.0, tmp_path) == pytest.approx((2 / 3, 2.0))
    fig8b = LinkProfile(rate_mbit=10, delay_ms=56)
    assert tcp_window(fig8b, "down", 2.0, tmp_path) == pytest.approx((2 / 3, 2.0))
    # 300 ms at 20 Mbit/s: a BDP of 500 packets, ~5.6 doublings from 10, two RTTs to settle
    far = LinkProfile(rate_mbit=20, delay_ms=150)
    warmup, length = tcp_window(far, "down", 2.0, tmp_path)
    assert warmup == pytest.approx(0.3 * (math.log2(20e6 / 8 * 0.3 / 1500 / 10) + 2))
    assert 2.2 < warmup < 2.4 and length == pytest.approx(warmup + 4 / 3)


class _UdpProbe:
    """A probe whose TCP fills the link and whose UDP delivers the given rates in turn."""

    def __init__(self, delivered):
        self.delivered, self.udp_calls = list(delivered), 0
        self.tb = type("Tb", (), {"linkem": type("Linkem", (), {"stats": staticmethod(dict)})()})()

    def tcp(self, which, length_s):
        rate = most_tcp_goodput(1000)
        return {
            "interval_ms": 250,
            "intervals": [[t, rate * 1e6 / 8 / 4] for t in range(0, 4000, 250)],
            "goodput_mbit": rate,
        }

    def receiver_of(self, which):
        return "client"

    def udp_counters(self, receiver):
        return {"InErrors": 0}

    def udp(self, which, rate, duration_s, size, drain_ms):
        self.udp_calls += 1
        return {"rate_mbit": self.delivered.pop(0), "send_rate_mbit": 1060.0}


def _udp_row(delivered):
    from pathlib import Path

    from longlook.testbed import linkcheck

    probe = _UdpProbe(delivered)
    profile = LinkProfile(rate_mbit=1000, delay_ms=10, buffer_bytes=2_500_000)
    rows = linkcheck._check_rate(
        probe, "up", profile.resolved("up"), profile, linkcheck.Tolerances(), 4.0, False, Path("."), {}
    )
    return next(r for r in rows if r.quantity == "UDP delivered (IP)"), probe.udp_calls


def test_a_udp_rate_short_once_is_measured_again_and_both_are_shown(monkeypatch):
    from longlook.testbed import linkcheck

    monkeypatch.setattr(linkcheck, "REMEASURE_PAUSE_S", 0.0)
    row, calls = _udp_row([966.9, 1000.0])
    assert calls == 2 and row.ok and row.measured == 1000.0
    assert "measured again: the first delivered 966.9" in row.note


def test_a_link_short_both_times_fails_and_one_in_band_is_measured_once(monkeypatch):
    from longlook.testbed import linkcheck

    monkeypatch.setattr(linkcheck, "REMEASURE_PAUSE_S", 0.0)
    row, calls = _udp_row([900.0, 905.0])
    assert calls == 2 and row.ok is False and row.measured == 905.0
    row, calls = _udp_row([999.0])
    assert calls == 1 and row.ok and "measured again" not in row.note
