"""What linkem's own counters say about a window of time [t0_ms, t1_ms] (CLOCK_MONOTONIC ms):
how many packets it released, how late, whether the kernel's queue to it overflowed, and
its own stalls. Pure arithmetic on two of its stats documents (testbed.linkem.Linkem.stats),
used by every run's fidelity audit (core.audit) and by the link self-check, which says when
its own measurement was linkem falling behind rather than the link."""

from __future__ import annotations

from dataclasses import dataclass

LATE_MS = 1.0  # what linkem timestamps as a late release
# upper bounds (ms) of linkem's lateness histogram buckets, in its order (docs/interfaces.md)
_BUCKET_UPPER_MS = (0.0, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, float("inf"))
_BUCKETS = ("early", "0-50us", "50-100us", "100-200us", "200-500us", "0.5-1ms", "1-2ms", "2-5ms", "over_5ms")


@dataclass
class LinkemWindow:
    released: int = 0  # packets linkem released in the window, both directions
    late_releases: int = 0  # of them more than 1 ms late
    max_release_late_ms: float | None = None  # exact when > 1 ms; else the histogram's bound
    kernel_queue_drops: int | None = None  # None: the kernel's counters were not readable
    # linkem's own stalls in the window, the longest (None: none over 1 ms, or an older linkem)
    max_read_wait_ms: float | None = None  # a packet waited this long in the kernel's queue
    max_wakeup_late_ms: float | None = None  # it woke (or began a turn) this much after its time

    def fell_behind(self, limit_ms: float) -> list[str]:
        """Why linkem was not the link the scenario said in this window (empty: it kept up)."""
        why = []
        if self.kernel_queue_drops:
            why.append(f"the kernel's queue to linkem dropped {self.kernel_queue_drops} packets")
        if self.max_read_wait_ms is not None and self.max_read_wait_ms > limit_ms:
            why.append(f"linkem read a packet {self.max_read_wait_ms:.1f} ms after the kernel queued it")
        if self.max_release_late_ms is not None and self.max_release_late_ms > limit_ms:
            why.append(f"a release {self.max_release_late_ms:.1f} ms late")
        return why


def direction_stats(stats: dict) -> dict[str, dict]:
    """Its per-direction counters (`up`, `down`)."""
    return stats.get("directions") or {}


def counter_delta(before: dict, after: dict, get) -> int:
    """A counter's growth between two stats documents, summed over the directions."""
    total = 0
    for which, d in direction_stats(after).items():
        prev = direction_stats(before).get(which, {})
        total += (get(d) or 0) - (get(prev) or 0)
    return total


def _kernel_drops(d: dict) -> int | None:
    errors = d.get("errors") or {}
    q, u = errors.get("kernel_queue_dropped"), errors.get("kernel_user_dropped")
    if q is None and u is None:
        return None
    return (q or 0) + (u or 0)


def linkem_window(before: dict, after: dict, t0_ms: float, t1_ms: float) -> LinkemWindow:
    """linkem's figures for the window [t0_ms, t1_ms], from its stats before and after it."""
    w = LinkemWindow(released=counter_delta(before, after, lambda d: d.get("packets")))
    events = [
        late
        for d in direction_stats(after).values()
        for mono, late in d.get("late_release_events") or []
        if t0_ms <= mono <= t1_ms
    ]
    counted = counter_delta(before, after, lambda d: d.get("late_releases_over_1ms"))
    ring_complete = all(not d.get("late_release_events_dropped") for d in direction_stats(after).values())
    has_events = any("late_release_events" in d for d in direction_stats(after).values())
    w.late_releases = len(events) if has_events and ring_complete else max(counted, len(events))
    if events:
        w.max_release_late_ms = max(events)
    else:  # nothing over 1 ms: the highest histogram bucket that moved bounds the lateness
        moved = [
            i
            for i, name in enumerate(_BUCKETS)
            if counter_delta(
                before, after, lambda d, n=name: ((d.get("release_lateness_us") or {}).get("histogram") or {}).get(n)
            )
            > 0
        ]
        w.max_release_late_ms = _BUCKET_UPPER_MS[max(moved)] if moved else None
        if w.max_release_late_ms == float("inf"):  # counted late but not timestamped (old linkem)
            w.max_release_late_ms = None
    w.max_read_wait_ms = _longest_gap(after, "late_read_events", t0_ms, t1_ms)
    w.max_wakeup_late_ms = _longest_gap(after, "late_wakeup_events", t0_ms, t1_ms)
    drops = [
        (_kernel_drops(d), _kernel_drops(direction_stats(before).get(k, {}))) for k, d in direction_stats(after).items()
    ]
    if drops and all(now is not None for now, _ in drops):
        w.kernel_queue_drops = sum(now - (prev or 0) for now, prev in drops)
    return w


def _longest_gap(after: dict, key: str, t0_ms: float, t1_ms: float) -> float | None:
    """The longest of linkem's own stalls (`[end_mono_ms, length_ms]` events) that overlap
    the window: a stop that began inside it and ended after it counts too."""
    gaps = [
        length
        for d in direction_stats(after).values()
        for end, length in d.get(key) or []
        if end >= t0_ms and end - length <= t1_ms
    ]
    return max(gaps) if gaps else None
