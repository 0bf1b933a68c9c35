"""The knobs of our server that a calibration search may turn: each a page-load option with
a range, a start value and how optuna should sample it. A point of the search is one value
per knob; its label names them ("macw430-iw10-n1") and is the trial arm's label.

Pacing is not a knob: quinn always paces (`endpoint serve --help`, --pacing), so there is
nothing of ours to turn and a "pacing" knob would only pretend to."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Mapping, Sequence

from ...errors import LonglookError

Point = Mapping[str, int]  # page-load option name -> value, e.g. {"max_cwnd_packets": 430}


@dataclass(frozen=True)
class Knob:
    name: str  # the command line's name (--knob NAME)
    option: str  # the page-load option it sets (kinds/pageload/spec.py)
    short: str  # its prefix in labels
    start: int  # the first value tried
    low: int
    high: int
    log: bool  # sample in log space (windows); else evenly (counts)
    unit: str

    def check(self) -> "Knob":
        if not 0 < self.low <= self.start <= self.high:
            raise LonglookError(
                f"search range of {self.name} {self.low}..{self.high} must hold the start value {self.start}",
                hint="--low <= --start <= --high, all positive (--range NAME=LOW..HIGH for other knobs)",
            )
        return self

    def ladder(self, count: int) -> list[int]:
        """`count` values evenly spread over the range (cell midpoints), in log space for a
        log knob: together with the start value they bracket the answer."""
        if count <= 0:
            return []
        if self.log:
            span = math.log(self.high / self.low)
            return [round(math.exp(math.log(self.low) + (i + 0.5) / count * span)) for i in range(count)]
        return [round(self.low + (i + 0.5) / count * (self.high - self.low)) for i in range(count)]


def _macw(start: int = 107) -> Knob:
    return Knob("macw", "max_cwnd_packets", "macw", start, max(2, start // 4), start * 8, True, "packets")


# the defaults: MACW around the paper's untuned 107; quinn's initial window (about 10 packets
# of 1200 bytes); 1 to 4 emulated Cubic connections (Kakhki: Chromium's QUIC emulated 2)
KNOBS: dict[str, Knob] = {
    "macw": _macw(),
    "iw": Knob("iw", "initial_window_packets", "iw", 10, 2, 100, True, "packets"),
    "nconn": Knob("nconn", "n_conn", "n", 1, 1, 4, False, "connections"),
}


def knob_set(
    names: Sequence[str] = ("macw",),
    *,
    start: int | None = None,
    low: int | None = None,
    high: int | None = None,
    ranges: Mapping[str, tuple[int, int]] | None = None,
) -> list[Knob]:
    """The knobs to search, in KNOBS order. start/low/high are MACW's (the historical
    options); `ranges` gives any knob's LOW..HIGH (its start clamped into it)."""
    names = list(dict.fromkeys(names or ["macw"]))
    unknown = [n for n in names if n not in KNOBS] + [n for n in (ranges or {}) if n not in KNOBS]
    if unknown:
        raise LonglookError(
            f"unknown knob {unknown[0]!r}", hint=f"known: {', '.join(KNOBS)} (pacing is not one: quinn always paces)"
        )
    missing = [n for n in (ranges or {}) if n not in names]
    if missing:
        raise LonglookError(f"--range {missing[0]}: not a searched knob", hint=f"add --knob {missing[0]}")
    out = []
    for name in KNOBS:
        if name not in names:
            continue
        k = _macw(start) if name == "macw" and start is not None else KNOBS[name]
        if name == "macw":
            k = replace(k, low=low or k.low, high=high or k.high)
        if ranges and name in ranges:
            lo, hi = ranges[name]
            k = replace(
                k, low=lo, high=hi, start=k.start if name == "macw" and start is not None else min(max(k.start, lo), hi)
            )
        out.append(k.check())
    return out


def parse_range(text: str) -> tuple[str, tuple[int, int]]:
    """ "iw=4..64" -> ("iw", (4, 64))."""
    name, _, span = text.partition("=")
    lo, sep, hi = span.partition("..")
    try:
        if not sep:
            raise ValueError
        return name.strip(), (int(lo), int(hi))
    except ValueError:
        raise LonglookError(f"--range {text!r}: expected NAME=LOW..HIGH", hint="e.g. --range iw=4..64") from None


def label(point: Point) -> str:
    """The arm label of a point, knobs in KNOBS order: "macw430", "macw430-iw10-n1"."""
    parts = [f"{k.short}{point[k.option]}" for k in KNOBS.values() if k.option in point]
    return "-".join(parts)


def ordered(point: Point) -> dict[str, int]:
    """The point with its knobs in KNOBS order (how tables and fragments list them)."""
    return {k.option: point[k.option] for k in KNOBS.values() if k.option in point}


def start_point(knobs: Sequence[Knob]) -> dict[str, int]:
    return {k.option: k.start for k in knobs}


def initial_points(knobs: Sequence[Knob], count: int) -> list[dict[str, int]]:
    """The start point, then `count - 1` points whose values are each knob's ladder; the
    ladder of the i-th knob is rotated by i so the knobs do not all rise together."""
    ladders = [k.ladder(count - 1) for k in knobs]
    rest = (
        [
            {k.option: lad[(j + i) % len(lad)] for i, (k, lad) in enumerate(zip(knobs, ladders))}
            for j in range(count - 1)
        ]
        if count > 1
        else []
    )
    points = [start_point(knobs), *rest]
    return [dict(p) for p in dict.fromkeys(tuple(sorted(p.items())) for p in points)]
