"""When an experiment was active: its runs', link checks' and start's timestamps grouped
into sessions (an experiment resumed hours later is two), and the wall time they cover."""

from __future__ import annotations

from datetime import datetime

import pandas as pd

from ...core.store import Store

# two timestamps of one experiment further apart than this belong to two sessions; the
# longest single run of a shipped scenario (a 90 s video session) is far below it
SESSION_GAP_S = 20 * 60


def sessions(stamps: list[datetime]) -> list[tuple[datetime, datetime]]:
    """(first, last) of each session of activity: consecutive stamps closer than
    SESSION_GAP_S are one session."""
    out: list[tuple[datetime, datetime]] = []
    for t in sorted(stamps):
        if out and (t - out[-1][1]).total_seconds() <= SESSION_GAP_S:
            out[-1] = (out[-1][0], t)
        else:
            out.append((t, t))
    return out


def active_seconds(stamps: list[datetime]) -> float:
    """Wall time covered by the sessions of activity, each from its first stamp to its last."""
    return sum((b - a).total_seconds() for a, b in sessions(stamps))


def stamps(store: Store) -> list[datetime]:
    runs = store.runs_frame()
    out = [t for col in ("started_at", "recorded_at") if col in runs for t in pd.to_datetime(runs[col]).dropna()]
    checks = store.link_checks_frame()
    if "checked_at" in checks:
        out += list(pd.to_datetime(checks["checked_at"]).dropna())
    exp = store.experiment() or {}
    if exp.get("started_at") is not None:
        out.append(pd.to_datetime(exp["started_at"]))
    return [t.to_pydatetime() for t in out]
