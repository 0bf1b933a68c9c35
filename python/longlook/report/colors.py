"""Heatmap colours as in Kakhki Fig. 6: red where A (QUIC) is significantly faster, blue
where B (TCP) is, white where the difference is not significant; darker = larger."""

from __future__ import annotations

import math

from ..stats import Verdict

RED = (200, 30, 40)
BLUE = (30, 90, 190)
FULL_AT_PERCENT = 50.0  # |% difference| at which the colour is fully saturated
INSUFFICIENT = "#e6e6e6"


def _mix(rgb: tuple[int, int, int], t: float) -> str:
    r, g, b = (round(255 + (c - 255) * t) for c in rgb)
    return f"#{r:02x}{g:02x}{b:02x}"


def intensity(percent: float) -> float:
    """0.25..1: even a small significant difference is clearly not white."""
    if math.isnan(percent):
        return 0.0
    return 0.25 + 0.75 * min(abs(percent) / FULL_AT_PERCENT, 1.0)


def cell_colors(verdict: Verdict, percent: float) -> tuple[str, str]:
    """(background, text colour) for a heatmap cell."""
    if verdict is Verdict.A_FASTER:
        t = intensity(percent)
        return _mix(RED, t), ("#ffffff" if t > 0.55 else "#1a1a1a")
    if verdict is Verdict.B_FASTER:
        t = intensity(percent)
        return _mix(BLUE, t), ("#ffffff" if t > 0.55 else "#1a1a1a")
    if verdict is Verdict.INSUFFICIENT:
        return INSUFFICIENT, "#555555"
    return "#ffffff", "#1a1a1a"


def legend_stops(a: str = "A", b: str = "B") -> list[tuple[str, str]]:
    """(colour, caption) swatches for the legend; a, b name the compared arms."""
    full = f"{FULL_AT_PERCENT:g}"
    return [(_mix(RED, 1.0), f"{a} faster by ≥{full}%"), (_mix(RED, intensity(10)), f"{a} faster by 10%"),
            ("#ffffff", "no significant difference"), (_mix(BLUE, intensity(10)), f"{b} faster by 10%"),
            (_mix(BLUE, 1.0), f"{b} faster by ≥{full}%"), (INSUFFICIENT, "fewer than 2 runs per side")]
