"""Every colour longlook draws with, in one place: QUIC red and TCP blue as in Kakhki Fig. 6,
heatmap shading (red where A (QUIC) is significantly better, blue where B (TCP) is, white
where the difference is not significant; darker = larger), series colours, state colours."""

from __future__ import annotations

import math

RED = (200, 30, 40)
BLUE = (30, 90, 190)
QUIC = "#c81e28"
TCP = "#1e5abe"
PROTOCOL_COLORS = {"QUIC": QUIC, "TCP": TCP, "h3": QUIC, "h2": TCP}
# arms in scenario order, flows of one protocol, other series
SERIES = [QUIC, TCP, "#2a9d5c", "#8e44ad", "#d4820a", "#555555"]
QUIC_SHADES = [QUIC, "#e4676e", "#8f141b"]
TCP_SHADES = [TCP, "#2a9d5c", "#d4820a", "#8e44ad", "#555555"]
MUTED = "#999999"
# congestion-control states (analyses.states), loss-handling ones warm
STATE_COLORS = {
    "Init": MUTED,
    "SlowStart": "#27ae60",
    "CongestionAvoidance": "#2980b9",
    "CongestionAvoidanceMaxed": "#1abc9c",
    "ApplicationLimited": "#bdc3c7",
    "Recovery": "#e74c3c",
    "RetransmissionTimeout": "#8e44ad",
    "TailLossProbe": "#f39c12",
    "Open": "#2980b9",
    "Disorder": "#f1c40f",
    "CWR": "#e67e22",
    "Loss": "#8e44ad",
}
LOSS_STATE_FILL = "#f6d5d5"


def flow_colors(flows: list[str]) -> dict[str, str]:
    """QUIC flows in reds, other flows in other colours, stable by order."""
    quic = [f for f in flows if f.startswith("QUIC")]
    other = [f for f in flows if not f.startswith("QUIC")]
    colors = {f: QUIC_SHADES[i % len(QUIC_SHADES)] for i, f in enumerate(quic)}
    colors.update({f: TCP_SHADES[i % len(TCP_SHADES)] for i, f in enumerate(other)})
    return colors


FULL_AT_PERCENT = 50.0  # |% difference| at which the colour is fully saturated
INSUFFICIENT = "#e6e6e6"


def _mix(rgb: tuple[int, int, int], t: float) -> str:
    r, g, b = (round(255 + (c - 255) * t) for c in rgb)
    return f"#{r:02x}{g:02x}{b:02x}"


def intensity(percent: float) -> float:
    """0.25..1: even a small significant difference is clearly not white."""
    if math.isnan(percent):  # significant, no percentage (a baseline of 0): a clear colour
        return 0.6
    return 0.25 + 0.75 * min(abs(percent) / FULL_AT_PERCENT, 1.0)


# verdicts (core.stats.Verdict, a str Enum, or its value) shaded grey: not judged
NOT_JUDGED = ("insufficient_data", "not_testable", "survivorship")


def cell_colors(verdict: str, percent: float) -> tuple[str, str]:
    """(background, text colour) for a heatmap cell; `verdict` is a core.stats.Verdict or its
    value ("a_faster", "b_faster", "inconclusive", and the NOT_JUDGED ones)."""
    if verdict == "a_faster":
        t = intensity(percent)
        return _mix(RED, t), ("#ffffff" if t > 0.55 else "#1a1a1a")
    if verdict == "b_faster":
        t = intensity(percent)
        return _mix(BLUE, t), ("#ffffff" if t > 0.55 else "#1a1a1a")
    if verdict in NOT_JUDGED:
        return INSUFFICIENT, "#555555"
    return "#ffffff", "#1a1a1a"


def legend_stops(a: str = "A", b: str = "B") -> list[tuple[str, str]]:
    """(colour, caption) swatches for the legend; a, b name the compared arms."""
    full = f"{FULL_AT_PERCENT:g}"
    return [
        (_mix(RED, 1.0), f"{a} faster by ≥{full}%"),
        (_mix(RED, intensity(10)), f"{a} faster by 10%"),
        ("#ffffff", "no significant difference"),
        (_mix(BLUE, intensity(10)), f"{b} faster by 10%"),
        (_mix(BLUE, 1.0), f"{b} faster by ≥{full}%"),
        (INSUFFICIENT, "not judged: too few runs, not testable, or survivorship"),
    ]
