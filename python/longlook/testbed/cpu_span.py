"""When the client ran within a run: the span every party's CPU is taken over.

A run's audit window holds more than its traffic: a stack's server started on first use
(a JVM, a Python interpreter), and after the client left, the translation of the stacks'
qlogs into ours (tens of seconds for a 200 MB download's logs). CPU divided by that window
made the shares of quic-go's, ngtcp2's and quiche's clients 3-9x too small beside ours
(whose logs need no translation), and charged a server's start-up to the first run's CPU. The client's
processes mark the run's work: its span starts when the first of them is in the client's
cgroup and ends when the last has left it.

    watch = SpanWatch(tb.client_running, snapshot)   # snapshot(): the counters to take
    watch.start(); ...; span = watch.stop()          # None: no client process was seen
    span.start.counters, span.end.counters, span.seconds
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

# Each edge is known to within one poll (a client's start-up and one round trip come before
# any traffic, so a server's counters taken this late at the start miss nothing); reading
# one small cgroup file 200 times a second costs well under 1% of a core.
POLL_S = 0.005


@dataclass(frozen=True)
class Edge:
    t: float  # time.monotonic() when it was seen
    counters: Any  # snapshot() taken then


@dataclass(frozen=True)
class Span:
    start: Edge  # the first client process was seen
    end: Edge  # the last one was seen gone (or the watch stopped while one ran)

    @property
    def seconds(self) -> float:
        return self.end.t - self.start.t


class SpanWatch:
    """Polls `running()` on a thread; takes `snapshot()` as the client's processes appear
    and each time they are all gone (the last time counts: a 0-RTT warm-up, then the fetch)."""

    def __init__(self, running: Callable[[], bool | None], snapshot: Callable[[], Any], poll_s: float = POLL_S):
        self.running, self.snapshot, self.poll_s = running, snapshot, poll_s
        self._start: Edge | None = None
        self._end: Edge | None = None
        self._was_running = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True, name="client-span")

    def start(self) -> "SpanWatch":
        self._look()  # a client already running (a session's player) starts the span now
        self._thread.start()
        return self

    def _poll(self) -> None:
        while not self._stop.wait(self.poll_s):
            if self._look() is None:
                return  # the group is gone (its testbed closed): nothing more to see

    def _look(self) -> bool | None:
        seen = self.running()
        running = bool(seen)
        if running and self._start is None:
            self._start = self._edge()
        elif self._was_running and not running:
            self._end = self._edge()
        self._was_running = running
        return seen

    def _edge(self) -> Edge:
        return Edge(time.monotonic(), self.snapshot())

    def stop(self) -> Span | None:
        """The span, None when no client process was seen. One last look first: a client
        that left since the last poll ends the span now, one still running ends it too."""
        self._stop.set()
        self._thread.join()
        self._look()
        if self._start is None:
            return None
        return Span(self._start, self._edge() if self._was_running else self._end)
