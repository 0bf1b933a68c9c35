"""A handover as the client's OS makes it, for clients that are not told to move: when linkem
takes the first path down (linkprofile.Handover), the client namespace's default route moves
to the second address (`src 198.18.1.3`), as a phone's routing moves to LTE when its Wi-Fi is
gone. What each client's sockets do then is its stack's: an unconnected UDP socket (most QUIC
stacks) sends from the new address at once, and its server sees the connection arrive from a
new address (a passive migration, like a NAT rebinding); a connected socket (TCP, or a QUIC
client that connected its UDP socket) keeps its old source, and dies with its path.

The move is timed on linkem's own account of the handover (its stats' `first_path_down_mono_ms`,
CLOCK_MONOTONIC like time.monotonic()), so it follows the path going down by `notice_ms`
whatever the client's start-up took. The route is put back when the run ends.

    with RouteHandover(tb, notice_ms=0) as move:
        ... the run ...
    move.moved_mono_s   # when the route moved (None: the path never went down)
"""

from __future__ import annotations

import threading
import time

from ..linkprofile import HANDOVER_CLIENT_ADDR
from .topology import ROUTER_CLIENT_SIDE

POLL_S = 0.05


class RouteHandover:
    def __init__(self, tb, notice_ms: float = 0.0, give_up_s: float = 600.0):
        self.tb = tb
        self.notice_s = notice_ms / 1000.0
        self.give_up_s = give_up_s
        self.moved_mono_s: float | None = None
        self.error: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="route-handover", daemon=True)

    def __enter__(self) -> "RouteHandover":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        # back to the first address as the default source, for the next run
        self._route(None)

    def _route(self, src: str | None) -> None:
        argv = ["ip", "route", "replace", "default", "via", ROUTER_CLIENT_SIDE, "dev", "c0"]
        self.tb.run("client", argv + (["src", src] if src else []), as_party=False)

    def _down_at(self, since: float) -> float | None:
        """When linkem takes this run's first path down: from a first packet after `since`
        (an older one is the previous run's, on a linkem that lives across runs)."""
        doc = (self.tb.linkem_stats() or {}).get("handover") or {}
        first, down = doc.get("first_packet_mono_ms"), doc.get("first_path_down_mono_ms")
        if first is None or down is None or first / 1000.0 < since:
            return None
        return down / 1000.0

    def _watch(self) -> None:
        since = time.monotonic()
        deadline = since + self.give_up_s
        try:
            while not self._stop.is_set() and time.monotonic() < deadline:
                down = self._down_at(since)
                if down is None:
                    self._stop.wait(POLL_S)
                    continue
                wait = down + self.notice_s - time.monotonic()
                if wait > 0 and self._stop.wait(wait):
                    return
                self._route(HANDOVER_CLIENT_ADDR)
                self.moved_mono_s = time.monotonic()
                return
        except Exception as e:  # noqa: BLE001 - a failed move is the run's record, not a crash
            self.error = f"moving the client's default route: {e}"
