"""testbed/route_handover.py: the client's default route moves to the second address when
linkem takes this run's first path down, and comes back when the run ends."""

from __future__ import annotations

import time

from longlook.testbed.route_handover import RouteHandover


class FakeTestbed:
    def __init__(self, first_ms, down_ms):
        self.doc = {"handover": {"first_packet_mono_ms": first_ms, "first_path_down_mono_ms": down_ms}}
        self.commands: list[tuple[float, list[str]]] = []

    def linkem_stats(self):
        return self.doc

    def run(self, role, argv, as_party=True):
        assert role == "client" and not as_party
        self.commands.append((time.monotonic(), argv))


def test_the_route_moves_at_the_path_down_plus_notice_then_comes_back():
    now_ms = time.monotonic() * 1000
    tb = FakeTestbed(now_ms + 20, now_ms + 120)  # this run's first packet, path down 100 ms later
    with RouteHandover(tb, notice_ms=30) as move:
        time.sleep(0.4)
    (t_moved, moved), (_, back) = tb.commands
    assert moved[-2:] == ["src", "198.18.1.3"] and "src" not in back
    assert abs(move.moved_mono_s * 1000 - (now_ms + 150)) < 40 and move.error is None


def test_an_older_runs_handover_is_not_this_ones():
    now_ms = time.monotonic() * 1000
    tb = FakeTestbed(now_ms - 5000, now_ms - 4000)  # a previous run's, still in the stats file
    with RouteHandover(tb) as move:
        time.sleep(0.15)
    assert move.moved_mono_s is None
    assert [c[1][-1] for c in tb.commands] == ["c0"], "only the route put back"
