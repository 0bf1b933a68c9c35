"""When each protocol first carried a session's bytes at the router (kinds/video/router_bytes):
the end of the first 100 ms bin of linkem's flow log with bytes of it."""

from __future__ import annotations

import json
from pathlib import Path

from longlook.flowlog import bytes_per_second
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
