"""Host socket buffers sized to the path (testbed/buffers.py), and the audit's reading of a
TCP sender held back by a host buffer (core.audit.host_buffer_reasons)."""

from __future__ import annotations

import json
from pathlib import Path

from longlook.core.audit import host_buffer_reasons, tcp_summary
from longlook.linkprofile import LinkProfile
from longlook.testbed.buffers import KERNEL_DEFAULT_MAX, host_buffers, path_bytes


def test_a_gigabit_path_gets_twice_what_it_holds_and_a_slow_one_keeps_the_kernel_s_default():
    giga = LinkProfile(rate_mbit=1000, delay_ms=25, buffer_bytes=6_250_000)  # Zhang's fast path
    assert path_bytes(giga) == 12_500_000  # 6.25 MB BDP + 6.25 MB buffer
    b = host_buffers(giga)
    assert b.tcp_rmem_max == b.tcp_wmem_max == 25_000_000 and b.udp_bytes == 25_000_000
    assert b.sysctls() == ["net.ipv4.tcp_rmem=4096 131072 25000000", "net.ipv4.tcp_wmem=4096 16384 25000000"]
    slow = host_buffers(LinkProfile(rate_mbit=10, delay_ms=20, buffer_packets=100), floors=(32 << 20, 4 << 20))
    assert (slow.tcp_rmem_max, slow.tcp_wmem_max) == (32 << 20, 4 << 20)  # never below what the namespace had
    assert KERNEL_DEFAULT_MAX == 4 << 20


def test_a_trace_is_sized_by_its_busiest_100_ms(tmp_path: Path):
    # 1 opportunity per ms (12 Mbit/s) for a second, then 10 per ms (120 Mbit/s) for 100 ms
    times = list(range(1, 1001)) + [1000 + i // 10 for i in range(1, 1001)]
    (tmp_path / "t.trace").write_text("\n".join(map(str, times)) + "\n")
    link = LinkProfile(trace="t.trace", delay_ms=50, buffer_bytes=0 + 1500)
    held = path_bytes(link, base_dir=tmp_path)
    assert 1_400_000 < held < 1_600_000  # 120 Mbit/s x 100 ms RTT, not the 12 Mbit/s mean


def _tcp_log(path: Path, **summary) -> Path:
    records = [{"qlog_format": "JSON-SEQ"}, {"time": 1.0, "name": "longlook:tcp_info_summary", "data": summary}]
    path.write_bytes(b"".join(b"\x1e" + json.dumps(r).encode() + b"\n" for r in records))
    return path


def test_a_sender_held_back_by_its_send_buffer_is_named_and_one_that_was_not_is_not(tmp_path: Path):
    held = _tcp_log(tmp_path / "a.tcp.sqlog", busy_time_us=1_000_000, sndbuf_limited_us=400_000, rwnd_limited_us=0)
    reasons = host_buffer_reasons(tcp_summary(held))
    assert len(reasons) == 1 and "send buffer" in reasons[0] and "40%" in reasons[0]
    free = _tcp_log(tmp_path / "b.tcp.sqlog", busy_time_us=1_000_000, sndbuf_limited_us=20_000, rwnd_limited_us=50_000)
    assert host_buffer_reasons(tcp_summary(free)) == []
    assert host_buffer_reasons(tcp_summary(_tcp_log(tmp_path / "c.tcp.sqlog", samples=3))) == []  # an older endpoint
    assert host_buffer_reasons(tcp_summary(None)) == [] and host_buffer_reasons(tcp_summary(tmp_path / "missing")) == []


def test_a_tcp_run_whose_handshake_did_not_do_what_its_ecn_switch_said_is_flagged(tmp_path: Path):
    from longlook.core.audit import tcp_ecn_check

    marked = _tcp_log(tmp_path / "a.tcp.sqlog", ecn=True, delivered_ce=17)
    assert tcp_ecn_check(tcp_summary(marked), asked=True) == ({"tcp_ecn": True, "tcp_delivered_ce": 17}, [])
    figures, reasons = tcp_ecn_check(tcp_summary(marked), asked=False)
    assert figures["tcp_ecn"] and reasons == ["ECN: the TCP handshake negotiated ECN although the cell has it off"]
    plain = _tcp_log(tmp_path / "b.tcp.sqlog", ecn=False, delivered_ce=0)
    assert tcp_ecn_check(tcp_summary(plain), asked=True)[1] == [
        "ECN: the TCP handshake did not negotiate the ECN it asked for"
    ]
    assert tcp_ecn_check(tcp_summary(plain), asked=False)[1] == []
    # an endpoint older than the switch says nothing, and nothing is claimed for it
    assert tcp_ecn_check(tcp_summary(_tcp_log(tmp_path / "c.tcp.sqlog", samples=3)), asked=True) == ({}, [])


def test_a_receive_window_is_a_host_cap_only_when_it_reached_the_receiver_s_buffer(tmp_path: Path):
    # 30% of the sending time receive-window limited, the receiver's buffer 2 MB
    def log(name: str, **more) -> Path:
        return _tcp_log(tmp_path / name, busy_time_us=1_000_000, sndbuf_limited_us=0, rwnd_limited_us=300_000, **more)

    capped = host_buffer_reasons(tcp_summary(log("a.tcp.sqlog", snd_wnd_max=1_000_000)), rmem_max=2_000_000)
    assert len(capped) == 1 and "receive buffer" in capped[0] and "30%" in capped[0]
    # a window still growing (autotuning behind a queue-inflated RTT) is TCP's own behaviour
    assert host_buffer_reasons(tcp_summary(log("b.tcp.sqlog", snd_wnd_max=100_000)), rmem_max=2_000_000) == []
    # without the window or the buffer nothing is called a cap
    assert host_buffer_reasons(tcp_summary(log("c.tcp.sqlog")), rmem_max=2_000_000) == []
    assert host_buffer_reasons(tcp_summary(log("d.tcp.sqlog", snd_wnd_max=1_000_000))) == []
