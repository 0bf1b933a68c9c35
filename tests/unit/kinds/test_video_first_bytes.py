"""When each protocol first carried a session's bytes at the router (kinds/video/router_bytes):
the end of the first 100 ms bin of linkem's flow log with bytes of it."""

from __future__ import annotations

import json
from pathlib import Path

from longlook.flowlog import bytes_per_second, read_flow_log
from longlook.kinds.video.router_bytes import FIRST_BYTES_BIN_S, _first_bin_end

SERVER = "198.18.2.2"


def _line(t: float, proto: str, port: int, total: int) -> dict:
    return {
        "t": t,
        "direction": "down",
        "proto": proto,
        "src": f"{SERVER}:443",
        "dst": f"198.18.1.2:{port}",
        "bytes": total,
    }


def test_a_session_that_began_over_tcp_says_how_long_quic_kept_out(tmp_path: Path):
    log = tmp_path / "flows.jsonl"
    lines = [_line(0.2, "tcp", 6000, 5000), _line(0.9, "tcp", 6000, 90000), _line(10.45, "udp", 5000, 1200)]
    log.write_text("".join(json.dumps(x) + "\n" for x in lines))
    fine = bytes_per_second(log, SERVER, bin_s=FIRST_BYTES_BIN_S)
    # a line counts for the interval that just ended: TCP's first line at 0.2 s is in [0.1, 0.2)
    assert _first_bin_end(fine["tcp"]) == 0.2
    assert _first_bin_end(fine["udp"]) == 10.5
    assert _first_bin_end(fine["udp"].iloc[:50]) is None  # no QUIC in the first 5 s
    # the lines read once bin as the file does (router_bytes bins one log at two widths)
    lines = read_flow_log(log)
    assert bytes_per_second(lines, SERVER, bin_s=FIRST_BYTES_BIN_S).equals(fine)
    assert bytes_per_second(lines, SERVER).equals(bytes_per_second(log, SERVER))


def test_a_session_quic_never_reached_keeps_it_out_to_its_end():
    from longlook.kinds.video.router_bytes import _quic_delay

    assert _quic_delay(0.2, 10.5, 40.0) == {"router_quic_delay_s": 10.3, "router_quic_never": 0.0}
    # no QUIC in a 40 s session: at least 39.8 s, and said to be a bound
    assert _quic_delay(0.2, None, 40.0) == {"router_quic_delay_s": 39.8, "router_quic_never": 1.0}
    assert _quic_delay(None, 0.3, 40.0)["router_quic_delay_s"] == 0.0  # QUIC from the start
    assert _quic_delay(2.0, 0.3, 40.0)["router_quic_delay_s"] == 0.0
    assert _quic_delay(None, None, 40.0)["router_quic_delay_s"] is None
