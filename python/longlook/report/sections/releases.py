"""Report section: a release sweep's history (analyses/releases): per cell, the metric across
releases with each release's 95% interval, the change points E-Divisive found, and at each
the state-machine items that appeared, vanished or changed frequency between the releases on
either side."""

from __future__ import annotations

from html import escape

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ...analyses.releases import ReleaseHistory, ReleaseSeries, release_history  # noqa: E402
from ...render.figures import to_svg  # noqa: E402
from ...render.html import Section  # noqa: E402
from ...render.palette import MUTED, SERIES  # noqa: E402


def _figure(h: ReleaseHistory, s: ReleaseSeries, i: int) -> str:
    fig, ax = plt.subplots(figsize=(1.5 + 0.45 * len(s.points), 2.8))
    x = np.arange(len(s.points))
    means = np.array([p.mean for p in s.points])
    low = np.array([p.low for p in s.points])
    high = np.array([p.high for p in s.points])
    err = np.vstack([np.nan_to_num(means - low), np.nan_to_num(high - means)])
    ax.errorbar(x, means, yerr=err, marker="o", ms=3.5, lw=1.2, capsize=2, color=SERIES[0])
    for cp in s.change_points:
        ax.axvline(cp.index - 0.5, color=SERIES[1], ls="--", lw=1.0)
        ax.annotate(
            f"{cp.change_pct:+.0f}%",
            (cp.index - 0.5, 1.0),
            xycoords=("data", "axes fraction"),
            fontsize=7,
            color=SERIES[1],
            ha="left",
            va="top",
        )
    ax.set_xticks(x)
    ax.set_xticklabels([p.version for p in s.points], fontsize=6, rotation=45, ha="right")
    ax.set_ylabel(f"{h.metric} ({h.unit})", fontsize=7)
    ax.tick_params(labelsize=7)
    ax.grid(axis="y", color=MUTED, alpha=0.3, lw=0.5)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    fig.tight_layout(pad=0.5)
    svg = to_svg(fig, f"releases-{i}")
    plt.close(fig)
    return svg


def change_item(before: str, after: str, size: str, diffs: list) -> str:
    """One change between two releases as a list item: its size (plain text) and what the
    state machine did differently (`states diff`, analyses.states.diff.StateDiff per protocol)."""
    moved, unmeasured = [], []
    for d in diffs:
        if not d.measured:
            unmeasured.append(f"{d.protocol} {d.not_measured_text()}")
            continue
        rows = d.rows[d.rows["status"] != "same"]
        moved += [f"{escape(r.item)} {escape(r.status)} ({d.protocol})" for r in rows.itertuples()]
    if not diffs:
        what = "states not measured: no run on either side has a state log"
    elif moved or len(unmeasured) < len(diffs):
        what = "; ".join(moved[:8]) if moved else "no state-machine item changed significantly"
    else:
        what = ""
    what = "; ".join(x for x in (what, *(escape(u) for u in unmeasured)) if x)
    return f"<li>{escape(before)} → {escape(after)}: {escape(size)}; {what}</li>"


def _diffs(s: ReleaseSeries) -> str:
    items = [
        change_item(
            s.points[cp.index - 1].version,
            s.points[cp.index].version,
            f"{cp.change_pct:+.1f}% (p {cp.p:.3g})",
            s.diffs.get(cp.index, []),
        )
        for cp in s.change_points
    ]
    return f"<ul>{''.join(items)}</ul>" if items else "<p>No change point.</p>"


def section(store, analysis) -> Section | None:
    h = release_history(store.directory)
    if h is None or not h.series:
        return None
    parts = [
        f"<p class='note'>{escape(h.limit())}. Each point is a release's mean over its counted "
        f"runs with a 95% t-interval; a dashed line marks where E-Divisive starts a new segment; "
        f"below each figure, the state-machine diff (<code>states diff</code>) between the releases on "
        f"either side of each change point.</p>"
    ]
    for i, s in enumerate(h.series):
        parts.append(f"<h3>{escape(s.family)}: {escape(s.cell_id)}</h3>{_figure(h, s, i)}{_diffs(s)}")
    return Section(id="releases", title="Releases", html="".join(parts))
