"""Where a page load's time goes, as Kakhki Fig. 2 splits it: the handshake, the wait for
the first byte after it (ttfb - handshake) and the receiving of the body (plt - ttfb); and
the ratio of two configurations' mean PLTs with Fieller's interval."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from ...core.effects import fieller_ratio
from ...errors import LonglookError

PHASES = ("handshake_ms", "wait_ms", "receive_ms")


def time_split(fetch: Mapping) -> dict[str, float]:
    """One fetch JSON (docs/interfaces.md) or runs-frame row as the three phases (ms)."""
    try:
        hs, ttfb, plt = (float(fetch[k]) for k in ("handshake_ms", "ttfb_ms", "plt_ms"))
    except (KeyError, TypeError, ValueError):
        raise LonglookError(
            "a fetch without handshake_ms, ttfb_ms and plt_ms cannot be split",
            hint="only successful page loads have all three times",
        ) from None
    return {"handshake_ms": hs, "wait_ms": ttfb - hs, "receive_ms": plt - ttfb, "plt_ms": plt}


def phase_means(rows: pd.DataFrame | Iterable[Mapping], by: str = "arm") -> pd.DataFrame:
    """Per value of `by`: n, the mean of each phase and of the PLT, and the PLT's sd. The
    phases' means add up to the mean PLT, so the bars of the figure are as tall as it."""
    frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
    if frame.empty:
        raise LonglookError("no successful page loads to split")
    split = pd.DataFrame([time_split(r) for r in frame.to_dict("records")], index=frame.index)
    split[by] = frame[by]
    grouped = split.groupby(by, sort=False)
    out = grouped[[*PHASES, "plt_ms"]].mean()
    out.insert(0, "n", grouped.size())
    out["plt_sd"] = grouped["plt_ms"].std(ddof=1)
    return out.reset_index()


@dataclass(frozen=True)
class Ratio:
    """mean(a) / mean(b) and its interval (NaN when a side has < 2 values or the data cannot
    bound it)."""

    value: float
    low: float
    high: float
    confidence: float
    n_a: int
    n_b: int
    method: str

    def as_dict(self) -> dict:
        return asdict(self)

    def text(self) -> str:
        if math.isnan(self.low):
            return f"{self.value:.2f}x (no interval: n = {self.n_a}, {self.n_b})"
        return f"{self.value:.2f}x [{self.low:.2f}, {self.high:.2f}] ({self.confidence:.0%} {self.method})"


def ratio_of_means(a: Sequence[float], b: Sequence[float], *, confidence: float = 0.95) -> Ratio:
    """The two samples are independent (different runs): Fieller's interval of the ratio of
    their means (core.effects, the interval every comparison of longlook uses)."""
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if not len(xa) or not len(xb) or float(np.mean(xb)) == 0.0:
        raise LonglookError("a ratio of means needs values on both sides and a non-zero denominator")
    if len(xa) < 2 or len(xb) < 2:
        return Ratio(float(np.mean(xa) / np.mean(xb)), math.nan, math.nan, confidence, len(xa), len(xb), "none")
    value, lo, hi = fieller_ratio(xa, xb, confidence)
    return Ratio(value, lo, hi, confidence, len(xa), len(xb), "Fieller" if not math.isnan(lo) else "none")
