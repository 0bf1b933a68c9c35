"""Cubic's window growth between two losses, fitted against RFC 9438 §4.2:
W(t) = C (t - K)^3 + W_max, t in seconds since the reduction, W in max-size segments,
C = 0.4. W_max is the window before the reduction and W(0) the window it was cut to, both
from the log, so K = cbrt((W_max - W(0)) / C) and C is the one free parameter, fitted with
scipy's curve_fit over the longest congestion-avoidance epoch with enough samples.

Cubic's window follows the cubic only where it is above the Reno-friendly estimate
(RFC 9438 §4.3): at a small bandwidth-delay product the growth is Reno's and C cannot be
seen; an epoch whose fit explains less than R2_MIN of the variance is reported not
measurable rather than judged.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import curve_fit

from .result import ParamResult, judged, not_measurable, within
from .trace import ConnTrace, loss_events

PARAMETER = "cubic_c"
UNIT = "segments/s^3"
C_REFERENCE = 0.4
TOLERANCE_REL = 0.5
TOLERANCE = f"fitted C within ±{TOLERANCE_REL:.0%} of 0.4, over an epoch the cubic explains (R² ≥ 0.9)"
MIN_SAMPLES = 8
MIN_EPOCH_MS, MIN_EPOCH_RTTS = 500.0, 10  # shorter, a cubic's C cannot be told from its slope
BETA = 0.7
R2_MIN = 0.9


def bound(reference: float = C_REFERENCE, tcp: bool = False) -> tuple[float, float]:
    """What conforms: C within +-TOLERANCE_REL of the reference."""
    return reference * (1 - TOLERANCE_REL), reference * (1 + TOLERANCE_REL)


def cubic(t, c, k, w_max):
    return c * (t - k) ** 3 + w_max


def epochs(tr: ConnTrace) -> list[tuple[float, float, float, float]]:
    """(start, end) ms of each stretch from one window reduction to the next (or the log's
    end), with the window before the reduction and the one it was cut to (bytes)."""
    cuts = loss_events(tr)
    end = float(tr.metrics["t_ms"].max()) if not tr.metrics.empty else 0.0
    ends = [c[0] for c in cuts[1:]] + [end]
    out, last_max = [], None
    for (t, before, after), b in zip(cuts, ends):
        # fast convergence (RFC 9438 §4.7): a window cut below the last W_max releases
        # bandwidth, W_max = cwnd x (1 + beta) / 2
        w_max = before * (1 + BETA) / 2 if last_max is not None and before < last_max else before
        last_max = before
        if b > t:
            out.append((t, b, w_max, after))
    return out


def fit_epoch(t_s: np.ndarray, w: np.ndarray, w_max: float, w_cut: float) -> tuple[float, float, float]:
    """(C, K, R²) of RFC 9438's cubic through (t_s, w) with W_max and W(0) = w_cut given."""
    drop = max(w_max - w_cut, 1e-9)

    def model(t, c):
        return cubic(t, c, np.cbrt(drop / c), w_max)

    (c,), _ = curve_fit(model, t_s, w, p0=[C_REFERENCE], bounds=(1e-3, 100.0), maxfev=20000)
    resid = w - model(t_s, c)
    ss_tot = float(((w - w.mean()) ** 2).sum())
    r2 = 1.0 - float((resid**2).sum()) / ss_tot if ss_tot > 0 else 0.0
    return float(c), float(np.cbrt(drop / c)), r2


def _reno_friendly_throughout(t_s: np.ndarray, w_max: float, w_cut: float, srtt_s: float, beta: float = 0.7) -> bool:
    alpha = 3 * (1 - beta) / (1 + beta)
    w_est = w_cut + alpha * t_s / srtt_s
    k = np.cbrt(max(w_max - w_cut, 1e-9) / C_REFERENCE)
    return bool(np.all(cubic(t_s, C_REFERENCE, k, w_max) <= w_est + 0.5))


def cubic_growth(tr: ConnTrace, cc: str) -> ParamResult:
    if cc != "cubic":
        return not_measurable(PARAMETER, UNIT, f"{cc} is not Cubic")
    seg = tr.max_datagram()
    m = tr.metrics.dropna(subset=["cwnd"])
    best = None
    for a, b, before, after in epochs(tr):
        # the growth after the reduction: from the first sample at the reduced window on
        e = m[(m["t_ms"] > a) & (m["t_ms"] < b)]
        if len(e) < MIN_SAMPLES:
            continue
        e = e.loc[e["cwnd"].idxmin() :]
        e = e.groupby("t_ms", as_index=False)["cwnd"].last()
        srtt_ms = float(m[(m["t_ms"] > a) & (m["t_ms"] < b)]["srtt_ms"].dropna().mean() or 0)
        if len(e) < MIN_SAMPLES or e["cwnd"].nunique() < 4 or (b - a) < max(MIN_EPOCH_MS, MIN_EPOCH_RTTS * srtt_ms):
            continue
        t = (e["t_ms"].to_numpy() - a) / 1000.0
        w = e["cwnd"].to_numpy() / seg
        try:
            fit = fit_epoch(t, w, before / seg, after / seg)
        except (RuntimeError, ValueError):
            continue
        # RFC 9438 §4.3: where Reno's estimate of the window runs above the cubic, the window
        # follows Reno's; an epoch wholly there says nothing about C
        srtt = srtt_ms / 1000.0
        if srtt > 0 and _reno_friendly_throughout(t, before / seg, after / seg, srtt):
            continue
        if best is None or len(e) > best[0]:
            best = (len(e), fit, b - a, before / seg)
    if best is None:
        return not_measurable(
            PARAMETER,
            UNIT,
            f"no congestion-avoidance epoch of {MIN_EPOCH_MS:.0f}+ ms and "
            f"{MIN_EPOCH_RTTS}+ RTTs with a growing window outside the Reno-friendly region",
            C_REFERENCE,
            TOLERANCE,
        )
    n, (c, k, r2), dur, w_max = best
    note = f"epoch of {dur:.0f} ms, {n} samples: K {k:.2f} s, W_max {w_max:.1f} segments, R² {r2:.2f}"
    if r2 < R2_MIN:
        return not_measurable(
            PARAMETER,
            UNIT,
            f"the cubic does not fit the growth ({note}): Reno-friendly region or too short an epoch",
            C_REFERENCE,
            TOLERANCE,
        )
    return judged(PARAMETER, c, C_REFERENCE, UNIT, within(c, bound(C_REFERENCE)), TOLERANCE, note)
