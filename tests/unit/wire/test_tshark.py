"""Reading captures through tshark: one clear error for what the user can fix (no tshark,
no file, not a capture, no key log), tshark's JSON read one packet at a time, and the pcap
written for a second reading read back as it was meant."""

from __future__ import annotations

import io
import shutil
import struct

import pytest

from longlook.errors import LonglookError
from longlook.wire import pcap, tshark
from longlook.wire.tshark import read_capture

from .captures import CAPTURES

needs_tshark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed")


def test_json_objects_arrive_one_at_a_time_across_chunks():
    text = '[\n  {"a": [1, {"b": "]"}]},\n  {"c": "x,y"}\n]\n'
    assert list(tshark.json_objects(io.StringIO(text), chunk=5)) == [{"a": [1, {"b": "]"}]}, {"c": "x,y"}]


def test_json_cut_short_is_one_clear_error():
    with pytest.raises(LonglookError, match="ends in the middle of a packet"):
        list(tshark.json_objects(io.StringIO('[{"a": 1}, {"b": '), chunk=4))


def test_the_invocation():
    argv = tshark.tshark_argv("/usr/bin/tshark", "c.pcap", 4433, "k.log")
    assert argv == [
        "/usr/bin/tshark", "-n", "-r", "c.pcap", "-d", "udp.port==4433,quic", "-o", "tls.keylog_file:k.log",
        "-Y", "udp and not icmp and not icmpv6",
        "-T", "json", "--no-duplicate-keys", "-J", "frame ip ipv6 udp quic http3",
    ]  # fmt: skip


def test_no_tshark_is_one_clear_error(monkeypatch):
    monkeypatch.setattr(tshark.shutil, "which", lambda name: None)
    with pytest.raises(LonglookError, match="tshark is not installed") as e:
        read_capture(CAPTURES / "handshake-pass.pcapng", None, 44433)
    assert "apt-get install tshark" in e.value.hint


def test_a_missing_capture_or_key_log_is_one_clear_error(tmp_path):
    with pytest.raises(LonglookError, match="no such file, not a capture file"):
        read_capture(tmp_path / "none.pcapng", None, 443)
    with pytest.raises(LonglookError, match="is a directory, not a TLS key log"):
        read_capture(CAPTURES / "handshake-pass.pcapng", tmp_path, 443)


@needs_tshark
def test_a_file_that_is_no_capture_is_one_clear_error(tmp_path):
    f = tmp_path / "notes.pcap"
    f.write_text("not a capture\n")
    with pytest.raises(LonglookError, match="tshark cannot read it") as e:
        read_capture(f, None, 443)
    assert "pcap or pcapng" in e.value.hint


@needs_tshark
def test_a_capture_cut_short_is_read_up_to_the_cut(tmp_path):
    whole = (CAPTURES / "handshake-pass.pcapng").read_bytes()
    f = tmp_path / "cut.pcapng"
    f.write_bytes(whole[: len(whole) // 2])
    c = read_capture(f, CAPTURES / "handshake-pass.keylog", 44433)
    assert 5 < len(c.datagrams) < 40
    assert any(n.startswith("tshark:") for n in c.notes)


def test_ipv4_header_checksum():
    packet = pcap.ip_packet(pcap.RawDatagram(0, 0, "127.0.0.1", "127.0.0.2", 2, 1, 2, b"x"))
    assert pcap._checksum(packet[:20]) == 0
    assert packet[1] == 2 and struct.unpack("!HH", packet[20:24]) == (1, 2)


@needs_tshark
def test_a_written_pcap_reads_back_with_its_ecn_ports_and_times(tmp_path):
    f = tmp_path / "w.pcap"
    pcap.write(
        f,
        [
            pcap.RawDatagram(1700000000, 5, "127.0.0.1", "127.0.0.2", 0x02, 5000, 443, b"\x40" * 30),
            pcap.RawDatagram(1700000000, 1_000_005, "::1", "::2", 0x01, 443, 5000, b"\x40" * 30),
        ],
    )
    c = read_capture(f, None, 443)
    assert [(d.src, d.sport, d.dst, d.dport, d.ecn) for d in c.datagrams] == [
        ("127.0.0.1", 5000, "127.0.0.2", 443, 2),
        ("::1", 443, "::2", 5000, 1),
    ]
    assert abs(c.datagrams[1].time - 0.001) < 1e-9


def test_a_packet_in_an_unknown_shape_is_one_clear_error(monkeypatch, tmp_path):
    class Out:
        def __init__(self):
            self.stdout = io.StringIO('[{"_source": {"layers": {"frame": {"frame.number": "3"}, "udp": {}}}}]')

        def wait(self):
            return 0

    monkeypatch.setattr(tshark.subprocess, "Popen", lambda *a, **k: Out())
    with pytest.raises(LonglookError, match="tshark printed packet 3 in a shape this reader does not know"):
        tshark._run(["tshark"], tmp_path / "c.pcap", True)
