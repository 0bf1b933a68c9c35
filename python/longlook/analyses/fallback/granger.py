"""Granger causality F -> B (or S) within one session, and the null it is judged against.

The statistic (`granger_test`): the F-test of the cause's lags 1..p in the effect's own
regression (a constant, the effect's lags 1..p, the cause's lags 1..p, on the rows p..n-1:
statsmodels' `grangercausalitytests` ssr F-test, F(p, n - 3p - 1)), with p the lag the
information criterion (BIC by default) picks for that regression among 1..max_lag on a
common sample (rows max_lag..n-1). Default max_lag = min(20, n // 8): 7 s in a 60 s session.

Its textbook p assumes Gaussian errors, and a session's series are nothing like that: F
(bytes over TCP) is a step at the fallback, one spike once differenced; S is a cumulative
stall, flat but for a few jumps; B ramps after each quality switch and falls back at the
next. The cause's lags are then dummies for the p seconds after the fallback, and any jump
of B or S inside them is "explained" far beyond what the F distribution allows: on
independent F, B and S shaped like the video kind's (tests/calibration/test_granger.py),
the old reading (that p at the VAR's AIC lag, no correction for the "or") said "F
Granger-causes B" in 23% of 60 s sessions, S in 14%, either in 25%, at alpha 0.05.

So a session's verdict reads a permutation p (`granger_shift_tests`): the same statistic
for F as observed and for F as it would have been had the fallback come at another
admissible time of the session (`null_versions`: the onset moved, what follows it kept in
order; F active from the first second is rotated instead), the lag chosen anew by the same
rule for every version, and p = (1 + #versions at least as extreme) / (1 + #versions).
Each series keeps its own shape; only where F's pattern falls relative to B and S changes.
What is tested: "B (S) follows the fallback more closely than it follows the same fallback
put at any other time of the session". The p is valid when the fallback's time is
independent of B and S and as likely at one admissible time as at another; the
differencing is the one the stationarity rule chose on the observed series, kept for every
version (re-choosing it per version would cost a KPSS test each; in the simulation the
order a version would get differs in a fifth of the sessions, and the rate stays within
alpha). Ties count against the observed alignment; of two perfect fits the one with fewer
lags is the more extreme.

The paper's own F is no series of bytes but the share of the session's bytes that went over
TCP so far, T(t) / (T(t) + Q(t)) (`cumulative_share`): after a fallback it climbs for the
rest of the session. Its versions are made on the bytes, TCP's and QUIC's moved together
(`null_index` with `cycle`: QUIC's pre-fallback traffic goes on up to a later onset), and
the share recomputed for each, so every version has the observed share's shape; that reading
has its own calibration (tests/calibration/test_granger_share.py).

What one session can show is little, and the p says so. An effect L s after the fallback
is also "explained", with a shorter lag, by every version whose onset lies between the
fallback and the effect, so even a perfect effect has p >= L / (#versions + 1): in a 60 s
session (44 other onsets) 0.022 for L = 1, 0.044 for L = 2, 0.067 for L = 3, and Holm over
B and S doubles what must be reached. BIC rather than AIC because a wider lag window lets
more versions reach the same effect (a lag-1 driver in 120 s: AIC took 10 lags in one
session of three, and its p went from 1/120 to 7/120). F's bytes after the fallback vary
(segments arrive in bursts), which blurs the onset further. The calibration file prints the
resulting power beside the false-verdict rates.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Mapping

import numpy as np
from scipy import special
from scipy import stats as sps

CRITERIA = ("aic", "bic", "hqic")
MAX_SHIFTS = 199
NO_F_TEST = "no F-test at the chosen lag (the effect's own lags fit it exactly, or too few rows)"


@dataclass(frozen=True)
class GrangerResult:
    p_value: float  # the F-test's textbook p (NaN when not testable)
    lag: int | None
    f_stat: float
    reason: str | None  # why not testable


@dataclass(frozen=True)
class ShiftGrangerResult:
    p_value: float  # permutation p against the versions of F (NaN when not testable)
    lag: int | None  # the criterion's lag for the observed alignment
    f_stat: float  # the observed F statistic at that lag
    p_ftest: float  # the textbook p of that F (not calibrated for a session's shapes)
    shifts: int  # versions of the cause in the null: the smallest possible p is 1 / (shifts + 1)
    reason: str | None  # why not testable
    null: str = ""  # how the versions were made (`null_versions`)


def default_max_lag(n: int) -> int:
    """7 steps in a 60 s session at 1 s, at most 20."""
    return min(20, n // 8)


def session_seed(*series: np.ndarray) -> int:
    """A seed from the session's own numbers: the same session draws the same versions."""
    return zlib.crc32(b"".join(np.ascontiguousarray(s, dtype=float).tobytes() for s in series))


def _untestable(cause: np.ndarray, effect: np.ndarray, max_lag: int) -> str | None:
    n = len(cause)
    if n != len(effect):
        raise ValueError(f"cause has {n} samples, effect {len(effect)}")
    if np.ptp(cause) == 0 or np.ptp(effect) == 0:
        return "a series is constant"
    if max_lag < 1 or n < 10:
        return f"too short ({n} samples)"
    return None


def _reduction(y: np.ndarray, own: np.ndarray, causes: np.ndarray) -> tuple[float, np.ndarray]:
    """Residual sum of squares of y on `own` (T x q, the restricted regression) and how much
    adding each cause block (K x T x p) lowers it. Frisch-Waugh: y and every block are
    residualised on `own` with one projection, then each block's normal equations are solved,
    both by pseudo-inverse: `own` may be rank deficient (an effect flat over these rows), and a
    block that is all zero in these rows (a step moved outside them) must lower nothing."""
    k, t, p = causes.shape
    rhs = np.concatenate([y[:, None], causes.transpose(1, 0, 2).reshape(t, k * p)], axis=1)
    res = rhs - own @ (np.linalg.pinv(own) @ rhs)
    r = res[:, 0]
    z = res[:, 1:].reshape(t, k, p).transpose(1, 0, 2)
    gram = np.einsum("ktp,ktq->kpq", z, z)
    h = np.einsum("ktp,t->kp", z, r)
    coef = np.einsum("kpq,kq->kp", np.linalg.pinv(gram, rcond=1e-12, hermitian=True), h)
    rss = float(r @ r)
    return rss, np.clip(np.einsum("kp,kp->k", coef, h), 0.0, rss)


def _design(effect: np.ndarray, causes: np.ndarray, lag: int, start: int):
    """Rows start..n-1: the effect, the restricted regressors (1, effect lags 1..lag) and
    the cause lag blocks (K x T x lag)."""
    n = len(effect)
    idx = np.arange(start, n)[:, None] - np.arange(1, lag + 1)[None, :]
    own = np.column_stack([np.ones(n - start), effect[idx]])
    return effect[start:], own, causes[:, idx]


def _penalty(criterion: str, k: np.ndarray, t: int) -> np.ndarray:
    if criterion == "aic":
        return 2.0 * k
    if criterion == "bic":
        return np.log(t) * k
    if criterion == "hqic":
        return 2.0 * np.log(np.log(t)) * k
    raise ValueError(f"criterion {criterion!r}: one of {', '.join(CRITERIA)}")


def _granger_rows(causes: np.ndarray, effect: np.ndarray, max_lag: int, criterion: str):
    """For each row of `causes` (K x n, one cause series each) against one effect: the
    criterion's lag, the F statistic there and its log textbook p (-inf for a perfect fit;
    NaN when the effect's own lags already fit it exactly or no residual degree is left)."""
    n = len(effect)
    k = len(causes)
    lags = np.arange(1, max_lag + 1)
    # the criterion on a common sample, so the lags compete on the same rows
    t_common = n - max_lag
    score = np.empty((k, max_lag))
    for j, lag in enumerate(lags):
        rss, drop = _reduction(*_design(effect, causes, lag, max_lag))
        with np.errstate(divide="ignore"):
            score[:, j] = t_common * np.log((rss - drop) / t_common)
        score[:, j] += _penalty(criterion, np.array(2 * lag + 1), t_common)
    chosen = lags[np.argmin(score, axis=1)]
    f_stat = np.full(k, np.nan)
    log_p = np.full(k, np.nan)
    for lag in np.unique(chosen):
        rows = np.flatnonzero(chosen == lag)
        rss, drop = _reduction(*_design(effect, causes[rows], int(lag), int(lag)))
        df = (n - lag) - (2 * lag + 1)
        if df < 1 or rss <= 0:
            continue
        rss_u = rss - drop
        with np.errstate(divide="ignore", invalid="ignore"):
            f = np.where(rss_u > rss * 1e-12, (drop / lag) / (rss_u / df), np.inf)
        f_stat[rows] = f
        log_p[rows] = _log_sf(f, int(lag), df)
    return chosen, f_stat, log_p


def _log_sf(f: np.ndarray, dfn: int, dfd: int) -> np.ndarray:
    """log P(F(dfn, dfd) >= f): the special function where it has not underflowed (scipy's
    distribution object costs a millisecond a call), its log-survival beyond that."""
    with np.errstate(divide="ignore"):
        out = np.log(special.fdtrc(dfn, dfd, f))
    tiny = np.isneginf(out) & np.isfinite(f)
    if tiny.any():
        out[tiny] = sps.f.logsf(f[tiny], dfn, dfd)
    return out


def granger_test(
    cause: np.ndarray, effect: np.ndarray, *, max_lag: int | None = None, criterion: str = "bic"
) -> GrangerResult:
    """H0: `cause` does not Granger-cause `effect`; the textbook F-test's p at the
    criterion's lag (see the module's docstring for why a session's verdict does not use it)."""
    cause = np.asarray(cause, dtype=float)
    effect = np.asarray(effect, dtype=float)
    max_lag = default_max_lag(len(cause)) if max_lag is None else max_lag
    why = _untestable(cause, effect, max_lag)
    if why:
        return GrangerResult(float("nan"), None, float("nan"), why)
    lag, f, log_p = _granger_rows(cause[None, :], effect, max_lag, criterion)
    if np.isnan(f[0]):
        return GrangerResult(float("nan"), None, float("nan"), NO_F_TEST)
    return GrangerResult(float(np.exp(log_p[0])), int(lag[0]), float(f[0]), None)


def onset_of(cause: np.ndarray) -> int:
    """The fallback's onset in a series of bytes: the first step at which it reaches a tenth
    of its median non-zero value (a losing race's handshake, a few kB at the start, is not
    the fallback that follows it). 0 when that is the first step, when the cause is 0
    throughout, or when it is no series of bytes (a negative value)."""
    active = cause[cause > 0]
    if not len(active) or (cause < 0).any():
        return 0
    return int(np.argmax(cause >= 0.1 * np.median(active)))


def null_index(
    cause: np.ndarray, *, order: int, max_lag: int, max_shifts: int = MAX_SHIFTS, seed: int = 0, cycle: bool = False
) -> tuple[np.ndarray, str, str | None]:
    """Where each step of each version of the cause comes from (`null_versions`): row 0 the
    observed order, -1 a step that is 0 in that version; how they were made; and why there
    are none. `cycle`: a step between the observed onset and a later one repeats what came
    before the onset (steps 1.., the session's start left out) instead of being 0, for
    series that are not 0 before the fallback (QUIC's bytes)."""
    n = len(cause)
    tau = onset_of(cause)
    identity = np.arange(n)[None, :]
    if tau > 0:
        kind = "fallback onset moved"
        if not max_lag + order <= tau <= n - 1 - max_lag:
            return (
                identity,
                kind,
                (
                    f"the fallback at step {tau} is within {max_lag + order} steps of the "
                    f"start or {max_lag} of the end: no room for its lag window"
                ),
            )
        onsets = np.arange(max_lag + order, n - max_lag)
        onsets = onsets[onsets != tau]
    else:
        kind = "circular shift"
        onsets = np.arange(1, n)
    if len(onsets) > max_shifts:
        onsets = np.sort(np.random.default_rng(seed).choice(onsets, size=max_shifts, replace=False))
    t = identity
    u = onsets[:, None]
    if tau > 0:
        before = np.where(t < tau, t, (1 + (t - 1) % (tau - 1)) if cycle and tau > 1 else -1)
        rows = np.where(t >= u, tau + (t - u) % (n - tau), before)
    else:
        rows = (t - u) % n
    return np.vstack([identity, rows.reshape(len(onsets), n)]), kind, None


def take(series: np.ndarray, index: np.ndarray) -> np.ndarray:
    """The versions of `series` that `null_index` describes (-1: 0)."""
    return np.where(index >= 0, series[np.maximum(index, 0)], 0.0)


def null_versions(
    cause: np.ndarray, *, order: int, max_lag: int, max_shifts: int = MAX_SHIFTS, seed: int = 0
) -> tuple[np.ndarray, str, str | None]:
    """The cause as observed (row 0) and as it would be had its pattern come at another
    admissible time (the other rows), each with the observed one's shape; how they were
    made; and why there are none. A fallback during the session (`onset_of` t > 0) moves
    its onset to every u with max_lag + order <= u <= n - 1 - max_lag (the lag window fits
    after it once differenced): what came before is kept (cut, or followed by zeros), what
    follows is kept in order (repeated from its start when the onset moves earlier); an
    onset outside that range has no such null. A cause active from the first step is
    rotated circularly by every offset. More than `max_shifts` versions: that many, drawn
    without replacement with `seed`."""
    index, kind, why = null_index(cause, order=order, max_lag=max_lag, max_shifts=max_shifts, seed=seed)
    return take(cause, index), kind, why


def cumulative_share(tcp: np.ndarray, quic: np.ndarray) -> np.ndarray:
    """Chaudhary's F(t) = T(t) / (T(t) + Q(t)), T and Q the bytes over TCP and QUIC up to
    t, per row of (versions x steps) arrays; 0 before the first byte."""
    t = np.cumsum(tcp, axis=-1)
    both = t + np.cumsum(quic, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(both > 0, t / np.where(both > 0, both, 1.0), 0.0)


def _as_extreme(lag: np.ndarray, log_p: np.ndarray) -> int:
    """How many versions (rows 1..) are at least as extreme as the observed (row 0): a
    smaller textbook p, or the same (two perfect fits) with no more lags. A version whose
    test could not run is not."""
    observed = log_p[0]
    others = np.where(np.isnan(log_p[1:]), np.inf, log_p[1:])  # nan_to_num would make -inf finite
    tol = 1e-9 * max(1.0, abs(observed)) if np.isfinite(observed) else 0.0
    with np.errstate(invalid="ignore"):  # -inf - -inf
        same = (others == observed) | (np.abs(others - observed) <= tol)
    return int(np.sum((others < observed - tol) | (same & (lag[1:] <= lag[0]))))


def granger_shift_tests(
    cause: np.ndarray,
    effects: Mapping[str, np.ndarray],
    *,
    order: int = 0,
    max_lag: int | None = None,
    criterion: str = "bic",
    max_shifts: int = MAX_SHIFTS,
    seed: int | None = None,
    quic: np.ndarray | None = None,
) -> dict[str, ShiftGrangerResult]:
    """Per effect, H0: the effect follows the cause's pattern no more closely where it was
    observed than at another admissible time (`null_versions`, the same versions for every
    effect). All series as measured; `order` differences (the stationarity rule's, decided
    on the observed series) are applied to every version alike, the lag is chosen anew for
    each. p = (1 + #versions at least as extreme as the observed, `_as_extreme`) / (1 +
    #versions). `seed` (default: from the series) draws the versions when there are more
    than `max_shifts`. `quic` (QUIC's bytes per step, with `cause` TCP's): the cause tested
    is the paper's F = T / (T + Q) (`cumulative_share`) of each version, TCP's and QUIC's
    bytes moved together (QUIC's pre-fallback traffic continued up to a later onset), the
    onset still read from TCP's bytes."""
    cause = np.asarray(cause, dtype=float)
    series = {name: np.asarray(e, dtype=float) for name, e in effects.items()}
    for name, e in series.items():
        if len(e) != len(cause):
            raise ValueError(f"cause has {len(cause)} samples, {name} {len(e)}")
    nan = float("nan")
    n = len(cause) - order
    max_lag = default_max_lag(n) if max_lag is None else max_lag
    index, kind, no_null = null_index(
        cause,
        order=order,
        max_lag=max_lag,
        max_shifts=max_shifts,
        seed=session_seed(cause, *series.values()) if seed is None else seed,
        cycle=quic is not None,
    )
    if quic is None:
        versions = take(cause, index)
    else:
        quic = np.asarray(quic, dtype=float)
        if len(quic) != len(cause):
            raise ValueError(f"cause has {len(cause)} samples, quic {len(quic)}")
        versions = cumulative_share(take(cause, index), take(quic, index))
    causes = np.diff(versions, n=order, axis=1) if order else versions
    shifts = len(versions) - 1
    out = {}
    for name, effect in series.items():
        e = np.diff(effect, n=order) if order else effect
        why = _untestable(causes[0], e, max_lag) or no_null
        if not why and not shifts:
            why = f"too short for the shift null ({len(cause)} samples, lag window {max_lag})"
        if why:
            out[name] = ShiftGrangerResult(nan, None, nan, nan, 0, why, kind)
            continue
        lag, f, log_p = _granger_rows(causes, e, max_lag, criterion)
        if np.isnan(log_p[0]):
            out[name] = ShiftGrangerResult(nan, None, nan, nan, shifts, NO_F_TEST, kind)
            continue
        out[name] = ShiftGrangerResult(
            (1 + _as_extreme(lag, log_p)) / (1 + shifts),
            int(lag[0]),
            float(f[0]),
            float(np.exp(log_p[0])),
            shifts,
            None,
            kind,
        )
    return out


def granger_shift_test(cause: np.ndarray, effect: np.ndarray, **options) -> ShiftGrangerResult:
    """`granger_shift_tests` for one effect."""
    return granger_shift_tests(cause, {"effect": effect}, **options)["effect"]
